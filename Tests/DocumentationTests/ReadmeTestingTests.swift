import ActorQueue
import ActorQueueTesting
import Testing

// README's test of code with a deadline, as a user's test target holds it (`.ci/run` also runs it
// in the consumer package README's manifest describes).
// snippet: readme-testing
@Test func aReportThatWaitsTooLongFails() async throws {
  let clock = ManualClock()
  let queue = ActorQueue(maxConcurrentOperationCount: 1, clock: clock.queueClock)
  queue.isSuspended = true
  let report = queue.addOperation(traits: [.deadline(in: .seconds(30))]) { "report" }
  clock.advance(by: .seconds(30))  // fires before it returns: no sleep, no margin
  #expect(report.state == .failed)
  await #expect(throws: OperationTimeoutError.self) { try await report.value }
}
// end snippet

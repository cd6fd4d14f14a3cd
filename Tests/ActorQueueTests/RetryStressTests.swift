import ActorQueue
import TestSupport
import Testing

extension Searching {
  /// Retries on the system clock, many at once beside other timers: every backoff's timer fires.
  @Suite("Retry under load", .timeLimit(.minutes(hangLimitMinutes)))
  struct RetryStressTests {
    private struct Flaky: Error {}

    @Test(
      "Retried operations on four queues, with deadlines and timeouts beside them, all end", arguments: 0..<2)
    func manyRetriesEnd(round: Int) async throws {
      let queues = (0..<4).map { ActorQueue(name: "q\($0)", maxConcurrentOperationCount: 1 + $0) }
      let asked = RetryPolicy.attempts(
        4, backoff: .exponential(initial: .milliseconds(1), maximum: .milliseconds(8)),
        retryIf: { $0 is Flaky }
      )
      let alone = RetryPolicy.attempts(
        4, backoff: .exponential(initial: .milliseconds(1), maximum: .milliseconds(8)))
      var operations: [QueueOperation<Int>] = []
      for number in 0..<200 {
        let queue = queues[number % 4]
        let policy = number.isMultiple(of: 2) ? asked : alone
        let traits: [OperationTrait] =
          number % 3 == 0
          ? [.retry(policy), .deadline(in: .seconds(3_600))] : [.retry(policy), .timeout(.seconds(3_600))]
        operations.append(
          queue.addOperation(traits: traits) { () -> Int in
            let attempt = ActorQueue.currentAttempt?.number ?? 0
            if attempt < 1 + number % 3 { throw Flaky() }
            return attempt
          })
      }
      // No time bound here: a lost timer would hang, and the suite's time limit reports it.
      for (number, operation) in operations.enumerated() {
        #expect(try await operation.value == 1 + number % 3, "op \(number), round \(round)")
      }
    }
  }
}

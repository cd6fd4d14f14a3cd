import ActorQueueTesting
import TestSupport
import Testing

@testable import ActorQueue

private struct Flaky: Error {}

/// `waitReport()`: why each operation that is not running waits (issue 30, item 2), on a manual
/// clock and gates: no test sleeps.
@Suite("Wait report", .timeLimit(.minutes(hangLimitMinutes)))
struct WaitReportTests {
  @Test("A slot, a dependency on another queue; executing operations are left out")
  func slotAndDependency() async throws {
    let clock = ManualClock()
    let serial = ActorQueue(name: "serial", maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let other = ActorQueue(name: "other", clock: clock.queueClock)
    let gate = TestGate()
    let running = serial.addOperation(name: "running") { await gate.wait() }
    let next = serial.addOperation(name: "next") {}
    let dependent = QueueOperation(name: "dependent") {}
    try dependent.addDependency(running)
    try other.addOperation(dependent)
    await clock.settle()
    #expect(running.state == .executing)
    #expect(serial.waitReport().map(\.id) == [next.id])
    #expect(serial.waitReport().first?.waitingFor == [.slot])
    #expect(serial.waitReport().first?.state == .ready)
    #expect(other.waitReport().first?.waitingFor == [.dependency(running.id)])
    #expect(other.waitReport().first?.state == .pending)
    #expect("\(other.waitReport()[0])" == "\(dependent.id) \"dependent\" pending: dependency \(running.id)")
    gate.open()
    await serial.waitUntilAllOperationsAreFinished()
    await other.waitUntilAllOperationsAreFinished()
    #expect(serial.waitReport().isEmpty)
    #expect(other.waitReport().isEmpty)
  }

  @Test("A suspended queue, a held operation and a paused body")
  func suspendedAndPaused() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "pausing", maxConcurrentOperationCount: 2, clock: clock.queueClock)
    let atCheckpoint = TestGate()
    let toCheckpoint = TestGate()
    queue.isSuspended = true
    let held = queue.addOperation(name: "held") {}
    held.pause()
    queue.isSuspended = false
    let body = queue.addOperation(name: "body") {
      await toCheckpoint.wait()
      try await ActorQueue.checkpoint()
      await atCheckpoint.wait()
    }
    await clock.settle()
    #expect(held.state == .pending)
    #expect(queue.waitReport().map(\.waitingFor) == [[.paused]])
    body.pause()
    toCheckpoint.open()
    await clock.settle()
    #expect(body.state == .paused)
    #expect(queue.waitReport().map(\.waitingFor) == [[.paused], [.paused]])
    queue.isSuspended = true
    let added = queue.addOperation(name: "added") {}
    #expect(
      queue.waitReport().map(\.waitingFor) == [[.paused, .suspended], [.paused, .suspended], [.suspended]])
    queue.isSuspended = false
    held.resume()
    body.resume()
    await clock.settle()
    #expect(body.state == .executing)
    #expect(queue.waitReport().isEmpty)
    atCheckpoint.open()
    _ = await added.result
    try await body.value
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test("A retry's instant and a deadline, on the queue's clock")
  func retryAndDeadline() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "timed", clock: clock.queueClock)
    let policy = RetryPolicy.attempts(2, backoff: .constant(.milliseconds(100)), jitter: .none)
    let deadline = clock.now + .seconds(10)
    let operation = queue.addOperation(name: "flaky", traits: [.retry(policy), .deadline(deadline)]) {
      if ActorQueue.currentAttempt?.number == 1 { throw Flaky() }
    }
    await clock.settle()
    let report = try #require(queue.waitReport().first)
    #expect(report.id == operation.id)
    #expect(report.state == .pending)
    #expect(report.waitingFor == [.retry(at: clock.now + .milliseconds(100)), .deadline(deadline)])
    #expect(report.waitingFor.map(\.kind) == [.retry, .deadline])
    #expect(report.waitingFor[0].instant == clock.now + .milliseconds(100))
    #expect(report.waitingFor[1].operation == nil)
    clock.advance(by: .milliseconds(100))
    try await operation.value
    #expect(queue.waitReport().isEmpty)
  }

  @Test("A waiting operation with a deadline says when it fails")
  func waitingWithADeadline() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "deadline", clock: clock.queueClock)
    queue.isSuspended = true
    let operation = queue.addOperation(name: "late", traits: [.deadline(in: .seconds(5))]) {}
    #expect(
      queue.waitReport().first?.waitingFor == [.suspended, .deadline(clock.now + .seconds(5))])
    #expect(
      queue.waitReport().first?.description
        == "\(operation.id) \"late\" ready: suspended, deadline at 5.0s (\(clock.queueClock))")
    clock.advance(by: .seconds(5))
    _ = await operation.result
    #expect(operation.state == .failed)
    #expect(queue.waitReport().isEmpty)
  }
}

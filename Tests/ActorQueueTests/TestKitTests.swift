import ActorQueue
import ActorQueueTesting
import TestSupport
import Testing

/// The `ActorQueueTesting` kit's own behaviours (beyond.md §1.8 d).
@Suite("Test kit: ManualClock.settle, TestGate, QueueRecorder")
struct TestKitTests {
  @Test("settle() returns once every executing body waits at a gate and nothing else may start")
  func settleReturnsOnGatedOperations() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "gated", maxConcurrentOperationCount: 2, clock: clock.queueClock)
    let gates = (0..<3).map { _ in TestGate() }
    let operations = gates.enumerated().map { number, gate in
      queue.addOperation(name: "op\(number)") {
        await gate.wait()
        return number
      }
    }
    await clock.settle()
    #expect(operations.map(\.state) == [.executing, .executing, .ready])
    gates[0].open()
    await clock.settle()
    #expect(operations.map(\.state) == [.finished, .executing, .executing])
    for gate in gates { gate.open() }
    await clock.settle()
    #expect(operations.allSatisfy { $0.state == .finished })
  }

  @Test("settle() records an issue naming the operation, at the caller's line, instead of hanging")
  func settleRecordsAnIssueInsteadOfHanging() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "stuck", clock: clock.queueClock)
    let started = TestGate()
    let elsewhere = queue.addOperation(name: "awaits elsewhere") {
      started.open()
      await untilCancelled()  // not a kit primitive: settle cannot know it is still
    }
    await started.wait()
    let line = #_sourceLocation.line + 2
    await withKnownIssue {
      await clock.settle(timeout: .milliseconds(50))
    } matching: { issue in
      issue.sourceLocation?.line == line && "\(issue)".contains("awaits elsewhere")
    }
    elsewhere.cancel()
    await elsewhere.waitUntilFinished()
  }

  @Test("Each clock settles its own queues: another clock's moving work does not hold it up")
  func clocksSettleIndependently() async {
    let busy = ManualClock()
    let quiet = ManualClock()
    let busyQueue = ActorQueue(clock: busy.queueClock)
    let started = TestGate()
    let moving = busyQueue.addOperation {
      started.open()
      await untilCancelled()
    }
    await started.wait()
    let quietQueue = ActorQueue(clock: quiet.queueClock)
    let gate = TestGate()
    let parked = quietQueue.addOperation { await gate.wait() }
    await quiet.settle(timeout: .seconds(5))
    #expect(parked.state == .executing)
    moving.cancel()
    gate.open()
    await quietQueue.waitUntilAllOperationsAreFinished()
    await busyQueue.waitUntilAllOperationsAreFinished()
  }

  @Test("30 gated operations at limit 3: the recorder sees at most 3 executing, in start order")
  func recorderSeesTheLimit() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "limited", maxConcurrentOperationCount: 3, clock: clock.queueClock)
    let recorder = QueueRecorder(queue)
    let gate = TestGate()
    let operations = (0..<30).map { number in queue.addOperation(name: "op\(number)") { await gate.wait() } }
    await clock.settle()
    #expect(recorder.maxConcurrency(in: queue) == 3)
    gate.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.maxConcurrency(in: queue) == 3)
    #expect(recorder.startOrder(in: queue) == (0..<30).map { "op\($0)" })
    #expect(recorder.states(of: operations[29]) == [.ready, .executing, .finished])
  }

  @Test("A deadline under test: settle, advance, and read the recorded states")
  func deadlineUnderTest() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "deadline", maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let recorder = QueueRecorder(queue)
    let gate = TestGate()
    queue.addOperation(name: "holder") { await gate.wait() }
    let waiting = queue.addOperation(name: "waiting", traits: [.deadline(in: .seconds(5))]) {}
    await clock.settle()
    clock.advance(by: .seconds(5))
    #expect(recorder.states(of: waiting) == [.ready, .failed])
    let details = recorder.events.filter { if case .detail = $0.kind { true } else { false } }
    #expect(details.count == 1)
    gate.open()
    await queue.waitUntilAllOperationsAreFinished()
  }
}

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

  @Test(
    "A body sleeping on the manual clock is still for settle() and wakes when advance() passes its instant")
  func sleepOnTheManualClock() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "sleepy", clock: clock.queueClock)
    let woke = TestGate()
    let sleeper = queue.addOperation(name: "sleeper") { () throws -> QueueDeadline in
      try await clock.sleep(for: .seconds(2))
      woke.open()
      return clock.now
    }
    await clock.settle()  // returns: sleeping on the kit's clock counts as still
    #expect(sleeper.state == .executing)
    clock.advance(by: .seconds(1))
    await clock.settle()
    #expect(sleeper.state == .executing && !woke.isOpen)
    clock.advance(by: .seconds(1))
    #expect(try await sleeper.value >= clock.queueClock.deadline(in: .zero) - .seconds(0))
    #expect(woke.isOpen)
    // A deadline already passed: at once, without suspending.
    try await clock.sleep(until: clock.now - .seconds(1))
  }

  @Test("One advance past a sleeper's instant and two deadlines wakes the sleeper and fires both")
  func sleepersWakeInInstantOrder() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "ordered", maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let order = Recorder<String>()
    let holder = TestGate()
    queue.addOperation(name: "holder") { await holder.wait() }
    let early = queue.addOperation(name: "early", traits: [.deadline(in: .seconds(1))]) {}
    early.onCompletion { _ in order.append("deadline 1 s") }
    let late = queue.addOperation(name: "late", traits: [.deadline(in: .seconds(3))]) {}
    late.onCompletion { _ in order.append("deadline 3 s") }
    let sleeping = Task {
      try await clock.sleep(until: clock.queueClock.deadline(in: .seconds(2)))
      order.append("sleeper at \(clock.now)")
    }
    #expect(await eventually { clock.sleeperCount == 1 })
    clock.advance(by: .seconds(5))
    try await sleeping.value
    // The 1 s deadline fired before the clock stopped at the sleeper's 2 s.
    #expect(order.snapshot.first == "deadline 1 s")
    #expect(order.snapshot.contains("deadline 3 s") && order.snapshot.count == 3)
    #expect(clock.sleeperCount == 0)
    holder.open()
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test("Cancelling a body that sleeps on the manual clock throws CancellationError at once")
  func cancelledSleep() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "cancel", clock: clock.queueClock)
    let sleeper = queue.addOperation(name: "sleeper") { try await clock.sleep(for: .seconds(60)) }
    await clock.settle()
    sleeper.cancel()
    await sleeper.waitUntilFinished()
    #expect(sleeper.state == .cancelled)
    #expect(clock.sleeperCount == 0)
  }

  @Test("A scripted body fails twice, then returns, across a retry's attempts")
  func scriptedBodyAcrossRetries() async throws {
    struct Offline: Error {}
    let clock = ManualClock()
    let queue = ActorQueue(name: "scripted", clock: clock.queueClock)
    let fetch = ScriptedBody<Int>(.failing(Offline()), .failing(Offline()), .returning(42))
    let operation = queue.addOperation(
      name: "fetch", traits: [.retry(.attempts(3, backoff: .constant(.seconds(1)), jitter: .none))],
      fetch.body)
    await clock.settle()
    #expect(fetch.runs == 1 && operation.state == .pending)
    clock.advance(by: .seconds(1))
    await clock.settle()
    clock.advance(by: .seconds(1))
    #expect(try await operation.value == 42)
    #expect(fetch.runs == 3)
    expectRetried(operation, times: 2)
    await expectFinished(operation)
    // Used up: each later run ends as the last did.
    #expect(try await fetch() == 42)
  }

  @Test("A scripted body waits at its gate, sleeps, passes a checkpoint; .hanging ends only when cancelled")
  func scriptedBodyWaitsAndHangs() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "steps", clock: clock.queueClock)
    let gate = TestGate()
    let upload = ScriptedBody<String>(
      .waiting(at: gate), .sleeping(for: .seconds(2), on: clock), .checkpoint, .returning("done"))
    let uploading = queue.addOperation(name: "upload", upload.body)
    await clock.settle()
    gate.open()
    await clock.settle()
    #expect(uploading.state == .executing)
    clock.advance(by: .seconds(2))
    #expect(try await uploading.value == "done")

    let never = ScriptedBody<Int>(.hanging)
    let hanging = queue.addOperation(name: "hangs", never.body)
    await clock.settle()  // hanging counts as still
    #expect(hanging.state == .executing)
    hanging.cancel()
    await hanging.waitUntilFinished()
    #expect(hanging.state == .cancelled)
  }

  @Test("Each helper reports a failure at its caller's source location")
  func helpersReportTheCallersLocation() async {
    struct Broken: Error {}
    let queue = ActorQueue(name: "helpers", maxConcurrentOperationCount: 2)
    let recorder = QueueRecorder(queue)
    let failing = queue.addOperation(name: "failing") { () throws -> Int in throw Broken() }
    await failing.waitUntilFinished()
    let line1 = #_sourceLocation.line + 2
    await withKnownIssue {
      await expectFinished(failing)
    } matching: { issue in
      issue.sourceLocation?.line == line1 && "\(issue)".contains("\"failing\"")
        && "\(issue)".contains("failed")
    }
    let line2 = #_sourceLocation.line + 2
    withKnownIssue {
      expectRetried(failing, times: 1)
    } matching: { issue in
      issue.sourceLocation?.line == line2 && "\(issue)".contains("retried 0 times")
    }
    let gate = TestGate()
    let both = (0..<2).map { _ in queue.addOperation { await gate.wait() } }
    #expect(await eventually { recorder.maxConcurrency(in: queue) == 2 })
    let line3 = #_sourceLocation.line + 2
    withKnownIssue {
      expectNeverMoreThan(1, concurrentIn: queue, recorder)
    } matching: { issue in
      issue.sourceLocation?.line == line3 && "\(issue)".contains("2 operations executing")
    }
    expectNeverMoreThan(2, concurrentIn: queue, recorder)  // no issue
    gate.open()
    for operation in both { await expectFinished(operation) }
    let pending = QueueOperation(name: "held") {}
    pending.pause()  // held before it is added: it waits until resumed
    try? queue.addOperation(pending)
    let line4 = #_sourceLocation.line + 2
    await withKnownIssue {
      await expectFinished(pending, timeout: .milliseconds(20))
    } matching: { issue in
      issue.sourceLocation?.line == line4 && "\(issue)".contains("did not end")
    }
    pending.cancel()
  }

  @Test(
    "The recorder counts holders of a key per domain: one at a time in a shared domain, one per queue in each own"
  )
  func recorderCountsKeyHolders() async {
    let first = ActorQueue(name: "first")
    let second = ActorQueue(name: "second")
    let recorder = QueueRecorder(first, second)
    let shared = ExclusivityDomain(name: "db")
    let gate = TestGate()
    var operations: [AnyQueueOperation] = []
    for queue in [first, second] {
      for _ in 0..<3 {
        operations.append(
          queue.addOperation(traits: [.exclusive("kit-db", in: shared)]) { await gate.wait() })
        // The same key name in each queue's own domain: another lock.
        operations.append(queue.addOperation(traits: [.exclusive("kit-own")]) { await gate.wait() })
      }
    }
    // One "kit-db" holder across both queues, and one "kit-own" holder in each queue's domain:
    // three executing, yet at most one holder per key and domain.
    let added = operations
    #expect(await eventually { added.filter { $0.state == .executing }.count == 3 })
    #expect(recorder.maxConcurrency(holding: "kit-own") == 1)
    #expect(recorder.maxConcurrency(holding: "kit-db") == 1)
    gate.open()
    for operation in operations { await operation.waitUntilFinished() }
    #expect(recorder.maxConcurrency(holding: "kit-db") == 1)
    #expect(recorder.maxConcurrency(holding: "kit-own") == 1)
    #expect(recorder.maxConcurrency(holding: "kit-unused") == 0)
  }
}

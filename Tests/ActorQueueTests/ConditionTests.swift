import ActorQueueTesting
import TestSupport
import Testing

@testable import ActorQueue

private struct Offline: Error, Equatable {}

/// A condition that answers from a script, one answer per evaluation (the last one repeats), and
/// counts its evaluations.
private final class Scripted: OperationCondition, Sendable {
  let name: String
  private let answers: LockedValue<[ConditionResult]>
  private let count = LockedValue(0)
  private let produces: AnyQueueOperation?

  init(_ name: String, _ answers: [ConditionResult], produces: AnyQueueOperation? = nil) {
    self.name = name
    self.answers = LockedValue(answers)
    self.produces = produces
  }

  var evaluations: Int { count.withLock { $0 } }

  func dependency(for operation: AnyQueueOperation) -> AnyQueueOperation? { produces }

  func evaluate(for operation: AnyQueueOperation) async -> ConditionResult {
    count.withLock { $0 += 1 }
    return answers.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
  }
}

/// The error `operation` ended with, if it failed or was cancelled.
private func failure<Success>(of operation: QueueOperation<Success>) async -> (any Error)? {
  if case .failure(let error) = await operation.result { return error }
  return nil
}

/// Readiness conditions (beyond.md §1.3 d), on manual clocks and gates: no test sleeps.
@Suite("Readiness conditions", .timeLimit(.minutes(hangLimitMinutes)))
struct ConditionTests {
  @Test("100 submissions on one key, each with \"counter == 0\": the body runs once, the others skip")
  func checkThenStartCannotRace() async {
    let queue = ActorQueue(name: "race", maxConcurrentOperationCount: -1)
    let counter = LockedValue(0)
    let operations = (0..<100).map { number in
      queue.addOperation(
        name: "op\(number)",
        traits: [
          .exclusive("counter"),
          .condition("counter == 0") { _ in
            let value = counter.withLock { $0 }
            await Task.yield()
            return value == 0 ? .satisfied : .skip
          },
        ]
      ) {
        let before = counter.withLock { $0 }
        await Task.yield()
        counter.withLock { $0 = before + 1 }
      }
    }
    await queue.waitUntilAllOperationsAreFinished()
    #expect(counter.withLock { $0 } == 1)
    #expect(operations.filter { $0.state == .finished }.count == 1)
    #expect(operations.filter { $0.state == .cancelled }.count == 99)
  }

  @Test("failed(e): ConditionFailedError(name, e), the body never runs, a .success dependent fails with it")
  func failedCondition() async throws {
    let queue = ActorQueue(name: "failed")
    let ran = LockedValue(false)
    let guarded = QueueOperation(name: "sync", traits: [.condition(Scripted("online", [.failed(Offline())]))])
    {
      ran.withLock { $0 = true }
    }
    let dependent = QueueOperation(name: "after") {}
    try dependent.addDependency(guarded, requiring: .success)
    try queue.addOperations([guarded, dependent])
    await queue.waitUntilAllOperationsAreFinished()
    #expect(guarded.state == .failed)
    #expect(!guarded.isCancelled)
    #expect(!ran.withLock { $0 })
    let error = try #require(await failure(of: guarded) as? ConditionFailedError)
    #expect(error.conditionName == "online")
    #expect(error.underlyingError as? Offline == Offline())
    #expect("\(error)" == "condition \"online\" failed: Offline()")
    #expect(dependent.state == .failed)
    let dependencyError = try #require(await failure(of: dependent) as? DependencyFailedError)
    #expect(dependencyError.underlyingError is ConditionFailedError)
  }

  @Test("skip: .cancelled with isCancelled true, the body never runs, a .success dependent is cancelled")
  func skippedCondition() async throws {
    let queue = ActorQueue(name: "skip")
    let ran = LockedValue(false)
    let guarded = QueueOperation(name: "sync", traits: [.condition(Scripted("wanted", [.skip]))]) {
      ran.withLock { $0 = true }
    }
    let dependent = QueueOperation(name: "after") {}
    try dependent.addDependency(guarded, requiring: .success)
    try queue.addOperations([guarded, dependent])
    await queue.waitUntilAllOperationsAreFinished()
    #expect(guarded.state == .cancelled)
    #expect(guarded.isCancelled)
    #expect(await failure(of: guarded) is CancellationError)
    #expect(!ran.withLock { $0 })
    #expect(dependent.state == .cancelled)
  }

  @Test("notYet(1s): pending, holding no slot or key; evaluated again after advance(1s); reported as such")
  func notYetHoldsNothing() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "serial", maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let recorder = QueueRecorder(queue)
    let condition = Scripted("online", [.notYet(retryAfter: .seconds(1)), .satisfied])
    let ran = LockedValue(0)
    let guarded = queue.addOperation(name: "sync", traits: [.exclusive("db"), .condition(condition)]) {
      ran.withLock { $0 += 1 }
    }
    await clock.settle()
    #expect(guarded.state == .pending)
    #expect(condition.evaluations == 1)
    // Its slot and its key are free: an operation on the same key runs on the serial queue.
    let gate = TestGate()
    let other = queue.addOperation(name: "other", traits: [.exclusive("db")]) { await gate.wait() }
    await clock.settle()
    #expect(other.state == .executing)
    #expect(
      queue.waitReport().map(\.waitingFor).first == [
        .condition("online", until: QueueDeadline(clock: clock.queueClock, nanoseconds: 1_000_000_000))
      ])
    #expect(
      queue.waitReport().first?.description
        == "\(guarded.id) \"sync\" pending: condition \"online\" until \(clock.queueClock.deadline(in: .seconds(1)))"
    )
    gate.open()
    await clock.settle()
    #expect(condition.evaluations == 1)
    clock.advance(by: .seconds(1))
    await guarded.waitUntilFinished()
    #expect(guarded.state == .finished)
    #expect(condition.evaluations == 2)
    #expect(ran.withLock { $0 } == 1)
    #expect(
      story(of: guarded, in: recorder) == [
        "ready", "executing", "pending", "online not yet until 1000 ms", "ready", "executing", "finished",
      ])
  }

  @Test("cancel() while a condition says not yet ends the operation at once; its timer goes")
  func cancelWhileNotYet() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "cancel", clock: clock.queueClock)
    let condition = Scripted("online", [.notYet(retryAfter: .seconds(60))])
    let guarded = queue.addOperation(name: "sync", traits: [.condition(condition)]) {}
    await clock.settle()
    #expect(guarded.state == .pending)
    guarded.cancel()
    #expect(guarded.state == .cancelled)
    #expect(guarded.isCancelled)
    #expect(queue.waitReport().isEmpty)
    clock.advance(by: .seconds(60))
    await clock.settle()
    #expect(condition.evaluations == 1)
  }

  @Test("A deadline passes while a condition says not yet: .failed with the deadline, the body never ran")
  func deadlineWhileNotYet() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "deadline", clock: clock.queueClock)
    let guarded = queue.addOperation(
      name: "sync",
      traits: [
        .deadline(in: .seconds(5)), .condition(Scripted("online", [.notYet(retryAfter: .seconds(10))])),
      ]
    ) {}
    await clock.settle()
    clock.advance(by: .seconds(5))
    await guarded.waitUntilFinished()
    let error = try #require(await failure(of: guarded) as? OperationTimeoutError)
    #expect(error.kind == .deadline)
    #expect(!error.hadStarted)
  }

  @Test("The produced dependency is added with the operation and runs first")
  func producedDependencyRunsFirst() async throws {
    let queue = ActorQueue(name: "produce", maxConcurrentOperationCount: -1)
    let order = Recorder<String>()
    let signIn = QueueOperation(name: "sign in") { order.append("sign in") }
    let condition = Scripted("signed in", [.satisfied], produces: signIn)
    let sync = queue.addOperation(name: "sync", traits: [.condition(condition)]) { order.append("sync") }
    #expect(sync.dependencies.map(\.id) == [signIn.id])
    await sync.waitUntilFinished()
    #expect(signIn.state == .finished)
    #expect(order.snapshot == ["sign in", "sync"])
    // A produced dependency already in a queue is linked, not added again.
    let elsewhere = ActorQueue(name: "elsewhere")
    let gate = TestGate()
    let existing = elsewhere.addOperation(name: "existing") { await gate.wait() }
    let next = queue.addOperation(
      name: "next", traits: [.condition(Scripted("existing", [.satisfied], produces: existing))]
    ) {}
    #expect(next.state == .pending)
    gate.open()
    await next.waitUntilFinished()
    #expect(next.state == .finished)
  }

  @Test("A produced dependency that closes a cycle: addOperation(_:) throws, addOperation(traits:) fails it")
  func producedCycleIsRefused() async throws {
    let queue = ActorQueue(name: "cycle")
    queue.isSuspended = true
    // The produced operation waits for the one whose condition produces it.
    let produced = QueueOperation(name: "produced") {}
    final class Producing: OperationCondition {
      let produced: AnyQueueOperation
      init(_ produced: AnyQueueOperation) { self.produced = produced }
      func dependency(for operation: AnyQueueOperation) -> AnyQueueOperation? {
        try? produced.addDependency(operation)
        return produced
      }
      func evaluate(for operation: AnyQueueOperation) async -> ConditionResult { .satisfied }
    }
    let prepared = QueueOperation(name: "prepared", traits: [.condition(Producing(produced))]) {}
    #expect(throws: ActorQueueError.dependencyCycle) { try queue.addOperation(prepared) }
    #expect(prepared.state == .pending)
    #expect(queue.operationCount == 0)
    let other = QueueOperation(name: "produced too") {}
    let added = queue.addOperation(name: "added", traits: [.condition(Producing(other))]) {}
    #expect(added.state == .failed)
    #expect(await failure(of: added) as? ActorQueueError == .dependencyCycle)
    #expect(queue.operationCount == 0)
  }

  @Test("cancel() during evaluate: .cancelled, and the body never runs")
  func cancelDuringEvaluation() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "cancel", clock: clock.queueClock)
    let gate = TestGate()
    let sawCancellation = LockedValue(false)
    let ran = LockedValue(false)
    let guarded = queue.addOperation(
      name: "sync",
      traits: [
        .condition("slow") { _ in
          await gate.wait()
          sawCancellation.withLock { $0 = Task.isCancelled }
          return .satisfied
        }
      ]
    ) { ran.withLock { $0 = true } }
    await clock.settle()
    #expect(guarded.state == .executing)
    guarded.cancel()
    gate.open()
    await guarded.waitUntilFinished()
    #expect(guarded.state == .cancelled)
    #expect(sawCancellation.withLock { $0 })
    #expect(!ran.withLock { $0 })
  }

  @Test("Evaluation is .executing and holds a slot: the next operation of a serial queue waits for it")
  func evaluationHoldsASlot() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "serial", maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let gate = TestGate()
    let guarded = queue.addOperation(
      name: "sync",
      traits: [
        .condition("slow") { _ in
          await gate.wait(); return .satisfied
        }
      ]
    ) {
    }
    let next = queue.addOperation(name: "next") {}
    await clock.settle()
    #expect(guarded.state == .executing)
    #expect(next.state == .ready)
    #expect(queue.waitReport().map(\.waitingFor) == [[.slot]])
    gate.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(guarded.state == .finished)
    #expect(next.state == .finished)
  }

  @Test("Conditions are evaluated in order; the first that is not satisfied decides, the rest are not asked")
  func evaluatedInOrder() async {
    let queue = ActorQueue(name: "order")
    let first = Scripted("first", [.satisfied])
    let second = Scripted("second", [.skip])
    let third = Scripted("third", [.satisfied])
    let guarded = queue.addOperation(traits: [.condition(first), .condition(second), .condition(third)]) {}
    await guarded.waitUntilFinished()
    #expect(guarded.state == .cancelled)
    #expect([first.evaluations, second.evaluations, third.evaluations] == [1, 1, 0])
  }

  @Test("With a retry, conditions are evaluated before each attempt; a failed condition is not retried")
  func conditionsAndRetry() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "retry", clock: clock.queueClock)
    let condition = Scripted("ok", [.satisfied])
    let attempts = LockedValue(0)
    let retried = queue.addOperation(
      name: "flaky",
      traits: [.retry(.attempts(3, backoff: .constant(.seconds(1)), jitter: .none)), .condition(condition)]
    ) { () -> Int in
      let attempt = attempts.withLock {
        $0 += 1; return $0
      }
      guard attempt == 2 else { throw Offline() }
      return attempt
    }
    await clock.settle()
    clock.advance(by: .seconds(1))
    #expect(try await retried.value == 2)
    #expect(condition.evaluations == 2)
    #expect(retried.attemptCount == 2)

    // "Not yet" uses no attempt: two of them, then a failed attempt and a second that succeeds.
    let later = Scripted("later", [.notYet(retryAfter: .zero), .notYet(retryAfter: .zero), .satisfied])
    let tries = LockedValue(0)
    let deferred = queue.addOperation(
      name: "deferred",
      traits: [.retry(.attempts(2, backoff: .constant(.zero), jitter: .none)), .condition(later)]
    ) { () -> Int in
      let attempt = tries.withLock {
        $0 += 1; return $0
      }
      guard attempt == 2 else { throw Offline() }
      return ActorQueue.currentAttempt?.number ?? 0
    }
    #expect(try await deferred.value == 2)
    #expect(deferred.attemptCount == 2)
    #expect(later.evaluations == 4)

    let failing = Scripted("never", [.failed(Offline())])
    let notRetried = queue.addOperation(
      name: "refused",
      traits: [.retry(.attempts(3, backoff: .constant(.zero), jitter: .none)), .condition(failing)]
    ) {}
    await notRetried.waitUntilFinished()
    #expect(await failure(of: notRetried) is ConditionFailedError)
    #expect(failing.evaluations == 1)
  }

  @Test("A condition is released when its operation ends, and when an unadded operation is dropped")
  func conditionsAreReleased() async {
    final class Tracked: OperationCondition {
      func evaluate(for operation: AnyQueueOperation) async -> ConditionResult { .satisfied }
    }
    let queue = ActorQueue(name: "lifetime")
    // Made in functions, so that no local of this one keeps a condition alive.
    func added() -> (QueueOperation<Void>, WeakReference<Tracked>) {
      let condition = Tracked()
      return (queue.addOperation(traits: [.condition(condition)]) {}, WeakReference(condition))
    }
    func dropped() -> WeakReference<Tracked> {
      let condition = Tracked()
      _ = QueueOperation(traits: [.condition(condition)]) {}
      return WeakReference(condition)
    }
    let (operation, ended) = added()
    let dropped = dropped()
    await operation.waitUntilFinished()
    #expect(await eventually { ended.isFreed })
    #expect(dropped.isFreed)
  }

  @Test("The condition sees its own operation, and ActorQueue.current is its queue")
  func conditionSeesItsOperation() async throws {
    let queue = ActorQueue(name: "self")
    let seen = LockedValue<(OperationID?, Bool)>((nil, false))
    let guarded = queue.addOperation(
      name: "sync",
      traits: [
        .condition("sees") { operation in
          seen.withLock { $0 = (operation.id, ActorQueue.current === queue) }
          return .satisfied
        }
      ]
    ) {}
    await guarded.waitUntilFinished()
    #expect(seen.withLock { $0.0 } == guarded.id)
    #expect(seen.withLock { $0.1 })
  }
  @Test("Not yet in a queue released while suspended: it ends .cancelled, as what waited there")
  func notYetInUnreachableQueue() async {
    let gate = Gate()
    var queue: ActorQueue? = ActorQueue(name: "gone")
    let ran = LockedValue(false)
    let guarded = queue!.addOperation(
      name: "sync",
      traits: [
        .condition("later") { _ in
          await gate.wait(); return .notYet(retryAfter: .zero)
        }
      ]
    ) { ran.withLock { $0 = true } }
    #expect(await eventually { guarded.state == .executing })
    queue!.isSuspended = true
    queue = nil
    gate.open()
    await guarded.waitUntilFinished()
    #expect(guarded.state == .cancelled)
    #expect(!ran.withLock { $0 })
  }

  @Test("Nothing holds it when it starts (its released queue let go of it): .cancelled, not evaluated")
  func orphanIsNotEvaluated() async {
    final class Counting: OperationCondition {
      let evaluations: LockedValue<Int>
      init(_ evaluations: LockedValue<Int>) { self.evaluations = evaluations }
      func evaluate(for operation: AnyQueueOperation) async -> ConditionResult {
        evaluations.withLock { $0 += 1 }
        return .satisfied
      }
    }
    let blockerGate = Gate()
    let ran = LockedValue(false)
    let evaluations = LockedValue(0)
    var queue: ActorQueue? = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    let blocker = queue!.addOperation(name: "blocker") { await blockerGate.wait() }
    // Made in a function, so that no local of this one keeps the condition alive.
    func addHeld(to queue: ActorQueue) -> (QueueOperation<Void>, WeakReference<Counting>) {
      let condition = Counting(evaluations)
      let operation = queue.addOperation(name: "guarded", traits: [.condition(condition)]) {
        ran.withLock { $0 = true }
      }
      operation.pause()
      return (operation, WeakReference(condition))
    }
    var operation: QueueOperation<Void>?
    let condition: WeakReference<Counting>
    (operation, condition) = addHeld(to: queue!)
    #expect(await eventually { blocker.state == .executing })
    queue = nil  // lets go of the held operation: only its handle keeps it
    operation?.resume()  // ready, behind the blocker
    operation = nil  // its last handle goes
    blockerGate.open()
    await blocker.waitUntilFinished()
    #expect(await eventually { condition.isFreed })
    #expect(evaluations.withLock { $0 } == 0)
    #expect(!ran.withLock { $0 })
  }

  @Test("A checkpoint in a condition pauses nothing; the body's first checkpoint pauses; cancel ends it")
  func checkpointInACondition() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "pause", clock: clock.queueClock)
    let gate = TestGate()
    let passed = LockedValue(false)
    let guarded = queue.addOperation(
      name: "sync",
      traits: [
        .condition("checks in") { _ in
          await gate.wait()
          try? await ActorQueue.checkpoint()
          passed.withLock { $0 = true }
          return .satisfied
        }
      ]
    ) {
      try await ActorQueue.checkpoint()
    }
    await clock.settle()
    guarded.pause()  // asked while its condition runs
    gate.open()
    #expect(await eventually { guarded.state == .paused })
    #expect(passed.withLock { $0 })
    guarded.cancel()
    await guarded.waitUntilFinished()
    #expect(guarded.state == .cancelled)
  }

  /// Found by the random tester on real queues: the produced dependency joined the queue inside
  /// its operation's submission, so its first event came before its operation's, and a FIFO check
  /// reading events took it for the earlier submission.
  @Test("A produced dependency joins the queue after its operation: its events, and its start, follow")
  func producedDependencyFollowsItsOperation() async {
    let queue = ActorQueue(name: "order", maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let recorder = QueueRecorder(queue)
    let signIn = QueueOperation(name: "sign in") {}
    let sync = queue.addOperation(
      name: "sync", traits: [.condition(Scripted("signed in", [.satisfied], produces: signIn))]
    ) {}
    let firstEvents = recorder.events.compactMap { event -> String? in
      guard case .operation(_, let name, let state) = event.kind else { return nil }
      return "\(name ?? "?") \(state)"
    }
    #expect(firstEvents == ["sync pending", "sign in ready"])
    sync.removeDependency(signIn)  // both ready, of one priority: the earlier submission starts first
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.startOrder(in: queue) == ["sync", "sign in"])
  }
}

import ActorQueue
import ActorQueueTesting
import Dispatch
import TestSupport
import Testing

/// What users trying the capabilities from outside hit (a group and its child on one key, a
/// timeout counted from the slot, attempts that never ran, waits on oneself, a clock that could
/// not settle a group, a produced dependency outliving its reason, a misleading message): each
/// failed before its fix.
@Suite("Reliability: found from outside", .timeLimit(.minutes(hangLimitMinutes)))
struct OutsideTrialTests {
  // MARK: Keys

  @Test(
    "A group on .exclusive(\"k\") and a child on only .exclusive(\"k\") both run; an outside operation on k waits"
  )
  func groupAndChildOnTheSameKeyAlone() async throws {
    let queue = ActorQueue(name: "keys")
    let inside = Gate()
    let release = Gate()
    let order = LockedValue<[String]>([])
    let group = queue.addOperationGroup(name: "g", traits: [.exclusive("k")]) { group in
      _ = group.queue.addOperation(name: "child", traits: [.exclusive("k")]) {
        inside.open()
        await release.wait()
        order.withLock { $0.append("child") }
      }
    }
    await inside.wait()
    let outside = queue.addOperation(name: "outside", traits: [.exclusive("k")]) {
      order.withLock { $0.append("outside") }
    }
    _ = await outside.events.first { $0 == .pending }
    #expect(outside.state == .pending)
    release.open()
    try await group.value
    await outside.waitUntilFinished()
    #expect(outside.state == .finished)
    #expect(order.withLock { $0 } == ["child", "outside"])
  }

  // MARK: Timeouts and attempts

  @Test(
    "A timeout counts from the body's first line: a clock moved between the slot's grant and the body fires nothing"
  )
  func timeoutCountsFromTheBodysStart() async throws {
    let clock = ManualClock()
    // The worker's task is created on a suspended dispatch queue: the slot is granted, the body waits.
    let held = DispatchQueue(label: "held")
    held.suspend()
    let queue = ActorQueue(name: "timed", taskExecutor: DispatchQueueExecutor(held), clock: clock.queueClock)
    let started = Gate()
    let operation = queue.addOperation(traits: [.timeout(.seconds(1))]) { () -> Bool in
      started.open()
      return Task.isCancelled
    }
    try #require(operation.state == .executing, "the slot is granted at the add")
    clock.advance(by: .seconds(1))
    held.resume()
    await started.wait()
    #expect(try await operation.value == false, "the body ran with its whole timeout")

    // The timeout still fires once the body has run it out.
    let release = TestGate()
    let late = queue.addOperation(traits: [.timeout(.seconds(1))]) {
      await release.wait()
      try Task.checkCancellation()
    }
    await clock.settle()
    clock.advance(by: .seconds(1))
    #expect(late.state == .executing)
    release.open()
    await late.waitUntilFinished()
    #expect(late.outcome?.error is OperationTimeoutError)
  }

  @Test(
    "attemptCount counts body starts: a condition that skips or fails, or a cancel while it is evaluated, started none"
  )
  func attemptCountCountsBodyStarts() async throws {
    let queue = ActorQueue(name: "attempts")
    let skipped = queue.addOperation(traits: [.condition("skip") { _ in .skip }]) {}
    await skipped.waitUntilFinished()
    #expect(skipped.state == .cancelled && skipped.attemptCount == 0)

    let failed = queue.addOperation(traits: [.condition("no") { _ in .failed(CancellationError()) }]) {}
    await failed.waitUntilFinished()
    #expect(failed.state == .failed && failed.attemptCount == 0)

    let retried = queue.addOperation(traits: [.retry(.attempts(3)), .condition("skip") { _ in .skip }]) {}
    await retried.waitUntilFinished()
    #expect(retried.state == .cancelled && retried.attemptCount == 0)

    let evaluating = Gate()
    let answer = Gate()
    let cancelled = queue.addOperation(
      traits: [
        .condition("slow") { _ in
          evaluating.open()
          await answer.wait()
          return .satisfied
        }
      ]
    ) {}
    await evaluating.wait()
    #expect(cancelled.attemptCount == 0)
    cancelled.cancel()
    answer.open()
    await cancelled.waitUntilFinished()
    #expect(cancelled.state == .cancelled && cancelled.attemptCount == 0)

    let ran = queue.addOperation(traits: [.condition("yes") { _ in .satisfied }]) {}
    await ran.waitUntilFinished()
    #expect(ran.state == .finished && ran.attemptCount == 1)
  }

  // MARK: Waiting for oneself

  @Test("A body awaiting its own value, result or cancellableValue gets ActorQueueError.awaitsItself at once")
  func bodyAwaitingItself() async throws {
    let queue = ActorQueue(name: "self")
    let handle = LockedValue<QueueOperation<[String]>?>(nil)
    let added = Gate()
    let operation = queue.addOperation(name: "narcissus") { () -> [String] in
      await added.wait()
      let me = handle.withLock { $0 }!
      var seen: [String] = []
      do { _ = try await me.value } catch { seen.append("value: \(error)") }
      if case .failure(let error) = await me.result { seen.append("result: \(error)") }
      do { _ = try await me.cancellableValue } catch { seen.append("cancellableValue: \(error)") }
      return seen
    }
    handle.withLock { $0 = operation }
    added.open()
    let seen = try await operation.value
    handle.withLock { $0 = nil }
    #expect(seen.count == 3)
    for line in seen {
      #expect(line.contains("ActorQueueError.awaitsItself") && line.contains("'narcissus'"), "\(line)")
    }
  }

  @Test(
    "Coalesced work awaiting a handle of itself, a child awaiting its group, a condition awaiting its operation: awaitsItself"
  )
  func indirectWaitsOnOneself() async throws {
    let queue = ActorQueue(name: "self")
    let shared = queue.addOperation(name: "shared", coalescingBy: "key") { () -> String in
      let again = queue.addOperation(name: "again", coalescingBy: "key") { "not run" }
      do { return try await again.value } catch { return "\(error)" }
    }
    #expect(try await shared.value.contains("ActorQueueError.awaitsItself"))

    let groupHandle = LockedValue<QueueOperation<Int>?>(nil)
    let built = Gate()
    let childSaw = LockedValue<String>("")
    let group = queue.addOperationGroup(name: "g") { group in
      await built.wait()
      group.queue.addOperation(name: "child") {
        let group = groupHandle.withLock { $0 }!
        do { _ = try await group.value } catch { childSaw.withLock { $0 = "\(error)" } }
      }
      return 1
    }
    groupHandle.withLock { $0 = group }
    built.open()
    #expect(try await group.value == 1)
    groupHandle.withLock { $0 = nil }
    #expect(childSaw.withLock { $0 }.contains("ActorQueueError.awaitsItself"))
    #expect(childSaw.withLock { $0 }.contains("'child'") && childSaw.withLock { $0 }.contains("'g'"))

    let conditionHandle = LockedValue<QueueOperation<Int>?>(nil)
    let set = Gate()
    let conditionSaw = LockedValue<String>("")
    let guarded = queue.addOperation(
      name: "guarded",
      traits: [
        .condition("self") { _ in
          await set.wait()
          let own = conditionHandle.withLock { $0 }!
          do { _ = try await own.value } catch { conditionSaw.withLock { $0 = "\(error)" } }
          return .satisfied
        }
      ]
    ) { 7 }
    conditionHandle.withLock { $0 = guarded }
    set.open()
    #expect(try await guarded.value == 7)
    conditionHandle.withLock { $0 = nil }
    #expect(conditionSaw.withLock { $0 }.contains("ActorQueueError.awaitsItself"))
  }

  @Test(
    "waitUntilFinished() and waitUntilFinished(timeout:) on oneself stop the program with a message naming it"
  )
  func nonThrowingWaitOnOneselfStops() async {
    for timed in [false, true] {
      let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        [timed = timed as Bool] in
        let queue = ActorQueue(name: "self")
        let handle = LockedValue<AnyQueueOperation?>(nil)
        let added = Gate()
        let operation = queue.addOperation(name: "narcissus") {
          await added.wait()
          let me = handle.withLock { $0 }!
          if timed {
            _ = await me.waitUntilFinished(timeout: .seconds(60))
          } else {
            await me.waitUntilFinished()
          }
        }
        handle.withLock { $0 = operation }
        added.open()
        await operation.waitUntilFinished()
      }
      let text = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
      #expect(text.contains("ActorQueueError.awaitsItself") && text.contains("'narcissus'"), "\(text)")
    }
  }

  // MARK: settle()

  @Test(
    "settle() returns while a group's children wait at gates, a body awaits a still operation, or one waits with a timeout"
  )
  func settleSeesWhatBodiesAwait() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "settle", clock: clock.queueClock)
    let gate = TestGate()
    let group = queue.addOperationGroup(name: "g") { group in
      _ = group.queue.addOperation(name: "child") { await gate.wait() }
      _ = group.queue.addOperation(name: "later", traits: [.deadline(in: .seconds(100))]) {
        await gate.wait()
      }
    }
    let inner = queue.addOperation(name: "inner") { await gate.wait() }
    let outer = queue.addOperation(name: "outer") { try await inner.value }
    let timed = queue.addOperation(name: "timed") { await inner.waitUntilFinished(timeout: .seconds(5)) }
    await clock.settle()
    #expect(group.state == .executing && outer.state == .executing && timed.state == .executing)
    clock.advance(by: .seconds(5))
    #expect(try await timed.value == false, "the timed wait had registered before the clock moved")
    gate.open()
    try await group.value
    try await outer.value
  }

  // MARK: Produced dependencies

  /// A condition that produces a login operation for each operation it guards.
  private struct SignedIn: OperationCondition {
    let name = "signed in"
    let logins: LockedValue<[String]>
    let produced: LockedValue<[AnyQueueOperation]>

    func dependency(for operation: AnyQueueOperation) -> AnyQueueOperation? {
      let login = QueueOperation(name: "login for \(operation.name ?? "")") { [logins] in
        logins.withLock { $0.append(operation.name ?? "") }
      }
      produced.withLock { $0.append(login) }
      return login
    }

    func evaluate(for operation: AnyQueueOperation) async -> ConditionResult { .satisfied }
  }

  private struct WrongPassword: Error {}

  @Test(
    "A condition's produced dependency that nothing else waits for is cancelled when its operation ends without running"
  )
  func producedDependencyGoesWithItsReason() async throws {
    // Serial: the failing input runs first; the sync and its login wait behind it.
    let queue = ActorQueue(name: "sync", maxConcurrentOperationCount: 1)
    let logins = LockedValue<[String]>([])
    let produced = LockedValue<[AnyQueueOperation]>([])
    let condition = SignedIn(logins: logins, produced: produced)
    queue.isSuspended = true
    let password = queue.addOperation(name: "password") { throw WrongPassword() }
    let sync = QueueOperation(name: "sync", traits: [.condition(condition)]) {}
    try sync.addDependency(password, requiring: .success)
    try queue.addOperation(sync)
    // Another sync whose login a third operation also waits for: that login still runs.
    let shared = QueueOperation(name: "shared", traits: [.condition(condition)]) {}
    try shared.addDependency(password, requiring: .success)
    try queue.addOperation(shared)
    let sharedLogin = try #require(produced.withLock { $0.last })
    let report = queue.addOperation(name: "report") {}
    try report.addDependency(sharedLogin)
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(sync.state == .failed && shared.state == .failed)
    let logins0 = produced.withLock { $0 }
    #expect(logins0.map(\.state) == [.cancelled, .finished])
    #expect(logins.withLock { $0 } == ["shared"])
    #expect(report.state == .finished)
  }

  // MARK: Messages

  @Test("addDependency on an operation that ended without starting says 'started or ends', not 'started'")
  func alreadyStartedSaysEnded() async throws {
    let queue = ActorQueue(name: "messages")
    queue.isSuspended = true
    let cancelled = queue.addOperation {}
    cancelled.cancel()
    #expect(cancelled.state == .cancelled)
    let prepared = QueueOperation(name: "prepared") {}
    try prepared.addDependency(cancelled, requiring: .success)
    #expect(prepared.state == .cancelled)
    #expect(throws: ActorQueueError.alreadyStarted) { try prepared.addDependency(queue.addOperation {}) }
    #expect(ActorQueueError.alreadyStarted.description.contains("before an operation starts or ends"))
  }
}

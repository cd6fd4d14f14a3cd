import ActorQueue
import ActorQueueTesting
import TestSupport
import Testing

private struct BodyError: Error, Equatable {}

/// Reads an operation's error as the timeout it must be.
private func timeout(of operation: QueueOperation<some Sendable>) async -> OperationTimeoutError? {
  await thrownError(OperationTimeoutError.self, by: operation)
}

/// Deadlines and execution timeouts (beyond.md §1.2 d), on a manual clock: no test sleeps, and
/// each instant is exact.
@Suite("Deadlines and timeouts")
struct DeadlineTests {
  /// A full queue whose one slot is held until `release` opens.
  private func fullQueue(_ clock: ManualClock, limit: Int = 1) -> (ActorQueue, Gate) {
    let queue = ActorQueue(name: "full", maxConcurrentOperationCount: limit, clock: clock.queueClock)
    let release = Gate()
    for _ in 0..<limit { queue.addOperation(name: "blocker") { await release.wait() } }
    return (queue, release)
  }

  @Test("A waiting operation ends .failed at its deadline, before advance returns, having never run")
  func waitingOperationEndsAtItsDeadline() async throws {
    let clock = ManualClock()
    let (queue, release) = fullQueue(clock)
    let ran = Recorder<Int>()
    let handled = Recorder<String>()
    let waiting = queue.addOperation(name: "waiting", traits: [.deadline(in: .seconds(5))]) { ran.append(1) }
    waiting.onCompletion { result in handled.append(result.isSuccess ? "success" : "failure") }
    #expect(waiting.state == .ready)

    clock.advance(by: .seconds(5) - .nanoseconds(1))
    #expect(waiting.state == .ready)
    clock.advance(by: .nanoseconds(1))
    // Before advance returned: ended, its completion handler run, its queue slot never taken.
    #expect(waiting.state == .failed)
    #expect(handled.snapshot == ["failure"])
    #expect(queue.operationCount == 1)
    let error = try #require(await timeout(of: waiting))
    #expect(error.kind == .deadline)
    #expect(error.operationID == waiting.id)
    #expect(error.operationName == "waiting")
    #expect(!error.hadStarted)
    #expect(waiting.thrownError == nil)

    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(ran.snapshot.isEmpty)
  }

  @Test("A deadline already past when the operation is added ends it before addOperation returns")
  func deadlineAlreadyPast() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    clock.advance(by: .seconds(10))
    let relative = queue.addOperation(traits: [.deadline(in: .zero)]) { 1 }
    #expect(relative.state == .failed)
    let absolute = queue.addOperation(traits: [.deadline(clock.now - .seconds(1))]) { 1 }
    #expect(absolute.state == .failed)
    #expect(await timeout(of: absolute)?.kind == .deadline)
  }

  @Test("Past its deadline an executing body is cancelled and holds its slot until it returns")
  func executingPastDeadline() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let events = queue.events
    let started = Gate()
    let throwing = queue.addOperation(name: "throws", traits: [.deadline(in: .seconds(1))]) {
      started.open()
      await untilCancelled()
      throw BodyError()
    }
    let next = queue.addOperation(name: "next") { 2 }
    await started.wait()
    clock.advance(by: .seconds(1))
    // Its task is cancelled, but it has not ended: the body has not returned, and still holds
    // the only slot. A timeout is not a cancel(): isCancelled stays false.
    #expect(throwing.state == .executing)
    #expect(!throwing.isCancelled)
    await throwing.waitUntilFinished()
    #expect(throwing.state == .failed)
    let error = try #require(await timeout(of: throwing))
    #expect(error.kind == .deadline && error.hadStarted)
    #expect(throwing.thrownError as? BodyError == BodyError())
    #expect(try await next.value == 2)

    // A body that returns a value anyway finishes.
    let started2 = Gate()
    let returning = queue.addOperation(name: "returns", traits: [.deadline(in: .seconds(1))]) {
      started2.open()
      await untilCancelled()
      return Task.isCancelled
    }
    await started2.wait()
    clock.advance(by: .seconds(1))
    #expect(try await returning.value == true)
    #expect(returning.state == .finished)

    // The events say why, and never show more executing than the limit.
    var seen: [QueueEvent] = []
    for await event in events {
      seen.append(event)
      if event.operationID == returning.id, event.operationState == .finished { break }
    }
    #expect(seen.allSatisfy { $0.executingCount <= 1 })
    let details = seen.compactMap { event -> OperationID? in
      if case .detail(let id, _, .deadlineExpired) = event.kind { id } else { nil }
    }
    #expect(details == [throwing.id, returning.id])
  }

  @Test("cancel() then the deadline ends .cancelled; the deadline then cancel() stays a timeout")
  func firstCauseDecides() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let startedA = Gate()
    let cancelledFirst = queue.addOperation(traits: [.deadline(in: .seconds(1))]) {
      startedA.open()
      await untilCancelled()
      throw BodyError()
    }
    await startedA.wait()
    cancelledFirst.cancel()
    clock.advance(by: .seconds(1))
    await cancelledFirst.waitUntilFinished()
    #expect(cancelledFirst.state == .cancelled)

    let startedB = Gate()
    let timedOutFirst = queue.addOperation(traits: [.deadline(in: .seconds(1))]) {
      startedB.open()
      await untilCancelled()
      throw BodyError()
    }
    await startedB.wait()
    clock.advance(by: .seconds(1))
    timedOutFirst.cancel()
    await timedOutFirst.waitUntilFinished()
    #expect(timedOutFirst.state == .failed)
    #expect(await timeout(of: timedOutFirst)?.kind == .deadline)
    #expect(timedOutFirst.isCancelled)  // cancel() was called, after the deadline

    // Waiting: cancelled first stays cancelled when its deadline comes.
    let (full, release) = fullQueue(clock)
    let waiting = full.addOperation(traits: [.deadline(in: .seconds(1))]) { 3 }
    waiting.cancel()
    clock.advance(by: .seconds(1))
    #expect(waiting.state == .cancelled)
    release.open()
  }

  @Test("An operation held by pause() ends at its deadline at once")
  func heldByPause() async throws {
    let clock = ManualClock()
    let (queue, release) = fullQueue(clock)
    let held = queue.addOperation(traits: [.deadline(in: .seconds(2))]) { 1 }
    held.pause()
    #expect(held.state == .pending)
    clock.advance(by: .seconds(2))
    #expect(held.state == .failed)
    release.open()
  }

  @Test("Paused in its body: the checkpoint throws, and it ends .failed(timeout) holding no slot")
  func pausedInBody() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let started = Gate()
    let proceed = Gate()
    let paused = queue.addOperation(name: "paused", traits: [.deadline(in: .seconds(3))]) {
      started.open()
      await proceed.wait()
      try await ActorQueue.checkpoint()
      return 1
    }
    await started.wait()
    var states = paused.events.makeAsyncIterator()
    paused.pause()
    proceed.open()
    while let state = await states.next(), state != .paused {}
    // Paused, its slot is free: another operation runs meanwhile.
    #expect(try await queue.addOperation { 7 }.value == 7)
    clock.advance(by: .seconds(3))
    await paused.waitUntilFinished()
    #expect(paused.state == .failed)
    #expect(await timeout(of: paused)?.hadStarted == true)
    #expect(paused.thrownError is CancellationError)
  }

  @Test(".timeout counts from the body's start, not from submission")
  func timeoutCountsFromStart() async throws {
    let clock = ManualClock()
    let (queue, release) = fullQueue(clock)
    let started = Gate()
    let finish = Gate()
    let quick = queue.addOperation(name: "quick", traits: [.timeout(.seconds(2))]) {
      started.open()
      await finish.wait()
      return "done"
    }
    clock.advance(by: .seconds(10))  // waited 10 s for a slot: no timeout yet
    #expect(quick.state == .ready)
    release.open()
    await started.wait()
    clock.advance(by: .milliseconds(1_500))
    finish.open()
    #expect(try await quick.value == "done")

    let slowStarted = Gate()
    let slow = queue.addOperation(name: "slow", traits: [.timeout(.seconds(2))]) {
      slowStarted.open()
      await untilCancelled()
      throw CancellationError()
    }
    await slowStarted.wait()
    clock.advance(by: .seconds(2))
    await slow.waitUntilFinished()
    #expect(slow.state == .failed)
    let error = try #require(await timeout(of: slow))
    #expect(error.kind == .executionTimeout)
    #expect(slow.thrownError is CancellationError)
  }

  @Test("The earliest of several deadlines and the shortest of several timeouts apply")
  func severalTraits() async throws {
    let clock = ManualClock()
    let (queue, release) = fullQueue(clock)
    let waiting = queue.addOperation(
      traits: [.deadline(in: .seconds(9)), .deadline(clock.now + .seconds(4)), .deadline(in: .seconds(6))]
    ) { 1 }
    clock.advance(by: .seconds(4))
    #expect(waiting.state == .failed)
    release.open()
  }

  @Test("One deadline serves two queues on the same clock")
  func sharedDeadline() async throws {
    let clock = ManualClock()
    let (first, releaseFirst) = fullQueue(clock)
    let (second, releaseSecond) = fullQueue(clock)
    let deadline = first.deadline(in: .seconds(1))
    let a = first.addOperation(traits: [.deadline(deadline)]) { 1 }
    let b = second.addOperation(traits: [.deadline(deadline)]) { 2 }
    clock.advance(by: .seconds(1))
    #expect(a.state == .failed && b.state == .failed)
    releaseFirst.open()
    releaseSecond.open()
  }

  @Test("Dependents: .success ones fail naming the timeout, .completion ones run, none inherits it")
  func dependents() async throws {
    let clock = ManualClock()
    let (queue, release) = fullQueue(clock)
    let timed = QueueOperation<Int>(name: "timed", traits: [.deadline(in: .seconds(1))]) { 1 }
    let needsSuccess = QueueOperation<Int>(name: "needs success") { 2 }
    let afterAnyEnd = QueueOperation<Int>(name: "after any end") { 3 }
    try needsSuccess.addDependency(timed, requiring: .success)
    try afterAnyEnd.addDependency(timed)
    try queue.addOperations([timed, needsSuccess, afterAnyEnd])
    clock.advance(by: .seconds(1))
    #expect(timed.state == .failed)
    #expect(needsSuccess.state == .failed)
    do {
      _ = try await needsSuccess.value
      Issue.record("a dependent that required success ran")
    } catch let error as DependencyFailedError {
      #expect(error.dependencyID == timed.id)
      #expect((error.underlyingError as? OperationTimeoutError)?.kind == .deadline)
    }
    // afterAnyEnd is ready, and its dependency's deadline does not end it.
    #expect(afterAnyEnd.state == .ready)
    clock.advance(by: .seconds(60))
    #expect(afterAnyEnd.state == .ready)
    release.open()
    #expect(try await afterAnyEnd.value == 3)
  }

  @Test("A suspended queue still times out its waiting operations")
  func suspendedQueueTimesOut() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    queue.isSuspended = true
    let waiting = queue.addOperation(traits: [.deadline(in: .seconds(1))]) { 1 }
    clock.advance(by: .seconds(1))
    #expect(waiting.state == .failed)
    #expect(queue.operationCount == 0)
  }

  @Test("waitUntilFinished(timeout:) returns false at its time and leaves the operation alone")
  func timedWait() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let started = Gate()
    let finish = Gate()
    let running = queue.addOperation {
      started.open()
      await finish.wait()
      return 5
    }
    await started.wait()
    let waiter = Task { await running.waitUntilFinished(timeout: .seconds(1)) }
    // The waiter registers through the lock; once it has, advancing passes its time.
    while running.timedWaiterCount == 0 { await Task.yield() }
    clock.advance(by: .seconds(1))
    #expect(await waiter.value == false)
    #expect(running.state == .executing && !running.isCancelled)

    let second = Task { await running.waitUntilFinished(timeout: .seconds(1)) }
    while running.timedWaiterCount == 0 { await Task.yield() }
    finish.open()
    #expect(await second.value == true)
    #expect(await running.waitUntilFinished(timeout: .seconds(1)) == true)
    #expect(await running.waitUntilFinished(timeout: .zero) == true)
  }

  @Test("Two tests' manual clocks do not touch each other")
  func clocksAreIndependent() async throws {
    let mine = ManualClock()
    let other = ManualClock()
    let (queue, release) = fullQueue(mine)
    let waiting = queue.addOperation(traits: [.deadline(in: .seconds(1))]) { 1 }
    other.advance(by: .seconds(100))
    #expect(waiting.state == .ready)
    #expect(mine.now.remaining == .zero)
    mine.advance(by: .seconds(1))
    #expect(waiting.state == .failed)
    release.open()
  }

  @Test(
    "Coalesced work: a joiner's deadline ends only its handle; the work is cancelled once no handle waits")
  func coalescingJoinerDeadline() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let started = Gate()
    let finish = Gate()
    let body: @Sendable () async throws -> String = {
      started.open()
      await finish.wait()
      try Task.checkCancellation()
      return "image"
    }
    let patient = queue.addOperation(name: "patient", coalescingBy: "url", body)
    let hurried = queue.addOperation(
      name: "hurried", traits: [.deadline(in: .seconds(1))], coalescingBy: "url", body)
    await started.wait()
    clock.advance(by: .seconds(1))
    #expect(hurried.state == .failed)
    #expect(await timeout(of: hurried)?.kind == .deadline)
    #expect(patient.state == .executing)
    finish.open()
    #expect(try await patient.value == "image")

    // Alone, its deadline leaves no handle waiting: the shared work is cancelled.
    let started2 = Gate()
    let alone = queue.addOperation(traits: [.deadline(in: .seconds(1))], coalescingBy: "other") {
      started2.open()
      await untilCancelled()
      return Task.isCancelled
    }
    await started2.wait()
    clock.advance(by: .seconds(1))
    #expect(alone.state == .failed)
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test("An execution timeout on coalesced work is refused, with a message")
  func coalescingTimeoutRefused() async {
    await #expect(processExitsWith: .failure) {
      ActorQueue().addOperation(traits: [.timeout(.seconds(1))], coalescingBy: "k") { 1 }
    }
  }

  @Test("A deadline of another clock is refused when the operation is added, with a message")
  func deadlineOfAnotherClock() async {
    await #expect(processExitsWith: .failure) {
      let queue = ActorQueue(clock: ManualClock().queueClock)
      queue.addOperation(traits: [.deadline(QueueClock.system.deadline(in: .seconds(1)))]) {}
    }
  }

  @Test("A timeout of zero or less is refused, with a message")
  func nonPositiveTimeout() async {
    await #expect(processExitsWith: .failure) { _ = OperationTrait.timeout(.zero) }
    await #expect(processExitsWith: .failure) { _ = OperationTrait.timeout(.seconds(-1)) }
  }
}

/// Timers on the system clock: serialized, since they share the process's one timer task.
@Suite("Deadlines on the system clock", .serialized)
struct SystemClockDeadlineTests {
  @Test("A real deadline ends a waiting operation")
  func realDeadline() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let release = Gate()
    queue.addOperation { await release.wait() }
    let waiting = queue.addOperation(traits: [.deadline(in: .milliseconds(20))]) { 1 }
    await waiting.waitUntilFinished()
    #expect(waiting.state == .failed)
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test("No timer task exists while no timer is armed; one exists while one is")
  func noTimerTaskWhileNothingIsArmed() async throws {
    await TimerTask.waitUntilNoneLive()
    #expect(TimerTask.liveCount == 0)
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let release = Gate()
    queue.addOperation { await release.wait() }
    // Plain operations arm nothing.
    let plain = queue.addOperation { 0 }
    #expect(TimerTask.liveCount == 0)
    let later = queue.addOperation(traits: [.deadline(in: .seconds(3_600))]) { 1 }
    let sooner = queue.addOperation(traits: [.deadline(in: .seconds(1_800))]) { 2 }
    // The earlier deadline replaced the task armed for the later one.
    await TimerTask.waitUntilOnlyCurrent()
    #expect(TimerTask.liveCount == 1)
    sooner.cancel()
    #expect(TimerTask.liveCount >= 1)  // still armed, for `later`
    later.cancel()
    await TimerTask.waitUntilNoneLive()
    #expect(TimerTask.liveCount == 0)
    release.open()
    _ = try await plain.value
  }
}

extension Result {
  fileprivate var isSuccess: Bool {
    if case .success = self { return true }
    return false
  }
}

import ActorQueue
import TestSupport
import Testing

@testable import ActorQueue

/// Defects found in pause and coalescing (issue 12) by reading and probing the first version,
/// each a minimal deterministic reproduction that failed then: a dropped coalesced handle lost
/// its completion handlers and event streams and counted as cancelled; a released suspended
/// queue left bodies paused at a checkpoint waiting forever.
@Suite("Reliability: pause and coalescing regressions", .timeLimit(.minutes(hangLimitMinutes)))
struct PauseCoalescingRegressionTests {
  /// Suspends until `operation` is in `state` (at once if it is now).
  private func reach(_ operation: AnyQueueOperation, _ state: OperationState) async {
    for await current in operation.events where current == state { return }
  }

  // MARK: A dropped coalesced handle

  @Test(
    "A coalesced handle dropped before the work ends still runs its completion handler, once")
  func droppedFollowerRunsItsHandler() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let release = Gate()
    let ran = Counter()
    let first = queue.addOperation(coalescingBy: "k") { () -> Int in
      await release.wait()
      return 1
    }
    do {
      let second = queue.addOperation(coalescingBy: "k") { () -> Int in 2 }
      second.onCompletion { _ in ran.increment() }
    }
    release.open()
    #expect(try await first.value == 1)
    await queue.waitUntilAllOperationsAreFinished()
    #expect(ran.value == 1, "onCompletion: exactly once, whatever the outcome")
  }

  @Test(
    "Dropping a coalesced handle is not cancelling it: the others cancelling does not cancel the shared work")
  func droppedFollowerIsNotCancelled() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let ran = Counter()
    let first = queue.addOperation(coalescingBy: "k") { () -> Int in
      ran.increment()
      return 1
    }
    do { _ = queue.addOperation(coalescingBy: "k") { () -> Int in 2 } }
    first.cancel()
    #expect(first.state == .cancelled)
    #expect(queue.operationCount == 1, "a caller that did not cancel still waits for the work")
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(ran.value == 1)
  }

  @Test(
    "The events of a coalesced handle dropped before the work ends report its end and finish")
  func droppedFollowerEventsEnd() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let first = queue.addOperation(coalescingBy: "k") { () -> Int in 1 }
    var events: AsyncStream<OperationState>?
    do {
      let second = queue.addOperation(coalescingBy: "k") { () -> Int in 2 }
      events = second.events
    }
    let states = Task { [events] in
      var seen: [OperationState] = []
      for await state in events! { seen.append(state) }
      return seen
    }
    queue.isSuspended = false
    _ = try await first.value
    #expect(await states.value == [.ready, .executing, .finished])
  }

  // MARK: Paused bodies in a released suspended queue

  @Test(
    "Releasing a suspended queue cancels its paused bodies, as it cancels its waiting ops (value)")
  func releasedSuspendedQueueCancelsPausedBodiesOnTheValue() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 3)
    h.add("kept", "excess", "held", to: q)
    h.pause("held")
    #expect(h.checkpoint("held") == .suspended)
    h.setLimit(1, of: q, pausingExcess: true)
    #expect(h.pauseFlag("excess"))
    h.event { scheduler, now, effects in scheduler.setSuspended(true, of: q, now: now, &effects) }
    #expect(h.checkpoint("excess") == .suspended)
    #expect(h.state("excess") == .paused && h.state("held") == .paused)
    h.event { scheduler, now, effects in scheduler.releaseQueue(q, now: now, &effects) }
    #expect(
      Set(h.checkpointLog.take()) == ["excess cancelled", "held cancelled"],
      "nobody can resume the queue: their checkpoints throw, as waiting ops are cancelled")
    h.end("excess", with: .failure(CancellationError()))
    h.end("held", with: .failure(CancellationError()))
    h.end("kept")
    #expect(h.state("excess") == .cancelled && h.state("held") == .cancelled && h.state("kept") == .finished)
  }

  @Test(
    "Resuming a paused op after its suspended queue was released does not leave it waiting forever (value)"
  )
  func resumeAfterReleaseOnTheValue() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 2)
    h.add("held", "other", to: q)
    h.pause("held")
    #expect(h.checkpoint("held") == .suspended)
    h.event { scheduler, now, effects in scheduler.setSuspended(true, of: q, now: now, &effects) }
    h.event { scheduler, now, effects in scheduler.releaseQueue(q, now: now, &effects) }
    h.resume("held")
    h.end("other")
    #expect(h.checkpointLog.take() == ["held cancelled"])
    h.end("held", with: .failure(CancellationError()))
    #expect(h.state("held") == .cancelled)
  }

  @Test(
    "On real queues: a body paused for the excess in a released suspended queue ends, and is freed")
  func releasedSuspendedQueueEndsExcessPausedBody() async {
    let hold = Gate()
    let proceed = Gate()
    let started = Gate()
    var token: Token? = Token()
    weak let weakToken = token
    var queue: ActorQueue? = ActorQueue(maxConcurrentOperationCount: 2)
    let kept = queue!.addOperation { await hold.wait() }
    await reach(kept, .executing)
    let paused = queue!.addOperation { [token] () -> Int in
      _ = token
      started.open()
      await proceed.wait()
      try await ActorQueue.checkpoint()
      return 1
    }
    await started.wait()
    queue!.setMaxConcurrentOperationCount(1, pausingExcess: true)  // asks the later-started one
    queue!.isSuspended = true
    proceed.open()
    await reach(paused, .paused)
    queue = nil
    hold.open()
    await kept.waitUntilFinished()
    await paused.waitUntilFinished()
    #expect(paused.state == .cancelled)
    token = nil
    #expect(await eventuallyFreed { weakToken == nil })
  }
}

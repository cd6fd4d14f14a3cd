import Testing

@testable import ActorQueue

/// Pause, resume and excess pausing as transitions of the scheduler value: no task runs, no real
/// time passes; each checkpoint is an event the test sends for the body that reaches it.
@Suite("Scheduler value: pause and resume")
struct PauseSchedulerTests {
  @Test("A scheduler value lists its workers asked to pause in its own directory, not the process's queues'")
  func pauseDirectoryIsPerScheduler() throws {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", to: q)
    h.pause("a")
    let worker = try #require(h.scheduler.operations[h.index("a")].worker)
    #expect(h.scheduler.pauses.count == 1 && h.scheduler.pauses.contains(worker))
    #expect(!Engine.pauses.contains(worker), "the real queues' checkpoints never see a test's workers")
    #expect(h.scheduler.pauses !== Engine.pauses)
    h.resume("a")
    #expect(h.scheduler.pauses.count == 0)
  }

  @Test(
    "A paused body gives its slot to the next waiting op; resumed, it waits for a slot and continues on its own task"
  )
  func pauseFreesTheSlot() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", "b", to: q)
    #expect(h.running == ["a"])
    h.pause("a")
    #expect(h.state("a") == .executing, "not paused until its body reaches a checkpoint")
    #expect(h.pauseFlag("a"))
    #expect(h.state("b") == .ready)

    #expect(h.checkpoint("a") == .suspended)
    #expect(h.state("a") == .paused)
    #expect(h.state("b") == .executing, "the slot went to the next waiting op at once")
    #expect(h.scheduler.queues[q].machine.executing == 1)

    h.resume("a")
    #expect(h.state("a") == .ready, "resumed, it waits for a slot like any ready op")
    #expect(h.checkpointLog.take() == [])
    let spawnedBefore = h.spawned
    h.end("b")
    #expect(h.state("a") == .executing)
    #expect(h.checkpointLog.take() == ["a resumed"])
    #expect(h.spawned == spawnedBefore, "the paused body continues on its own task: no worker started for it")
    #expect(!h.pauseFlag("a"))
    h.end("a")
    #expect(h.state("a") == .finished)
    #expect(h.scheduler.queues[q].machine.executing == 0)
    #expect(h.scheduler.queues[q].pausedInReady == 0)
  }

  @Test("Pausing a waiting op holds it, even once its dependency ended; resume makes it ready")
  func pauseHoldsAWaitingOp() throws {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("busy", to: q)
    h.makeOperation("held")
    try h.depend(h["held"], on: h["busy"])
    try h.submit(["held"], to: q)
    h.add("other", to: q)
    h.pause("held")
    #expect(h.state("held") == .pending)
    #expect(h.scheduler.isPaused(h.index("held")))
    h.end("busy")
    #expect(h.state("held") == .pending, "held: its dependency ended, it stays pending")
    #expect(h.running == ["other"])
    h.end("other")
    #expect(h.running == [])
    h.resume("held")
    #expect(h.running == ["held"])
  }

  @Test(
    "Pausing a ready op withdraws it; resuming puts it back in its place by priority and submission order")
  func pauseReadyOp() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("busy", to: q)
    h.add("first", "second", to: q)
    h.pause("first")
    #expect(h.state("first") == .pending)
    h.resume("first")
    #expect(h.state("first") == .ready)
    #expect(h.runToCompletion() == ["busy", "first", "second"])
  }

  @Test(
    "An op asked to pause that reaches no checkpoint keeps executing and its slot; a checkpoint with nothing asked proceeds"
  )
  func noCheckpointNoPause() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", "b", to: q)
    #expect(h.checkpoint("a") == .proceed)
    h.pause("a")
    #expect(h.state("a") == .executing)
    #expect(h.state("b") == .ready)
    h.end("a")
    #expect(h.state("a") == .finished)
    #expect(h.running == ["b"])
  }

  @Test("Resume before the checkpoint withdraws the request; a second resume or pause is harmless")
  func resumeWithdrawsRequest() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", to: q)
    h.pause("a")
    h.pause("a")
    h.resume("a")
    #expect(!h.pauseFlag("a"))
    #expect(h.checkpoint("a") == .proceed)
    h.resume("a")
    #expect(h.state("a") == .executing)
  }

  @Test(
    "Cancelling a paused op wakes its checkpoint throwing; it runs to its end holding no slot, then ends once"
  )
  func cancelPaused() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", "b", "c", to: q)
    h.pause("a")
    #expect(h.checkpoint("a") == .suspended)
    #expect(h.state("b") == .executing)
    h.cancel("a")
    #expect(h.checkpointLog.take() == ["a cancelled"])
    #expect(h.state("a") == .paused, "its body still runs (to its end), holding no slot")
    #expect(h.state("c") == .ready, "no slot was taken back: the limit holds")
    #expect(h.scheduler.queues[q].machine.executing == 1)
    h.end("a", with: .failure(CancellationError()))
    #expect(h.state("a") == .cancelled)
    #expect(h.scheduler.queues[q].machine.executing == 1)
    #expect(h.runToCompletion() == ["b", "c"])
    #expect(h.scheduler.queues[q].machine.executing == 0)
    #expect(h.scheduler.queues[q].unfinishedCount == 0)
  }

  @Test("Cancelling a resumed op that waits for a slot wakes it throwing and takes it out of the ready set")
  func cancelResumedWaitingForSlot() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", "b", to: q)
    h.pause("a")
    h.checkpoint("a")
    h.resume("a")
    #expect(h.state("a") == .ready)
    h.cancel("a")
    #expect(h.checkpointLog.take() == ["a cancelled"])
    #expect(h.state("a") == .paused)
    h.end("b")
    #expect(h.checkpointLog.take() == [], "never given a slot")
    h.end("a", with: .failure(CancellationError()))
    #expect(h.state("a") == .cancelled)
    #expect(h.scheduler.queues[q].machine.executing == 0)
  }

  @Test("A cancelled op's checkpoint says so; a checkpoint of a task that outlived its op proceeds")
  func checkpointCancelledAndStale() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", to: q)
    h.cancel("a")
    #expect(h.checkpoint("a") == .cancelled)
    h.end("a", with: .failure(CancellationError()))
    #expect(h.checkpoint("a") == .proceed)
  }

  @Test(
    "Resumed ops compete for slots by priority, then original submission order, and not while the queue is suspended"
  )
  func resumedOpsCompete() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 2)
    h.add("early", "late", to: q)
    h.add("waiting", to: q)
    h.pause("early")
    h.pause("late")
    h.checkpoint("early")
    h.checkpoint("late")
    #expect(h.state("waiting") == .executing)
    h.add("newer", to: q)
    #expect(h.state("newer") == .executing, "both freed slots were taken")
    h.add("urgent", priority: .high, to: q)
    #expect(h.state("urgent") == .ready)
    h.event { scheduler, now, effects in scheduler.setSuspended(true, of: q, now: now, &effects) }
    h.resume("late")
    h.resume("early")
    #expect(h.state("early") == .ready && h.state("late") == .ready)
    h.end("waiting")
    h.end("newer")
    #expect(h.checkpointLog.take() == [], "suspended: nothing is given a slot")
    h.event { scheduler, now, effects in scheduler.setSuspended(false, of: q, now: now, &effects) }
    #expect(h.state("urgent") == .executing, "priority first")
    #expect(
      h.checkpointLog.take() == ["early resumed"], "then original submission order, not the order of resume()"
    )
    #expect(h.state("late") == .ready)
    #expect(h.scheduler.queues[q].pausedInReady == 1)
    h.cancel("late")
    #expect(h.scheduler.queues[q].pausedInReady == 0)
  }

  @Test(
    "Pause all holds every waiting op and pauses every executing one at its checkpoint; resume all brings them back"
  )
  func pauseAllResumeAll() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 2)
    h.add("a", "b", "c", "d", to: q)
    h.pauseAll(in: q)
    #expect(h.state("c") == .pending && h.state("d") == .pending)
    h.checkpoint("a")
    h.checkpoint("b")
    #expect(h.state("a") == .paused && h.state("b") == .paused)
    #expect(h.scheduler.queues[q].machine.executing == 0)
    #expect(h.state("c") == .pending, "held: the freed slots go to nobody")
    h.add("later", to: q)
    #expect(h.state("later") == .executing, "ops added after pause all are not paused")
    h.end("later")
    h.resumeAll(in: q)
    #expect(h.checkpointLog.take() == ["a resumed", "b resumed"])
    #expect(h.state("c") == .ready && h.state("d") == .ready)
  }

  @Test(
    "Lowering the limit with the excess paused: lowest priority first, then the most recently started; a request is withdrawn when another op frees its slot"
  )
  func excessPausing() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 4)
    h.add("a", to: q)
    h.add("b", priority: .low, to: q)
    h.add("c", to: q)
    h.add("d", priority: .high, to: q)
    h.add("waiting", to: q)
    #expect(Set(h.running) == ["a", "b", "c", "d"])
    h.setLimit(2, of: q, pausingExcess: true)
    #expect(h.pauseFlag("b") && h.pauseFlag("c"))
    #expect(!h.pauseFlag("a") && !h.pauseFlag("d"))
    h.end("d")
    #expect(
      h.pauseFlag("b") && !h.pauseFlag("c"), "one request is no longer needed: the one chosen last goes")
    #expect(h.state("waiting") == .ready, "still 3 executing against a limit of 2")
    #expect(h.checkpoint("c") == .proceed)
    #expect(h.checkpoint("b") == .suspended)
    #expect(h.state("b") == .paused)
    #expect(h.scheduler.queues[q].machine.executing == 2)
    h.end("a")
    #expect(
      h.state("waiting") == .executing, "a freed slot goes by priority: the normal op before the low one")
    #expect(h.checkpointLog.take() == [])
    h.end("c")
    #expect(
      h.checkpointLog.take() == ["b resumed"], "paused for the excess, it resumes by itself as slots free")
    #expect(h.state("b") == .executing)
    h.end("b")
    h.end("waiting")
    #expect(h.scheduler.queues[q].machine.executing == 0)
    #expect(h.scheduler.queues[q].pausedInReady == 0)
  }

  @Test(
    "An op paused for the excess and then by the user stays paused until resume; resume all resumes both kinds"
  )
  func userPauseOverExcess() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 3)
    h.add("a", "b", "c", to: q)
    h.setLimit(1, of: q, pausingExcess: true)
    #expect(h.pauseFlag("b") && h.pauseFlag("c"))
    h.checkpoint("b")
    h.checkpoint("c")
    h.pause("c")
    h.end("a")
    #expect(h.checkpointLog.take() == ["b resumed"])
    h.end("b")
    #expect(h.state("c") == .paused, "the user's pause holds")
    h.resumeAll(in: q)
    #expect(h.checkpointLog.take() == ["c resumed"])
  }

  @Test("Raising the limit again withdraws the excess requests that are no longer needed")
  func raisingWithdraws() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 3)
    h.add("a", "b", "c", to: q)
    h.setLimit(1, of: q, pausingExcess: true)
    h.setLimit(3, of: q)
    #expect(!h.pauseFlag("a") && !h.pauseFlag("b") && !h.pauseFlag("c"))
  }

  @Test(
    "A body asked to pause that reaches its checkpoint after its suspended queue was released is cancelled, not paused for good"
  )
  func checkpointAfterReleaseOfSuspendedQueue() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 3)
    h.add("held", "kept", "excess", to: q)
    h.pause("held")
    h.setLimit(1, of: q, pausingExcess: true)  // held will pause already: one more, the latest started
    let excessAsked = h.pauseFlag("excess") && !h.pauseFlag("kept")
    #expect(excessAsked)
    h.event { scheduler, now, effects in scheduler.setSuspended(true, of: q, now: now, &effects) }
    h.event { scheduler, now, effects in scheduler.releaseQueue(q, now: now, &effects) }
    let statesAfterRelease = [h.state("held"), h.state("kept"), h.state("excess")]
    #expect(statesAfterRelease == [.executing, .executing, .executing], "executing ops are not cancelled")
    let heldDecision = h.checkpoint("held")
    #expect(heldDecision == .cancelled)
    let cancelledTasks = h.lastEffects.cancellations?.count ?? 0
    #expect(cancelledTasks == 1, "its task is cancelled too")
    let excessDecision = h.checkpoint("excess")
    #expect(excessDecision == .cancelled)
    h.end("held", with: .failure(CancellationError()))
    h.end("excess", with: .failure(CancellationError()))
    h.end("kept")
    let ends = [h.state("held"), h.state("excess"), h.state("kept")]
    #expect(ends == [.cancelled, .cancelled, .finished])
    let queueFreed = !h.scheduler.queues[q].isLive
    #expect(queueFreed, "the released queue is freed once they ended")
  }
}

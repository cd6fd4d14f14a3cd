import Testing

@testable import ActorQueue

/// Coalescing as transitions of the scheduler value: the shared work is one operation of the
/// queue; each caller's handle follows it.
@Suite("Scheduler value: coalescing")
struct CoalescingSchedulerTests {
  @Test(
    "Callers of one key share one operation of the queue; their handles mirror it and end with its outcome")
  func callersShareOneOperation() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("busy", to: q)
    h.addCoalesced("first", key: "k", to: q)
    h.addCoalesced("second", key: "k", to: q)
    #expect(h.scheduler.unfinishedCount(of: q) == 2, "busy and the shared work")
    #expect(h.state("first") == .ready && h.state("second") == .ready)
    h.end("busy")
    #expect(h.running == ["work:k"])
    #expect(h.state("first") == .executing && h.state("second") == .executing)
    h.end("work:k", with: .success("image"))
    #expect(h.state("first") == .finished && h.state("second") == .finished)
    #expect(
      h.scheduler.outcome(of: h.index("first"))!.isSame(as: h.scheduler.outcome(of: h.index("work:k"))!))
    h.addCoalesced("third", key: "k", to: q)
    #expect(h.running == ["work:k"], "the key is free again: new work started")
    #expect(h.index("work:k") != h.index("first"))
  }

  @Test(
    "Cancelling one caller ends its handle at once and leaves the work running; cancelling the last cancels the work"
  )
  func cancellingCallers() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.addCoalesced("first", key: "k", to: q)
    h.addCoalesced("second", key: "k", to: q)
    h.cancel("first")
    #expect(h.state("first") == .cancelled)
    #expect(h.state("work:k") == .executing)
    #expect(h.lastEffects.cancellations == nil, "the work's task is not cancelled")
    h.cancel("second")
    #expect(h.state("second") == .cancelled)
    #expect(h.lastEffects.cancellations?.count == 1, "the last caller gone: the work's task is cancelled")
    h.end("work:k", with: .failure(CancellationError()))
    #expect(h.state("work:k") == .cancelled)
  }

  @Test("Waiting shared work whose callers all cancel ends at once, without running")
  func waitingWorkCancelled() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("busy", to: q)
    h.addCoalesced("only", key: "k", to: q)
    h.cancel("only")
    #expect(h.state("work:k") == .cancelled)
    #expect(h.scheduler.unfinishedCount(of: q) == 1)
    #expect(h.runToCompletion() == ["busy"])
  }

  @Test("The work takes the highest priority of the callers still waiting for it")
  func priorityFollowsCallers() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("busy", to: q)
    h.add("normal", to: q)
    h.addCoalesced("low", key: "k", priority: .low, to: q)
    h.addCoalesced("high", key: "k", priority: .high, to: q)
    #expect(h.scheduler.priority(of: h.index("work:k")) == .high)
    h.cancel("high")
    #expect(h.scheduler.priority(of: h.index("work:k")) == .low)
    let low = h.index("low")
    h.event { scheduler, _, _ in scheduler.setPriority(.veryHigh, of: low) }
    #expect(h.runToCompletion() == ["busy", "work:k", "normal"])
  }

  @Test("A caller's handle is a dependency like any operation; a failure of the work fails every caller")
  func followerAsDependencyAndFailure() throws {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 2)
    h.addCoalesced("caller", key: "k", to: q)
    h.makeOperation("after")
    try h.depend(h["after"], on: h["caller"], requiring: .success)
    try h.submit(["after"], to: q)
    #expect(h.state("after") == .pending)
    struct Failure: Error {}
    h.end("work:k", with: .failure(Failure()))
    #expect(h.state("caller") == .failed)
    #expect(h.state("after") == .failed, "it required the caller's handle to finish")
  }

  @Test("Pausing a caller's handle pauses the shared work")
  func pauseForwards() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.addCoalesced("caller", key: "k", to: q)
    h.pause("caller")
    #expect(h.checkpoint("work:k") == .suspended)
    #expect(h.state("caller") == .paused && h.scheduler.isPaused(h.index("caller")))
    h.resume("caller")
    #expect(h.checkpointLog.take() == ["work:k resumed"])
    #expect(h.state("caller") == .executing)
  }
}

import Testing

@testable import ActorQueue

/// An operation's phase — the one field of its record that says where it is — through a life,
/// and the check the random testers run after every step, shown to catch what it is for.
@Suite("Scheduler value: one phase per operation")
struct PhaseTests {
  /// The phase of `name`, as the pattern a test compares.
  private func kind(_ h: SchedulerHarness, _ name: String) -> String {
    switch h.scheduler.operations[h.index(name)].phase {
    case .pending: "pending"
    case .ready: "ready"
    case .executing(.worker): "executing on a worker"
    case .executing(.external): "executing elsewhere"
    case .detached: "detached"
    case .paused(let body): body.stamp == nil ? "paused" : "paused, in the ready set"
    case .resumed: "resumed"
    case .following: "following"
    case .ended(let state): "ended \(state)"
    case .modifying: "modifying"
    }
  }

  private func expectAgreement(
    _ h: SchedulerHarness, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let problems = PhaseCheck.problems(in: h.scheduler, settled: true)
    #expect(problems.isEmpty, "\(comment): \(problems)", sourceLocation: sourceLocation)
  }

  @Test("A body's life: pending, ready, executing, paused with its waiter, resumed, executing again, ended")
  func lifeOfAPausedBody() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", to: q)
    h.add("b", to: q)
    _ = h.makeOperation("c")
    #expect(kind(h, "c") == "pending", "not in a queue yet")
    #expect(kind(h, "a") == "executing on a worker")
    #expect(kind(h, "b") == "ready")
    expectAgreement(h, "one executing, one ready")

    h.pause("a")
    #expect(kind(h, "a") == "executing on a worker", "asked to pause: it pauses at its checkpoint")
    #expect(h.checkpoint("a", token: 1) == .suspended)
    #expect(h.checkpoint("a", token: 2) == .suspended, "a second task of the body waits too")
    #expect(kind(h, "a") == "paused")
    guard case .paused(let body) = h.scheduler.operations[h.index("a")].phase else {
      Issue.record("a is not paused")
      return
    }
    #expect(body.waiters.map(\.token) == [1, 2])
    #expect(kind(h, "b") == "executing on a worker", "the slot went to b")
    expectAgreement(h, "a paused and held")

    h.resume("a")
    #expect(kind(h, "a") == "resumed")
    #expect(h.state("a") == .ready, "a resumed body reads as ready: it waits for a slot")
    expectAgreement(h, "a resumed, waiting for b's slot")

    h.end("b")
    #expect(kind(h, "a") == "executing on a worker", "given b's slot, it continues on its own task")
    #expect(h.scheduler.operations[h.index("a")].worker === body.worker)
    expectAgreement(h, "a continues")

    h.end("a")
    #expect(kind(h, "a") == "ended finished")
    #expect(kind(h, "b") == "ended finished")
    expectAgreement(h, "all ended")
  }

  @Test("Paused for the excess, a body waits in the ready set; pausing it holds it there no more")
  func excessPausedBodyIsInTheReadySet() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 2)
    h.add("a", "b", to: q)
    h.setLimit(1, of: q, pausingExcess: true)
    let requested = ["a", "b"].filter { h.pauseFlag($0) }
    #expect(requested.count == 1)
    let paused = requested[0]
    #expect(h.checkpoint(paused) == .suspended)
    #expect(kind(h, paused) == "paused, in the ready set")
    #expect(h.scheduler.queues[q].pausedInReady == 1)
    expectAgreement(h, "one paused for the excess")
    h.pause(paused)
    #expect(kind(h, paused) == "paused", "held by pause(): out of the ready set")
    #expect(h.scheduler.queues[q].pausedInReady == 0)
    expectAgreement(h, "held")
  }

  @Test("A caller's handle to coalesced work follows its state")
  func followerReadsAsItsWork() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("blocker", to: q)
    _ = h.addCoalesced("x", key: "k", to: q)
    #expect(kind(h, "x") == "following")
    #expect(h.state("x") == .ready)
    h.end("blocker")
    #expect(h.state("x") == .executing)
    expectAgreement(h, "shared work executing")
  }

  @Test("The check names a queue whose counts disagree with its operations' phases")
  func checkCatchesDisagreement() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", "b", to: q)
    expectAgreement(h, "as built")

    var miscounted = h.scheduler
    miscounted.queues[q].pausedInReady += 1
    let pausedProblems = PhaseCheck.problems(in: miscounted, settled: true)
    #expect(pausedProblems.contains { $0.contains("pausedInReady 1, 0 phases") }, "\(pausedProblems)")

    var unlisted = h.scheduler
    unlisted.queues[q].firstStarted = -1
    let startedProblems = PhaseCheck.problems(in: unlisted, settled: true)
    #expect(startedProblems.contains { $0.contains("started list []") }, "\(startedProblems)")
  }
}

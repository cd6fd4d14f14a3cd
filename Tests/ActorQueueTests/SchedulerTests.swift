import Testing

@testable import ActorQueue

/// The scheduler value, driven event by event: no task runs, no real time passes. Each test
/// is a script of events and the exact decisions expected (what runs, what is pending, which
/// workers start).
@Suite("Scheduler value")
struct SchedulerTests {
  // MARK: Starting and ordering

  @Test("The first operation added to an idle queue is claimed for the worker started for it")
  func idleQueueStartsAtOnce() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", to: q)
    #expect(h.spawned == 1)
    #expect(h.running == ["a"])
    #expect(h.state("a") == .executing)
    h.add("b", to: q)
    #expect(h.spawned == 1, "a busy serial queue starts no second worker")
    #expect(h.state("b") == .ready)
  }

  @Test("A batch is submitted whole, then scheduled: on an idle serial queue its highest priority runs first")
  func batchByPriority() throws {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.makeOperation("low", priority: .low)
    h.makeOperation("veryHigh", priority: .veryHigh)
    h.makeOperation("normal")
    try h.submit(["low", "veryHigh", "normal"], to: q)
    #expect(h.running == ["veryHigh"])
    #expect(h.runToCompletion() == ["veryHigh", "normal", "low"])
  }

  @Test("Ready operations start by priority, then in submission order; re-prioritising re-sorts at once")
  func priorityThenFIFO() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("busy", to: q)
    h.add("n1", "n2", to: q)
    h.add("h1", priority: .high, to: q)
    h.add("n3", to: q)
    h.add("l1", priority: .low, to: q)
    let n3 = h.index("n3")
    h.event { scheduler, _, _ in scheduler.setPriority(.veryHigh, of: n3) }
    #expect(h.runToCompletion() == ["busy", "n3", "h1", "n1", "n2", "l1"])
  }

  @Test(
    "Never more than the limit execute; raising it starts waiting operations at once; lowering governs later starts"
  )
  func liveLimit() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", "b", "c", "d", to: q)
    #expect(h.running == ["a"])
    h.event { scheduler, now, effects in scheduler.setLimit(3, of: q, now: now, &effects) }
    #expect(Set(h.running) == ["a", "b", "c"])
    h.event { scheduler, now, effects in scheduler.setLimit(1, of: q, now: now, &effects) }
    #expect(h.running.count == 3, "executing operations are not interrupted")
    h.end("a")
    h.end("b")
    #expect(h.running == ["c"], "no start while as many as the new limit execute")
    h.end("c")
    #expect(h.running == ["d"])
  }

  @Test("Suspension stops starts; cancelling a waiting op still ends it; resuming starts the rest")
  func suspension() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 2)
    h.event { scheduler, now, effects in scheduler.setSuspended(true, of: q, now: now, &effects) }
    h.add("a", "b", "c", to: q)
    #expect(h.spawned == 0)
    #expect(h.state("a") == .ready)
    h.cancel("b")
    #expect(h.state("b") == .cancelled)
    h.event { scheduler, now, effects in scheduler.setSuspended(false, of: q, now: now, &effects) }
    #expect(Set(h.running) == ["a", "c"])
  }

  // MARK: Dependencies

  @Test(
    "A dependency across queues: the dependent is pending, and becomes ready in its own queue when the dependency ends"
  )
  func crossQueueDependency() throws {
    var h = SchedulerHarness()
    let q1 = h.makeQueue(limit: 1)
    let q2 = h.makeQueue(limit: 1)
    let a = h.makeOperation("a")
    let b = h.makeOperation("b")
    try h.event { scheduler, now, effects throws(ActorQueueError) in
      try scheduler.addDependency(a, to: b.recordIndex, requirement: .completion, now: now, &effects)
    }
    try h.submit(["b"], to: q2)
    #expect(h.state("b") == .pending)
    #expect(h.spawned == 0)
    try h.submit(["a"], to: q1)
    #expect(h.running == ["a"])
    h.end("a", with: .failure(TestFailure()))
    #expect(h.state("a") == .failed)
    #expect(h.running == ["b"], "a completion edge releases the dependent however the dependency ended")
  }

  @Test("A cycle is refused and nothing changes")
  func cycleRefused() throws {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    let a = h.makeOperation("a")
    let b = h.makeOperation("b")
    let c = h.makeOperation("c")
    try h.depend(b, on: a)
    try h.depend(c, on: b)
    #expect(throws: ActorQueueError.dependencyCycle) {
      try h.depend(a, on: c)
    }
    #expect(h.scheduler.dependencies(of: a.recordIndex).isEmpty)
    #expect(h.scheduler.operations[a.recordIndex].unfinishedDependencies == 0)
    #expect(h.scheduler.operations[c.recordIndex].dependents.isEmpty)
    try h.submit(["c", "b", "a"], to: q)
    #expect(h.runToCompletion() == ["a", "b", "c"])
  }

  @Test("A failure propagates along must-succeed edges at once, transitively, using no slot")
  func failurePropagation() throws {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    let x = h.makeOperation("x")
    let y = h.makeOperation("y")
    let z = h.makeOperation("z")
    try h.depend(y, on: x, requiring: .success)
    try h.depend(z, on: y, requiring: .success)
    try h.submit(["x", "y", "z"], to: q)
    h.end("x", with: .failure(TestFailure(code: 7)))
    #expect(h.state("y") == .failed)
    #expect(h.state("z") == .failed)
    #expect(h.running.isEmpty)
    let failure = h.scheduler.operations[z.recordIndex].failure as? DependencyFailedError
    #expect(failure?.dependencyID == y.id)
    #expect(failure?.originID == x.id)
    #expect(failure?.underlyingError as? TestFailure == TestFailure(code: 7))
  }

  @Test("A diamond of must-succeed edges and a typed input ends its bottom exactly once")
  func diamondEndsOnce() throws {
    for cancelX in [true, false] {
      var h = SchedulerHarness()
      let q = h.makeQueue(limit: 1)
      h.add("blocker", to: q)
      let x = h.makeOperation("x")
      let a = h.makeOperation("a")
      let d = h.makeOperation("d")
      try h.depend(d, on: x, requiring: .success)
      try h.submit(["x"], to: q)
      h.event { s, now, e in s.submit(a, inputs: [x], to: q, now: now, &e) }
      try h.depend(d, on: a, requiring: .success)
      try h.submit(["d"], to: q)
      if cancelX {
        h.cancel("x")
      } else {
        h.end("blocker")
        h.end("x", with: .failure(TestFailure()))
      }
      let expected: OperationState = cancelX ? .cancelled : .failed
      #expect(h.state("a") == expected)
      #expect(h.state("d") == expected)
    }
  }

  @Test("An input that has failed already ends a new dependent at once, whichever input it is")
  func failedEarlierInput() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("first", to: q)
    h.end("first", with: .failure(TestFailure()))
    h.add("second", to: q)
    h.end("second")
    let dependent = h.makeOperation("dependent")
    let inputs = [h["first"], h["second"]]
    h.event { s, now, e in s.submit(dependent, inputs: inputs, to: q, now: now, &e) }
    #expect(h.state("dependent") == .failed)
    #expect(h.running.isEmpty)
  }

  // MARK: Cancellation

  @Test(
    "cancelAll on an idle queue: a waiting op that a cancellation makes ready is cancelled too, never started"
  )
  func cancelAllStartsNothing() throws {
    var h = SchedulerHarness()
    let outside = h.makeQueue(limit: 1)
    let q = h.makeQueue(limit: 1)
    h.add("external", to: outside)
    let external = h["external"]
    let op1 = h.makeOperation("op1")
    let op2 = h.makeOperation("op2")
    try h.depend(op1, on: external)
    try h.depend(op2, on: op1)
    try h.submit(["op1", "op2"], to: q)
    let before = h.spawned
    h.event { s, now, e in s.cancelAll(in: q, now: now, &e) }
    #expect(h.state("op1") == .cancelled)
    #expect(h.state("op2") == .cancelled)
    #expect(h.spawned == before)
    #expect(h.running == ["external"])
  }

  @Test("Cancelling an executing op asks its worker's task to cancel once; the worker retires after it")
  func cancelExecuting() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", "b", to: q)
    h.cancel("a")
    #expect(h.lastEffects.cancellations?.count == 1)
    h.cancel("a")
    #expect(h.lastEffects.cancellations == nil, "asked once")
    #expect(h.state("a") == .executing)
    h.end("a", with: .failure(TestFailure()))
    #expect(h.state("a") == .cancelled, "once cancellation was requested, a thrown error cancels")
    #expect(h.scheduler.thrownError(of: h.index("a")) as? TestFailure == TestFailure())
    #expect(h.running == ["b"], "a replacement worker runs the next op")
  }

  // MARK: Barriers

  @Test(
    "A barrier waits for everything before it; later ops wait for every unfinished barrier, even when a later one ended"
  )
  func barriers() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 4)
    h.add("before", to: q)
    let b1 = h.makeOperation("b1")
    h.event { s, now, e in s.submitBarrier(b1, to: q, now: now, &e) }
    #expect(h.state("b1") == .pending)
    h.end("before")
    #expect(h.running == ["b1"])
    let b2 = h.makeOperation("b2")
    h.event { s, now, e in s.submitBarrier(b2, to: q, now: now, &e) }
    h.cancel("b2")
    h.add("after", to: q)
    #expect(h.state("after") == .pending, "b1 still executes")
    h.end("b1")
    #expect(h.running == ["after"])
  }

  @Test("removeDependency of a barrier added explicitly too keeps the barrier ordering")
  func barrierEdgeStays() throws {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 4)
    h.add("before", to: q)
    let barrier = h.makeOperation("barrier")
    h.event { s, now, e in s.submitBarrier(barrier, to: q, now: now, &e) }
    let after = h.makeOperation("after")
    try h.depend(after, on: barrier)
    try h.submit(["after"], to: q)
    h.event { s, now, e in s.removeDependency(barrier.recordIndex, from: after.recordIndex, now: now, &e) }
    #expect(h.state("after") == .pending)
    #expect(h.scheduler.dependencies(of: after.recordIndex).map(\.id) == [barrier.id])
  }

  // MARK: Lifetime and ownership

  @Test("What a cancelled waiting op owned leaves the lock in the effects, not released inside it")
  func releasedOutsideTheLock() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: q, now: now, &e) }
    h.add("waiting", to: q)
    h.cancel("waiting")
    #expect(h.lastEffects.garbage.hasHandles, "the queue's reference to the handle")
    #expect(h.scheduler.operations[h.index("waiting")].body == nil)
  }

  @Test("A handle only its queue still held frees its record in the operation's end, in the same event")
  func recordFreedAtTheEndWhenTheQueueHeldTheLastReference() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("fire-and-forget", "kept", to: q)
    h.forget("fire-and-forget")
    let index = h.index("fire-and-forget")
    h.end("fire-and-forget")
    #expect(!h.scheduler.operations[index].isLive, "freed by the end, not left for the handle's deinit")
    #expect(h.lastEffects.garbage.hasHandles, "the handle itself is released after unlocking")
    h.end("kept")
    #expect(h.scheduler.operations[h.index("kept")].isLive, "a handle its caller keeps keeps its record")
    #expect(h.state("kept") == .finished)
  }

  @Test(
    "Record storage: kept while bursts of one size repeat and when the workers catch up for a moment; given back once a second or as many operations as it holds have passed without a quarter of it in use"
  )
  func recordStorageFollowsTheRecentPeak() {
    var scheduler = Scheduler()
    let start = SchedulerInstant.now()
    var clock = start
    @discardableResult
    func burst(_ count: Int) -> [Int] {
      let ids = (0..<count).map { _ in OperationID() }
      let indices = ids.map { id in
        scheduler.createOperation(id: id, name: nil, priority: .normal, work: .typed { () })
      }
      for (index, id) in zip(indices, ids) {
        // Each ends (cancelled), then its handle is dropped: the handle's deinit frees it.
        var effects = SchedulerEffects()
        scheduler.cancel(index, now: { clock }, &effects)
        _ = scheduler.releaseOperation(index, owner: id, now: { clock })
      }
      return indices
    }
    burst(4_000)
    #expect(scheduler.operations.count == 4_000, "the first burst leaves its storage for the next")
    #expect(burst(3_000) == Array(0..<3_000), "kept storage is handed out from the lowest index up")
    #expect(scheduler.operations.count == 4_000, "a burst of about that size reuses it")
    // Every record is free for a moment whenever the workers catch up with a burst still being
    // added: that moment, after a single operation, must not give the storage back.
    clock = start + .milliseconds(10)
    burst(1)
    #expect(
      scheduler.operations.count == 4_000, "a moment with every record free, after little work, keeps it")
    #expect(burst(3_000) == Array(0..<3_000), "and the rest of the burst reuses it")

    // As many operations as it holds, none using a quarter of it, within the window.
    for round in 1...399 {
      burst(10)
      #expect(scheduler.operations.count == 4_000, "judged after \(round * 10) operations: too few to tell")
    }
    burst(10)
    #expect(
      scheduler.operations.count == 0,
      "as many operations as it holds, none using a quarter of it, give it back")
    burst(2_000)
    #expect(scheduler.operations.count == 2_000, "and grows it again when needed")

    // Little work, but a second later.
    burst(10)
    #expect(scheduler.operations.count == 2_000, "judged again at once: kept")
    clock = clock + Scheduler.storageWindow - .milliseconds(1)
    burst(10)
    #expect(scheduler.operations.count == 2_000, "just under the window: kept")
    clock = clock + .milliseconds(1)
    burst(10)
    #expect(scheduler.operations.count == 0, "once the window has passed, a little work gives it back")
  }

  @Test(
    "Record storage freed by the ends of operations (the queue held the last reference) is judged at the end of the event, with its time"
  )
  func recordStorageJudgedWhenEndsFreeTheLastRecords() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    func runAlone(_ name: String) {
      h.add(name, to: q)
      h.forget(name)
      h.end(name)
      if h.lingering {
        h.now += .milliseconds(1)
        h.endLinger()
      }
    }
    h.event { s, now, e in s.setSuspended(true, of: q, now: now, &e) }
    let names = (0..<1_100).map { "op\($0)" }
    for name in names {
      h.add(name, to: q)
      h.forget(name)
    }
    h.event { s, now, e in s.setSuspended(false, of: q, now: now, &e) }
    for name in names { h.end(name) }
    #expect(h.scheduler.operations.count == 1_100, "every record free after a burst that used them all: kept")
    runAlone("just after")
    #expect(h.scheduler.operations.count == 1_100, "one operation at once, at once: too little to tell")
    h.now += Scheduler.storageWindow
    runAlone("a second later")
    #expect(h.scheduler.operations.count == 0, "one operation at once, a second later: given back")
  }

  @Test(
    "cancelAllOperations() leaves the records of handles only the queue held for their deinit: its critical section only cancels"
  )
  func cancelAllLeavesRecordsForTheDeinits() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: q, now: now, &e) }
    h.add("a", "b", to: q)
    h.forget("a")
    h.forget("b")
    h.event { s, now, e in s.cancelAll(in: q, now: now, &e) }
    #expect(h.state("a") == .cancelled && h.state("b") == .cancelled)
    #expect(h.scheduler.operations[h.index("a")].isLive, "freed by the handle's deinit, after unlocking")
    #expect(h.scheduler.operations[h.index("b")].isLive)
    #expect(!h.scheduler.isEndingInBulk)
  }

  @Test("A record an ended dependent still lists weakly is left for its handle's deinit")
  func weaklyListedRecordIsNotFreedAtTheEnd() throws {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("dependency", to: q)
    let dependent = h.makeOperation("dependent")
    try h.depend(dependent, on: h["dependency"])
    try h.submit(["dependent"], to: q)
    h.cancel("dependent")  // ends, and lists its dependency weakly from now on
    h.forget("dependency")
    let index = h.index("dependency")
    h.end("dependency")
    #expect(h.scheduler.operations[index].isLive, "a weak reference may still be loaded under the lock")
    #expect(h.scheduler.operations[index].isWeaklyReferenced)
  }

  @Test("An ended operation stops owning its dependencies, so no cycle of references can form")
  func endedOperationsOwnNothing() throws {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("d", to: q)
    let d = h["d"]
    let x = h.makeOperation("x")
    try h.depend(x, on: d)
    try h.submit(["x"], to: q)
    h.cancel("x")
    #expect(h.scheduler.operations[x.recordIndex].dependencies.allSatisfy { $0.handle == nil })
    #expect(h.scheduler.dependencies(of: x.recordIndex).map(\.id) == [h["d"].id], "still listed while alive")
  }

  @Test("A released suspended queue cancels its waiting ops and is freed")
  func releasedSuspendedQueue() {
    var h = SchedulerHarness()
    let reference = h.scheduler.createQueue(name: nil, limit: 1, taskPriority: nil)
    let q = reference.index
    h.event { s, now, e in s.setSuspended(true, of: q, now: now, &e) }
    h.add("a", "b", to: q)
    h.event { s, now, e in s.releaseQueue(q, now: now, &e) }
    #expect(h.state("a") == .cancelled)
    #expect(h.state("b") == .cancelled)
    #expect(!h.scheduler.isLive(reference))
  }

  @Test("A released queue that still works is freed when its last op ends and its worker retires")
  func releasedBusyQueue() {
    var h = SchedulerHarness()
    let reference = h.scheduler.createQueue(name: nil, limit: 1, taskPriority: nil)
    let q = reference.index
    h.add("a", to: q)
    h.event { s, now, e in s.releaseQueue(q, now: now, &e) }
    #expect(h.scheduler.isLive(reference))
    #expect(h.state("a") == .executing)
    h.end("a")
    #expect(!h.scheduler.isLive(reference))
  }

  // MARK: Lingering, with the clock as an input

  @Test(
    "A queue whose work came back quickly lingers once idle; a linger that runs out retires and stops lingering"
  )
  func lingerWithManualTime() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.add("a", to: q)
    h.end("a")
    #expect(!h.lingering, "the first idle spell is unknown: no linger")
    #expect(h.workers.isEmpty)
    h.now += .microseconds(10)
    h.add("b", to: q)
    h.end("b")
    #expect(h.lingering, "the last idle spell was 10 µs: lingering pays")
    h.now += .microseconds(20)
    h.add("c", to: q)
    #expect(h.lastEffects.wakeLingerer)
    #expect(h.spawned == 2, "the lingering worker takes it: no new task")
    h.endLinger()
    #expect(h.running == ["c"])
    h.end("c")
    #expect(h.lingering)
    h.now += LingerPolicy.window
    h.endLinger()
    #expect(h.workers.isEmpty, "the window ran out: the worker retires")
    h.now += .microseconds(10)
    h.add("d", to: q)
    h.end("d")
    #expect(!h.lingering, "a linger that ran out turns lingering off until a short spell is seen")
  }
}

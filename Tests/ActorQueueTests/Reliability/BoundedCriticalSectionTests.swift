import Synchronization
import TestSupport
import Testing

@testable import ActorQueue

/// Found when the API was tried as a hostile user would (issue 25): every queue shares the
/// scheduler's lock, and `cancelAllOperations()` on 100,000 waiting operations held it long
/// enough that another queue's `addOperation` waited 11–33 ms. Every call whose work grows with
/// a queue or a fan-out now does it in slices of at most `Scheduler.sliceLimit` units per hold
/// of the lock (`BulkWork`), and still returns only once it is all done. On the scheduler value
/// (the harness holds the slices back, so other events run between them) and on real queues.
@Suite(
  "Reliability: no call holds the lock for work that grows with a queue",
  .timeLimit(.minutes(hangLimitMinutes)))
struct BoundedCriticalSectionTests {
  /// A harness whose events leave their work beyond `limit` units for the test to continue.
  private func harness(sliceLimit limit: Int) -> SchedulerHarness {
    var h = SchedulerHarness()
    h.scheduler.sliceLimit = limit
    h.continuesBulkAtOnce = false
    return h
  }

  private func names(_ prefix: String, _ count: Int) -> [String] { (0..<count).map { "\(prefix)\($0)" } }

  /// A queue of limit 1 running "blocker" with "w0"…"w4999" waiting, all on key "y", and a queue
  /// of limit 4 whose "holder" holds "x"; returns both.
  private func aKeyedBacklogBesideAHolder(_ h: inout SchedulerHarness) -> (walked: Int, other: Int) {
    let walked = h.makeQueue(limit: 1)
    let other = h.makeQueue(limit: 4)
    h.add("blocker", traits: [.exclusive("y")], to: walked)
    for name in names("w", 5_000) { h.add(name, traits: [.exclusive("y")], to: walked) }
    h.add("holder", traits: [.exclusive("x")], to: other)
    return (walked, other)
  }

  /// A queue without keys, limit 1, running "blocker" with "w0"…"w4999" waiting, whose
  /// `cancelAllOperations()` has done its first slice; returns the queue.
  private func cancellingAPlainBacklog(_ h: inout SchedulerHarness) -> Int {
    let plain = h.makeQueue(limit: 1)
    h.add("blocker", to: plain)
    for name in names("w", 5_000) { h.add(name, to: plain) }
    h.event { s, now, e in s.cancelAll(in: plain, now: now, &e) }
    return plain
  }

  @Test(
    "cancelAllOperations() on 5,000 waiting ops: at most the slice limit per hold, the queue starts nothing between slices, other queues run"
  )
  func cancelAllInSlices() {
    var h = harness(sliceLimit: 100)
    let q = h.makeQueue(limit: 1)
    let other = h.makeQueue(limit: 1)
    h.add("blocker", to: q)
    let waiting = names("w", 5_000)
    for name in waiting { h.add(name, to: q) }
    h.event { s, now, e in s.cancelAll(in: q, now: now, &e) }
    #expect(!h.pendingBulk.isEmpty, "5,000 cancellations do not fit one slice of 100")
    #expect(h.scheduler.largestSlice <= 100)
    #expect(waiting.filter { h.state($0) == .cancelled }.count < 200)

    // Between slices: another queue's submission starts at once; the blocker's end frees the
    // cancelled queue's slot, but nothing there starts (the rest is about to be cancelled).
    h.add("elsewhere", to: other)
    #expect(h.running.contains("elsewhere"))
    h.end("blocker")
    #expect(!h.running.contains { $0.hasPrefix("w") })

    var slices = 1
    while h.continueBulk() {
      slices += 1
      #expect(!h.running.contains { $0.hasPrefix("w") })
    }
    #expect(slices >= 50)
    #expect(h.scheduler.largestSlice <= 100)
    #expect(waiting.allSatisfy { h.state($0) == .cancelled })
    #expect(h.scheduler.unfinishedCount(of: q) == 0)
  }

  @Test(
    "An op's end releases its 5,000 dependents in slices; they start by priority once all are released, as if in one event"
  )
  func dependentsInSlices() throws {
    var h = harness(sliceLimit: 100)
    let q = h.makeQueue(limit: 1)
    let dependentsQueue = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: dependentsQueue, now: now, &e) }
    h.add("input", to: q)
    let dependents = names("d", 5_000)
    for name in dependents {
      h.makeOperation(name)
      try h.depend(h[name], on: h["input"])
    }
    let last = h.makeOperation("urgent", priority: .veryHigh)
    try h.depend(last, on: h["input"])
    try h.submit(dependents + ["urgent"], to: dependentsQueue)
    h.event { s, now, e in s.setSuspended(false, of: dependentsQueue, now: now, &e) }
    #expect(h.running == ["input"])

    h.end("input")
    #expect(!h.pendingBulk.isEmpty)
    while h.continueBulk() {
      #expect(!h.running.contains { $0.hasPrefix("d") }, "started before the urgent dependent was released")
    }
    #expect(h.scheduler.largestSlice <= 100)
    #expect(h.running == ["urgent"], "the highest priority of all 5,001 starts first")
    #expect(dependents.allSatisfy { h.state($0) == .ready })
  }

  @Test("An op that fails ends its 5,000 dependents that required it, in slices, transitively")
  func failedDependentsInSlices() throws {
    var h = harness(sliceLimit: 50)
    let q = h.makeQueue()
    h.add("input", to: q)
    let dependents = names("d", 2_000)
    var previous = "input"
    for name in dependents {
      h.makeOperation(name)
      try h.depend(h[name], on: h["input"], requiring: .success)
      // And a chain beside the fan-out: each also requires the one before it.
      try h.depend(h[name], on: h[previous], requiring: .success)
      previous = name
    }
    try h.submit(dependents, to: q)
    h.end("input", with: .failure(SliceTestFailure()))
    while h.continueBulk() {}
    #expect(h.scheduler.largestSlice <= 50)
    #expect(dependents.allSatisfy { h.state($0) == .failed })
  }

  @Test(
    "A dependent whose required input failed, left to end in a later slice, does not start when submitted, resumed or freed of another edge meanwhile"
  )
  func dependentLeftToEndDoesNotStart() throws {
    for interleaved in ["submit", "resume", "undepend"] {
      var h = harness(sliceLimit: 1)
      let q = h.makeQueue(limit: 1)
      h.add("input", to: q)
      h.end("input", with: .failure(SliceTestFailure()))
      h.makeOperation("middle")
      let late = h.makeOperation("late")
      h.makeOperation("other")
      try h.depend(late, on: h["middle"], requiring: .success)
      if interleaved == "undepend" { try h.depend(late, on: h["other"]) }
      if interleaved == "resume" {
        h.pause("late")
        try h.submit(["late"], to: q)
      }
      // `middle` ends at once (its input failed); `late` is left to the next slice.
      try h.depend(h["middle"], on: h["input"], requiring: .success)
      #expect(h.state("middle") == .failed)
      #expect(h.state("late") == .pending && !h.pendingBulk.isEmpty)
      // Found by the value tester interleaving another caller's call here: `late` started, then
      // the slice ended it while its body ran, and its slot was never given back.
      switch interleaved {
      case "submit": try h.submit(["late"], to: q)
      case "resume": h.resume("late")
      default:
        let late = h.index("late")
        let other = h.index("other")
        h.event { s, now, e in s.removeDependency(other, from: late, now: now, &e) }
        try h.submit(["late"], to: q)
      }
      #expect(!h.running.contains("late"), "\(interleaved)")
      while h.continueBulk() {}
      #expect(h.state("late") == .failed, "\(interleaved)")
      _ = h.runToCompletion()
      h.add("next", to: q)
      if h.lingering { h.endLinger() }  // the worker that ran `input` waits for work a while
      #expect(h.running == ["next"], "\(interleaved): the queue's slot is free")
    }
  }

  @Test(
    "pauseAllOperations() and resumeAllOperations() in slices: nothing starts between slices; resumed, the highest priority starts first"
  )
  func pauseAndResumeAllInSlices() {
    var h = harness(sliceLimit: 100)
    let q = h.makeQueue(limit: 1)
    h.add("blocker", to: q)
    let waiting = names("w", 3_000)
    for name in waiting { h.add(name, to: q) }
    h.add("urgent", priority: .veryHigh, to: q)
    h.pauseAll(in: q)
    #expect(!h.pendingBulk.isEmpty)
    h.end("blocker")  // frees the slot while most of the queue is not held yet
    #expect(h.running.isEmpty)
    while h.continueBulk() { #expect(h.running.isEmpty) }
    #expect(waiting.allSatisfy { h.state($0) == .pending && h.scheduler.isPaused(h.index($0)) })

    h.resumeAll(in: q)
    #expect(!h.pendingBulk.isEmpty)
    #expect(h.running.isEmpty)
    while h.continueBulk() {
      if !h.pendingBulk.isEmpty { #expect(h.running.isEmpty) }
    }
    #expect(h.pendingBulk.isEmpty)
    #expect(h.running == ["urgent"], "added last, resumed last, started first: all resumed before any start")
    #expect(h.scheduler.largestSlice <= 100)
  }

  @Test(
    "Awaiting the tail of a 5,000-op chain escalates it in slices; other queues run between them; the chain's head then starts first"
  )
  func escalationInSlices() throws {
    var h = harness(sliceLimit: 100)
    let q = h.makeQueue(limit: 1)
    let other = h.makeQueue(limit: 1)
    h.scheduler.queues[q].reordersEscalated = true
    h.event { s, now, e in s.setSuspended(true, of: q, now: now, &e) }
    h.add("before", priority: .high, to: q)
    let chain = names("c", 5_000)
    for name in chain { h.add(name, to: q) }
    for (dependency, dependent) in zip(chain, chain.dropFirst()) {
      try h.depend(h[dependent], on: h[dependency])
    }
    let tail = h.index("c4999")
    let high = TaskPriority.high.rawValue
    h.event { s, now, e in s.escalate(tail, to: high, now: now, &e) }
    #expect(!h.pendingBulk.isEmpty, "5,000 escalations do not fit one slice of 100")
    #expect(h.scheduler.largestSlice <= 100)
    h.add("elsewhere", to: other)
    #expect(h.running.contains("elsewhere"), "another queue's submission starts between the slices")
    var slices = 1
    while h.continueBulk() { slices += 1 }
    #expect(slices >= 50)
    #expect(h.scheduler.largestSlice <= 100)
    #expect(chain.allSatisfy { h.scheduler.operations[h.index($0)].escalation == high })
    #expect(h.scheduler.operations[h.index("c0")].priority == .veryHigh)
    // Escalated again to the same priority: nothing left to raise, no slice handed out.
    h.event { s, now, e in s.escalate(tail, to: high, now: now, &e) }
    #expect(h.pendingBulk.isEmpty)
    h.event { s, now, e in s.setSuspended(false, of: q, now: now, &e) }
    #expect(h.running.contains("c0") && h.state("before") == .ready, "the escalated head goes first")
  }

  /// Found by the real-queue tester (run 9105, script 3877): a child failed by its deadline left
  /// its siblings' cancel walk, two operations, to the clock's next slice, and arbitration waited
  /// for it; the group's own task ended the group first, and its dependent took a permit the
  /// model had granted in the advance.
  @Test(
    "A failed child's siblings are cancelled in the failure's event when they fit its slice: nothing is left for a later hold"
  )
  func smallSiblingCancelEndsInItsEvent() {
    var h = harness(sliceLimit: Scheduler.defaultSliceLimit)
    let q = h.makeQueue(limit: 1)
    h.add("group", to: q)
    let group = h.scheduler.createGroupQueue(
      of: h.index("group"), name: nil, limit: 1, policy: .cancelSiblings
    ).reference.index
    h.add("failing", "sibling", to: group)
    #expect(h.running.contains("failing") && h.state("sibling") == .ready)
    h.end("failing", with: .failure(ScriptError(op: 0)))
    #expect(h.pendingBulk.isEmpty, "the walk fits the event's slice")
    #expect(h.state("sibling") == .cancelled)
    #expect(h.scheduler.callsInSlices == 0 && !h.scheduler.arbitrationDeferred)
  }

  @Test("A suspended queue released with 3,000 waiting ops cancels them in slices")
  func releaseInSlices() {
    var h = harness(sliceLimit: 100)
    let q = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: q, now: now, &e) }
    let waiting = names("w", 3_000)
    for name in waiting { h.add(name, to: q) }
    h.event { s, now, e in s.releaseQueue(q, now: now, &e) }
    #expect(!h.pendingBulk.isEmpty)
    while h.continueBulk() {}
    #expect(waiting.allSatisfy { h.state($0) == .cancelled })
    #expect(h.scheduler.largestSlice <= 100)
  }

  @Test(
    "Between the slices of a call that changes only queues without keys, a queue with keys decides at once: it parks, starts and hands over"
  )
  func keysDecideBetweenSlicesOfAPlainCall() {
    var h = harness(sliceLimit: 100)
    let keyed = h.makeQueue(limit: 4)
    h.add("holder", traits: [.exclusive("x")], to: keyed)
    _ = cancellingAPlainBacklog(&h)
    #expect(!h.pendingBulk.isEmpty && !h.scheduler.arbitrationDeferred)
    #expect(h.pendingBulk.allSatisfy { !$0.touchesArbitration })

    // Another caller's adds: the one whose key is taken waits for it, the one without starts.
    h.add("waiter", traits: [.exclusive("x")], to: keyed)
    h.add("free", to: keyed)
    #expect(h.state("waiter") == .pending && h.running.contains("free"))
    let report = h.scheduler.waitReport(of: keyed, now: { h.now })
    #expect(report.map(\.waitingFor) == [[.key("x", heldBy: h["holder"].id)]])
    // The key is handed over at the holder's end, before the call's next slice.
    h.end("holder")
    #expect(h.running.contains("waiter"))
    #expect(h.state("w4999") == .ready, "the call is not done")
    while h.continueBulk() {}
    #expect(names("w", 5_000).allSatisfy { h.state($0) == .cancelled })
    #expect(h.scheduler.arbitratedCallsInSlices == 0 && h.scheduler.callsInSlices == 0)
  }

  @Test(
    "Between the slices of a call that changes a queue with keys, arbitration waits for its end, in every queue: the outcome is the whole call's"
  )
  func keysWaitForACallThatChangesThem() {
    var h = harness(sliceLimit: 100)
    let (walked, other) = aKeyedBacklogBesideAHolder(&h)
    h.event { s, now, e in s.cancelAll(in: walked, now: now, &e) }
    #expect(h.pendingBulk.contains { $0.touchesArbitration } && h.scheduler.arbitrationDeferred)
    h.add("later", to: other)
    #expect(h.state("later") == .ready, "decided with the call's outcome")
    while h.continueBulk() {}
    #expect(h.running.contains("later"))
    #expect(h.scheduler.arbitratedCallsInSlices == 0 && !h.scheduler.arbitrationDeferred)
  }

  @Test(
    "A key released while arbitration waits for a call in slices: its waiter is not ready yet, and the clock's quiescence says a start may come (settle() waits for it)"
  )
  func quiescenceCountsADeferredArbitration() {
    var h = harness(sliceLimit: 100)
    let (walked, other) = aKeyedBacklogBesideAHolder(&h)
    h.add("waiter", traits: [.exclusive("x")], to: other)
    #expect(h.state("waiter") == .pending && !h.scheduler.quiescence(ofClock: 0).mayStart)
    h.event { s, now, e in s.cancelAll(in: walked, now: now, &e) }
    #expect(h.scheduler.arbitrationDeferred)
    h.end("holder")
    #expect(h.state("waiter") == .pending, "the release is decided with the call's outcome")
    #expect(h.scheduler.quiescence(ofClock: 0).mayStart)
    while h.continueBulk() {}
    #expect(h.running.contains("waiter"))
    #expect(!h.scheduler.quiescence(ofClock: 0).mayStart)
  }

  @Test(
    "A queue that takes its first key between the slices of a call that changes it: arbitration waits for that call's next slice, which looks again"
  )
  func aQueueTakingKeysMidCallDefersForOneSlice() {
    var h = harness(sliceLimit: 100)
    let keyed = h.makeQueue(limit: 4)
    h.add("holder", traits: [.exclusive("x")], to: keyed)
    let plain = cancellingAPlainBacklog(&h)
    #expect(!h.scheduler.arbitrationDeferred)
    // The walked queue takes a key: what the call was found to change is stale.
    h.add("late", traits: [.exclusive("z")], to: plain)
    #expect(h.scheduler.staleCallsInSlices == 1 && h.scheduler.arbitrationDeferred)
    h.add("next", to: keyed)
    #expect(h.state("next") == .ready)
    // Its next slice looks again: the walked queue has keys now, so arbitration waits for its end.
    _ = h.continueBulk()
    #expect(h.scheduler.staleCallsInSlices == 0 && h.scheduler.arbitratedCallsInSlices == 1)
    while h.continueBulk() {}
    #expect(!h.scheduler.arbitrationDeferred && h.running.contains("next"))
    // Added after the call began, "late" is not cancelled by it; it waits for the blocker's slot.
    #expect(h.state("late") == .ready)
    #expect(names("w", 5_000).allSatisfy { h.state($0) == .cancelled })
  }

  @Test(
    "A new queue that takes its first key between the slices of a call is out of its reach: it decides at once"
  )
  func aFreshQueueTakingKeysMidCallDecidesAtOnce() {
    var h = harness(sliceLimit: 100)
    _ = cancellingAPlainBacklog(&h)
    let fresh = h.makeQueue(limit: 2)
    h.add("first", traits: [.exclusive("x")], to: fresh)
    h.add("second", traits: [.exclusive("x")], to: fresh)
    #expect(h.scheduler.staleCallsInSlices == 0 && !h.scheduler.arbitrationDeferred)
    #expect(h.running.contains("first") && h.state("second") == .pending)
    while h.continueBulk() {}
  }

  @Test(
    "Releasing 3,000 dependents in slices: arbitration waits while one may be in a queue with keys, and only so long"
  )
  func releaseDefersArbitrationWhileItMayChangeKeys() throws {
    for keyedLast in [false, true] {
      var h = harness(sliceLimit: 100)
      let plain = h.makeQueue(limit: 1)
      let keyed = h.makeQueue(limit: 4)
      h.add("holder", traits: [.exclusive("x")], to: keyed)
      h.event { s, now, e in s.setSuspended(true, of: plain, now: now, &e) }
      h.add("input", to: plain)
      h.event { s, now, e in s.setSuspended(false, of: plain, now: now, &e) }
      let dependents = names("d", 3_000)
      for name in dependents {
        h.makeOperation(name)
        try h.depend(h[name], on: h["input"])
      }
      try h.submit(dependents, to: plain)
      if keyedLast {
        h.makeOperation("keyedDependent")
        try h.depend(h["keyedDependent"], on: h["input"])
        try h.submit(["keyedDependent"], to: keyed)
      }
      h.end("input")
      #expect(!h.pendingBulk.isEmpty)
      var deferredSlices = 0
      var slices = 0
      while !h.pendingBulk.isEmpty {
        slices += 1
        if h.scheduler.arbitrationDeferred { deferredSlices += 1 }
        #expect(h.pendingBulk.contains { $0.touchesArbitration } == h.scheduler.arbitrationDeferred)
        if !keyedLast, !h.scheduler.arbitrationDeferred, h.handles["fresh"] == nil {
          // A new queue taking its first key is out of the call's reach: it decides at once.
          let fresh = h.makeQueue(limit: 1)
          h.add("fresh", traits: [.exclusive("y")], to: fresh)
          #expect(h.running.contains("fresh") && !h.scheduler.arbitrationDeferred)
        }
        _ = h.continueBulk()
      }
      #expect(keyedLast || h.running.contains("fresh"))
      if keyedLast {
        // Its release holds its queue until the call ends.
        #expect(deferredSlices == slices)
        #expect(h.running.contains("keyedDependent"))
      } else {
        // Looked at four slices' worth per hold: arbitration is free long before the end.
        #expect(deferredSlices > 0 && deferredSlices <= slices / 2, "\(deferredSlices) of \(slices)")
      }
      #expect(h.scheduler.arbitratedCallsInSlices == 0 && h.scheduler.callsInSlices == 0)
    }
  }

  @Test(
    "Lowering the limit pausing the excess looks at the started bodies only, not at 5,000 waiting ops; and so does each recount"
  )
  func limitChangeLooksAtStartedBodies() {
    var h = harness(sliceLimit: 100)
    let q = h.makeQueue(limit: 3)
    h.add("a", "b", "c", to: q)
    for name in names("w", 5_000) { h.add(name, to: q) }
    #expect(Set(h.running) == ["a", "b", "c"])
    let before = h.scheduler.largestSlice
    h.setLimit(1, of: q, pausingExcess: true)
    #expect(h.pauseFlag("b") && h.pauseFlag("c") && !h.pauseFlag("a"))
    h.end("a")  // a freed slot: the recount withdraws the request that is no longer needed
    #expect(h.pauseFlag("c") && !h.pauseFlag("b"))
    #expect(h.scheduler.largestSlice <= max(before, 10), "a scan of the backlog")
  }

  // MARK: Real queues

  @Test(
    "cancelAllOperations() on 100,000 waiting ops (10,000 in a debug build) lets other callers in between slices, and returns with all of them ended"
  )
  func cancelAllLetsOthersIn() async {
    let waiting = ActorQueue(name: "backlog")
    let other = ActorQueue(name: "ui")
    let keyed = ActorQueue(name: "keyed")
    waiting.isSuspended = true
    let seenLeft = LockedValue<Int?>(nil)
    let keyedState = LockedValue<OperationState?>(nil)
    let ended = Atomic<Int>(0)
    let started = Gate()
    let count = SearchDepth.size(quick: 10_000, deep: 100_000)
    for index in 0..<count {
      let operation = waiting.addOperation {}
      if index == 0 {
        // Runs as the first slice's effect, before the next slice takes the lock: another
        // caller's calls go through while most of the backlog still waits.
        operation.onCompletion { _ in
          seenLeft.withLock { $0 = waiting.operationCount }
          other.addOperation { started.open() }
          // A queue with keys decides at once too: the call changes no queue with keys. (Unless
          // another test's call that changes one is in slices: then it is not asked.)
          let exclusive = keyed.addOperation(traits: [.exclusive("k")]) {}
          if !Engine.read({ $0.arbitrationDeferred }) { keyedState.withLock { $0 = exclusive.state } }
        }
      }
      operation.onCompletion { _ in ended.add(1, ordering: .relaxed) }
    }
    waiting.cancelAllOperations()
    #expect(ended.load(ordering: .relaxed) == count, "every handler ran before the call returned")
    #expect(waiting.operationCount == 0)
    let left = seenLeft.withLock { $0 } ?? 0
    #expect(left >= count - Scheduler.defaultSliceLimit, "another caller ran with \(left) still waiting")
    #expect(keyedState.withLock { $0 }.map { $0 == .executing || $0.isTerminal } != false)
    await started.wait()
    await keyed.waitUntilAllOperationsAreFinished()
  }

  @Test(
    "An op with 100,000 dependents (10,000 in a debug build) on real queues: every dependent runs, released in slices"
  )
  func manyDependentsOnRealQueues() async throws {
    let queue = ActorQueue(name: "fan-out", maxConcurrentOperationCount: 2)
    queue.isSuspended = true
    let input = queue.addOperation { 1 }
    let ran = Atomic<Int>(0)
    var dependents: [AnyQueueOperation] = []
    let count = SearchDepth.size(quick: 10_000, deep: 100_000)
    dependents.reserveCapacity(count)
    for _ in 0..<count {
      dependents.append(queue.addOperation(after: input) { _ in ran.add(1, ordering: .relaxed) })
    }
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(ran.load(ordering: .relaxed) == count)
    #expect(Engine.read { $0.largestSlice } <= Scheduler.defaultSliceLimit)
  }

  @Test(
    "Escalating the tail of a 20,000-op chain on real queues: the call returns with all of it raised, in slices"
  )
  func longChainEscalatedOnRealQueues() async throws {
    let queue = ActorQueue(name: "chain", maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    var chain = [queue.addOperation {}]
    for _ in 1..<20_000 { chain.append(queue.addOperation(after: chain[chain.count - 1]) { _ in }) }
    chain[chain.count - 1].escalate(to: .high)
    #expect(chain[0].effectiveTaskPriority == .high)
    #expect(chain.allSatisfy { $0.effectiveTaskPriority == .high })
    #expect(Engine.read { $0.largestSlice } <= Scheduler.defaultSliceLimit)
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(chain.allSatisfy { $0.state == .finished })
  }
}

private struct SliceTestFailure: Error {}

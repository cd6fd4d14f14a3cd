import Foundation
import Synchronization
import Testing

@testable import ActorQueue

/// The tags of the value executor's scripts (its scheduler values are its own: names can be shared).
let valueScriptTags = (0..<2).map { OperationTag("value-script-tag-\($0)") }

/// Runs scripts on the scheduler value itself (``SchedulerHarness``): no task, no real time, the
/// test is every worker and the clock. Deterministic, so a failing script replays exactly, and
/// fast (thousands of scripts a second), so it searches far more than the real-queue executor.
/// What it checks after every step: each queue executes exactly the ops the model executes
/// (so never more than the limit, nothing while suspended, nothing cancelled or unready, no
/// paused op holding a slot), every op's exact state agrees with the model (ready against
/// pending, paused against ready), each worker's pause flag is set exactly when the model asks
/// its op to pause, each checkpoint decides as the model does and paused bodies are told what
/// the model tells them, a refused call changes nothing the model can see, and each op the model
/// ends ends so, once. Time: the script's manual clock (one of the value's own) reads the model's
/// instant, each op's armed deadline and timeout are the model's, the clock's heap counts exactly
/// those as live, nothing is on the system clock's heap, no op executes that its deadline passed
/// before it started, an ended op's state never changes, and a failed op's error is a timeout
/// exactly when a timer of the model's acted on it.
struct ValueExecutor: ScriptExecutor {
  /// When an op the model starts waits in a queue whose worker lingers unwoken, let the linger
  /// run out (as it does on real queues, after `LingerPolicy.window`) instead of failing. Off:
  /// that was a defect (LingerWakeDefectTests), fixed; kept to look past a regression while
  /// hunting another.
  var waitsOutLingers = false

  /// Refused cycles whose path was checked against the model, and those through shared work.
  static let checkedCycles = Atomic<Int>(0)
  static let checkedCyclesThroughSharedWork = Atomic<Int>(0)
  /// Steps run between two slices of another step's call.
  static let interleavedSteps = Atomic<Int>(0)
  /// Of those, steps on queues with keys or limiters decided at once: the call's work left
  /// changes none of them.
  static let arbitratedBetweenSlices = Atomic<Int>(0)
  /// Timers that acted: on waiting ops (ended at once), on executing ones (then ended `.failed`,
  /// `.finished`); ends a timer may or may not have made (see `Registration.mayTimeOut`).
  static let timedOutWaiting = Atomic<Int>(0)
  static let timedOutExecuting = Atomic<Int>(0)
  static let timedOutFinished = Atomic<Int>(0)
  static let mayTimeOut = Atomic<Int>(0)
  /// Failed attempts retried, and of those, retries that waited out a backoff on the clock.
  static let rescheduled = Atomic<Int>(0)
  /// Ops parked for keys, and waiters that reserved their keys after being passed over.
  static let parked = Atomic<Int>(0)
  static let reserved = Atomic<Int>(0)
  /// Starts that took permits, and heads that waited for them.
  static let grants = Atomic<Int>(0)
  static let throttled = Atomic<Int>(0)
  /// Conditions answered, and of those, "not yet"s.
  static let evaluations = Atomic<Int>(0)
  static let deferrals = Atomic<Int>(0)
  /// Groups ended after their children, children they took, and groups that failed for a child.
  static let groupsEnded = Atomic<Int>(0)
  static let groupChildren = Atomic<Int>(0)
  static let groupsFailedByChildren = Atomic<Int>(0)
  /// Unfinished ops cancelled by tag.
  static let cancelledByTag = Atomic<Int>(0)
  /// Submitters lined up, served from a line, cancelled there; `tryAdd`s refused.
  static let linedUp = Atomic<Int>(0)
  static let served = Atomic<Int>(0)
  static let cancelledWaiting = Atomic<Int>(0)
  static let refusedTries = Atomic<Int>(0)
  /// Ops raised by escalations (each at most once per priority), and reordered by one.
  static let escalatedOps = Atomic<Int>(0)
  static let reorderedOps = Atomic<Int>(0)

  func run(_ script: Script) async -> ScriptFailure? { runHere(script) }

  /// `run(_:)` on the calling thread: the value never suspends.
  func runHere(_ script: Script) -> ScriptFailure? {
    var run = ValueRun(script: script, waitsOutLingers: waitsOutLingers)
    return run.execute()
  }
}

private struct ValueRun {
  let script: Script
  var model: ReferenceModel
  var harness = SchedulerHarness()
  var queues: [Int] = []
  var steps = 0
  let waitsOutLingers: Bool
  /// Whether a call done in slices lets the script's next step run between two of its slices,
  /// as another caller's call does on real queues (three scripts in four, of those with small
  /// slices), when that step commutes with what the call has left (``interleavable(_:)``). In
  /// those scripts a step made of several calls (a batch: its edges, then its submission) also
  /// makes each call with the slices of the ones before still left, as other callers' would be.
  let interleaves: Bool
  /// Whether the last step performed also performed the script's next step, between its slices.
  var tookNext = false
  /// The script's manual clock: an id of this value's own.
  let clock: UInt64 = 1_000_000
  /// The script's shared exclusivity domain.
  let sharedDomain = ExclusivityDomain(name: "script")
  /// The script's rate limiters: slots of this value's own.
  var limiters: [Int] = []
  /// The state each op ended in, as first seen: it must never change.
  var ended: [Int: OperationState] = [:]
  /// Groups: each group op's queue once its body made it, what its body does next (its build
  /// ended, it threw, its cancellation reached its children, it took its last child).
  var groupQueues: [Int: QueueReference] = [:]
  var built: [Int: Bool] = [:]
  var cancelsPassedOn: Set<Int> = []
  var sealed: Set<Int> = []

  init(script: Script, waitsOutLingers: Bool) {
    self.script = script
    self.waitsOutLingers = waitsOutLingers
    interleaves = (script.seed >> 3) % 4 != 0 && script.sliceLimit < Scheduler.defaultSliceLimit
    model = ReferenceModel(queueLimits: script.queueLimits, limiters: script.limiters ?? [])
    harness.scheduler.sliceLimit = script.sliceLimit
    // Aging after 1 or 2 passes over in most scripts (16 would never come up in a short one).
    let aging = [1, 2, 16][Int(script.seed >> 11 % 3)]
    harness.scheduler.agingLimit = aging
    model.agingLimit = aging
    harness.registerManualClock(clock)
    for limit in script.queueLimits {
      queues.append(harness.makeQueue(limit: limit == -1 ? .max : limit, clock: clock))
    }
    for spec in script.limiters ?? [] {
      limiters.append(harness.scheduler.createLimiter(PermitSchedule(spec.rule), clock: clock))
    }
  }

  static func name(_ op: Int) -> String { "op\(op)" }

  mutating func execute() -> ScriptFailure? {
    var index = 0
    while index < script.steps.count {
      let next = index + 1 < script.steps.count ? script.steps[index + 1] : nil
      if let failure = perform(script.steps[index], index: index, next: next) { return failure }
      index += tookNext ? 2 : 1
    }
    for _ in 0..<200 {  // a slow limiter grants one start per drain round
      let steps = model.drainSteps()
      if steps.isEmpty { break }
      for step in steps {
        if let failure = perform(step, index: index) { return failure }
        index += 1
      }
    }
    for entry in model.journal {
      if case .timedOut(let op, _, _) = entry {
        if model.ops[op]?.startedAt == nil {
          ValueExecutor.timedOutWaiting.add(1, ordering: .relaxed)
        } else {
          ValueExecutor.timedOutExecuting.add(1, ordering: .relaxed)
        }
        if model.state(of: op) == .finished { ValueExecutor.timedOutFinished.add(1, ordering: .relaxed) }
      }
      if case .mayTimeOut = entry { ValueExecutor.mayTimeOut.add(1, ordering: .relaxed) }
      if case .rescheduled = entry { ValueExecutor.rescheduled.add(1, ordering: .relaxed) }
      if case .deferred = entry { ValueExecutor.deferrals.add(1, ordering: .relaxed) }
      if case .groupChild = entry { ValueExecutor.groupChildren.add(1, ordering: .relaxed) }
    }
    ValueExecutor.parked.add(model.parks, ordering: .relaxed)
    ValueExecutor.cancelledByTag.add(model.taggedCancels, ordering: .relaxed)
    ValueExecutor.linedUp.add(model.linedUp, ordering: .relaxed)
    ValueExecutor.served.add(model.served, ordering: .relaxed)
    ValueExecutor.cancelledWaiting.add(model.cancelledWaiting, ordering: .relaxed)
    ValueExecutor.refusedTries.add(model.refusedTries, ordering: .relaxed)
    ValueExecutor.escalatedOps.add(model.escalatedOps, ordering: .relaxed)
    ValueExecutor.reorderedOps.add(model.reorderedOps, ordering: .relaxed)
    ValueExecutor.grants.add(model.grants, ordering: .relaxed)
    ValueExecutor.throttled.add(model.throttles, ordering: .relaxed)
    if let violation = model.rateViolation() { return ScriptFailure(step: nil, message: violation) }
    ValueExecutor.reserved.add(model.reservations, ordering: .relaxed)
    for op in model.sortedOpIndices where model.ops[op]?.enqueued == true {
      let state = harness.state(Self.name(op))
      guard state.isTerminal else {
        return ScriptFailure(step: nil, message: "op\(op) is \(state) after the drain")
      }
    }
    return nil
  }

  mutating func perform(_ step: Step, index: Int, next: Step? = nil) -> ScriptFailure? {
    tookNext = false
    // Time moves a little per step: idle spells are short, so workers linger now and then, and
    // every so often a linger runs out.
    harness.now += .microseconds(5)
    if index % 7 == 6, harness.lingering {
      harness.now += LingerPolicy.window
      harness.endLinger()
    }
    let expectation = model.apply(step, index: index)
    harness.continuesBulkAtOnce = !interleaves
    let problem = act(step, expectation)
    harness.continuesBulkAtOnce = true
    if let problem {
      return ScriptFailure(step: index, message: "\(step): \(problem)")
    }
    if !harness.pendingBulk.isEmpty {
      // A few slices, then the next step as another caller's, then the rest of the call.
      for _ in 0..<(Int(script.seed >> 7 &+ UInt64(index)) % 3) { harness.continueBulk() }
      if let next, !harness.pendingBulk.isEmpty, interleavable(next) {
        tookNext = true
        ValueExecutor.interleavedSteps.add(1, ordering: .relaxed)
        harness.now += .microseconds(5)
        let nextExpectation = model.apply(next, index: index + 1)
        if let problem = act(next, nextExpectation) {
          return ScriptFailure(
            step: index + 1, message: "\(next), between the slices of step \(index): \(problem)")
        }
        let scheduler = harness.scheduler
        if scheduler.needsArbitration, !scheduler.arbitrationDeferred {
          return ScriptFailure(
            step: index + 1,
            message: "\(next), between the slices of step \(index): its arbitration was left undone")
        }
        let touches = harness.pendingBulk.contains {
          $0.touchesArbitration || $0.epoch != scheduler.arbitrationEpoch
        }
        if touches != scheduler.arbitrationDeferred {
          return ScriptFailure(
            step: index + 1,
            message: "\(next), between the slices of step \(index): arbitration is "
              + "\(scheduler.arbitrationDeferred ? "" : "not ")deferred, though the work left "
              + "\(touches ? "may change" : "changes no") queue with keys")
        }
        if !touches, let stepQueues = queues(of: next),
          stepQueues.contains(where: { model.queues[$0].hasKeys })
        {
          ValueExecutor.arbitratedBetweenSlices.add(1, ordering: .relaxed)
        }
      }
      while harness.continueBulk() {}
    }
    if harness.scheduler.callsInSlices != 0 || harness.scheduler.arbitratedCallsInSlices != 0
      || harness.scheduler.staleCallsInSlices != 0
    {
      return ScriptFailure(
        step: index,
        message: "after \(step): \(harness.scheduler.callsInSlices) calls in slices left counted "
          + "(\(harness.scheduler.arbitratedCallsInSlices) arbitrated, "
          + "\(harness.scheduler.staleCallsInSlices) stale)")
    }
    syncGroups()
    releaseGoneHandles()
    wakeLingerer()
    if expectation != .skip, let problem = quiesce() {
      return ScriptFailure(step: index, message: "after \(step): \(problem)")
    }
    // Every phase agrees with the ready sets, slots and started bodies.
    let phases = PhaseCheck.problems(in: harness.scheduler, settled: true)
    if !phases.isEmpty {
      return ScriptFailure(step: index, message: "after \(step): phases disagree: \(phases.prefix(4))")
    }
    // Every free record is as `Scheduler.reuse` assumes.
    let notReset = FreeRecordCheck.fieldsNotReset(in: harness.scheduler)
    if !notReset.isEmpty {
      return ScriptFailure(
        step: index, message: "after \(step): free records keep values: \(notReset.prefix(6))")
    }
    let slots = FreeRecordCheck.timeSlotProblems(in: harness.scheduler)
    if !slots.isEmpty {
      return ScriptFailure(step: index, message: "after \(step): time slots disagree: \(slots.prefix(4))")
    }
    if let problem = timeProblem() { return ScriptFailure(step: index, message: "after \(step): \(problem)") }
    if let problem = waitReportProblem() {
      return ScriptFailure(step: index, message: "after \(step): \(problem)")
    }
    if let problem = tagIndexProblem() {
      return ScriptFailure(step: index, message: "after \(step): \(problem)")
    }
    if let problem = capacityProblem() {
      return ScriptFailure(step: index, message: "after \(step): \(problem)")
    }
    if let problem = countsProblem() {
      return ScriptFailure(step: index, message: "after \(step): \(problem)")
    }
    return nil
  }

  /// Each live queue's counts against the model's: by state for its ops, by terminal state for
  /// those that ended in it; the unfinished ones are its `operationCount`.
  private func countsProblem() -> String? {
    let scheduler = harness.scheduler
    for (scriptQueue, queue) in queues.enumerated()
    where queues.lastIndex(of: queue) == scriptQueue && model.isLive(queue: scriptQueue) {
      let real = scheduler.counts(of: queue)
      let expected = model.counts(of: scriptQueue)
      if !ReferenceModel.countsAgree(real, expected) {
        return "q\(scriptQueue)'s counts are \(real), the model's \(expected.counts)"
          + (expected.ambiguous ? " (failed and cancelled summed)" : "")
      }
      if real.unfinished != scheduler.queues[queue].unfinishedCount {
        return "q\(scriptQueue) counts \(real.unfinished) unfinished by state, "
          + "\(scheduler.queues[queue].unfinishedCount) in its list"
      }
    }
    return nil
  }

  /// Each queue's capacity, count and line of waiting submitters against the model's: a waiting
  /// submitter's operation holds nothing (in no queue, no phase but pending, no tag listed), and
  /// submitters wait only while their queue is full.
  private func capacityProblem() -> String? {
    let scheduler = harness.scheduler
    for (scriptQueue, queue) in queues.enumerated()
    where queues.lastIndex(of: queue) == scriptQueue && model.isLive(queue: scriptQueue) {
      let record = scheduler.queues[queue]
      let modelQueue = model.queues[scriptQueue]
      if record.capacity != modelQueue.capacity {
        return "q\(scriptQueue)'s capacity is \(record.capacity), the model's \(modelQueue.capacity)"
      }
      if record.unfinishedCount != model.unfinishedCount(in: scriptQueue) {
        return "q\(scriptQueue) counts \(record.unfinishedCount) unfinished, the model "
          + "\(model.unfinishedCount(in: scriptQueue))"
      }
      let line = scheduler.capacityWaiters(of: queue)
      let expected = model.line(of: scriptQueue).map { harness.index(Self.name($0)) }
      if line != expected {
        let names = line.map { scheduler.operations[$0].name ?? "?" }
        return
          "q\(scriptQueue)'s waiting submitters are \(names), the model's \(model.line(of: scriptQueue).map(Self.name))"
      }
      if record.hasCapacityWaiters != !line.isEmpty {
        return
          "q\(scriptQueue) has waiting submitters flagged \(record.hasCapacityWaiters) with \(line.count) waiting"
      }
      if !line.isEmpty, record.unfinishedCount < record.capacity {
        return
          "q\(scriptQueue) has room (\(record.unfinishedCount) of \(record.capacity)) but submitters wait"
      }
      for index in line {
        let waiting = scheduler.operations[index]
        if waiting.wasEnqueued || waiting.phase.state != .pending || waiting.queue >= 0 {
          return
            "\(waiting.name ?? "?") waits for space but holds something: enqueued \(waiting.wasEnqueued), "
            + "\(waiting.phase.state), queue \(waiting.queue)"
        }
      }
    }
    return nil
  }

  /// The scheduler's tag index against the model: for each tag, every queue's listed operations
  /// (and all of them) are the model's unfinished tagged ops, in creation order; each op's tags
  /// are its own.
  private func tagIndexProblem() -> String? {
    let scheduler = harness.scheduler
    // By record index: an op whose handle is gone (let go of by its released queue) keeps its record.
    func problem(_ found: [(index: Int, id: OperationID)], _ expected: [Int]) -> String? {
      guard found.map(\.index) != expected.map({ harness.index(Self.name($0)) }) else { return nil }
      let names = found.map { scheduler.operations[$0.index].name ?? "\($0.id)" }
      return "\(names); the model: \(expected.map(Self.name))"
    }
    for tag in valueScriptTags.indices {
      let id = valueScriptTags[tag].id
      if let problem = problem(scheduler.tagged(id, in: nil), model.tagged(tag, in: nil)) {
        return "tagged t\(tag): \(problem)"
      }
      for queue in model.queues.indices where model.isLive(queue: queue) && queue < queues.count {
        if let problem = problem(scheduler.tagged(id, in: queues[queue]), model.tagged(tag, in: queue)) {
          return "q\(queue) tagged t\(tag): \(problem)"
        }
      }
    }
    // Each tag's list: in creation order, its dead entries counted exactly, none left empty.
    for (tag, members) in scheduler.taggedOperations {
      let ids = members.order.map(\.id)
      let dead = members.order.filter { !TagMembers.isLive($0, in: scheduler.operations) }.count
      if ids != ids.sorted() || Set(ids).count != ids.count || dead != members.dead || members.isEmpty {
        return "tag \(tag)'s list: \(members.order.count) entries, \(dead) dead (counted \(members.dead)), "
          + "in creation order: \(ids == ids.sorted())"
      }
    }
    for op in model.sortedOpIndices {
      guard let handle = harness.handles[Self.name(op)] else { continue }
      let tags = Set(
        scheduler.tags(of: handle.recordIndex).compactMap { id in
          valueScriptTags.firstIndex { $0.id == id }
        })
      if tags != model.ops[op]!.tags { return "op\(op) has tags \(tags); the model: \(model.ops[op]!.tags)" }
    }
    return nil
  }

  /// Each queue's wait report against the model: exactly the ops that wait (and the paused bodies
  /// not running to their end), each with what the model says it waits for.
  private func waitReportProblem() -> String? {
    let scheduler = harness.scheduler
    let manual = QueueClock(id: clock)
    func instant(_ seconds: Int) -> QueueDeadline {
      QueueDeadline(clock: manual, nanoseconds: Int64(seconds) * 1_000_000_000)
    }
    // By its record when the script dropped its handle (an unfinished op's record is its own).
    func id(of op: Int) -> OperationID? {
      if let handle = harness.handles[Self.name(op)] { return handle.id }
      guard let index = harness.forgotten[Self.name(op)], model.ops[op].map({ !$0.state.isTerminal }) ?? false
      else { return nil }
      return scheduler.operations[index].id
    }
    var opOfID: [OperationID: Int] = [:]
    for op in model.sortedOpIndices {
      if let id = id(of: op) { opOfID[id] = op }
    }
    // A record a released queue freed may be a group's queue's now: the latest index names it.
    for (scriptQueue, queue) in queues.enumerated() where queues.lastIndex(of: queue) == scriptQueue {
      var reported: [Int: OperationWaitReport] = [:]
      for report in scheduler.waitReport(of: queue, now: { harness.now }) {
        guard let op = opOfID[report.id] else { continue }  // shared work: no handle of the script's
        reported[op] = report
      }
      for op in model.sortedOpIndices {
        guard let modelOp = model.ops[op], modelOp.queue == scriptQueue, modelOp.enqueued,
          modelOp.leader == nil,
          !modelOp.state.isTerminal
        else { continue }
        let waits =
          modelOp.state == .waiting || (modelOp.pausedInBody && !modelOp.cancelRequested && !modelOp.timedOut)
        guard let report = reported.removeValue(forKey: op) else {
          if waits { return "op\(op) waits, but queue \(scriptQueue)'s wait report leaves it out" }
          continue
        }
        guard waits else { return "op\(op) runs, but the wait report says it waits for \(report.waitingFor)" }
        let suspended = model.queues[scriptQueue].suspended
        var expected: [OperationWaitReport.Reason] = []
        var dependencies: Set<OperationID> = []
        if modelOp.state == .waiting {
          for dependency in modelOp.allDependencies
          where model.ops[dependency].map({ !$0.state.isTerminal }) ?? false {
            if let id = id(of: dependency) { dependencies.insert(id) }
          }
          if model.isParked(op) {
            for (lock, by) in model.blockingLocks(of: op) {
              // By its record: the script may have dropped the holder's handle.
              let holder = scheduler.operations[harness.index(Self.name(by))].id
              expected.append(.key(scriptKeys[lock.key], heldBy: holder))
            }
          } else if dependencies.isEmpty, !modelOp.pauseHeld, modelOp.backoffAt == nil {
            if !suspended { expected.append(.slot) }
            // Ready, not parked (its queue cannot start it now): the keys another holds too.
            for (lock, by) in model.blockingLocks(of: op) {
              let holder = scheduler.operations[harness.index(Self.name(by))].id
              expected.append(.key(scriptKeys[lock.key], heldBy: holder))
            }
          } else if modelOp.pauseHeld {
            expected.append(.paused)
          }
        } else if modelOp.pauseHeld {
          expected.append(.paused)
        } else if !suspended {
          expected.append(.slot)
        }
        if let head = model.throttledHead(of: scriptQueue), head.op == op {
          if head.hasRoom { expected.removeAll { $0 == .slot } }
          expected.append(.permits(until: instant(head.until)))
        }
        if suspended { expected.append(.suspended) }
        if let at = modelOp.backoffAt {
          expected.append(
            modelOp.deferred
              ? .condition(ConditionCode.conditionName(op), until: instant(at)) : .retry(at: instant(at)))
        }
        if let at = modelOp.deadlineAt { expected.append(.deadline(instant(at))) }
        let reportedDependencies = Set(
          report.waitingFor.filter { $0.kind == .dependency }.compactMap(\.operation))
        let others = report.waitingFor.filter { $0.kind != .dependency }
        if reportedDependencies != dependencies || others != expected {
          return "op\(op)'s wait report says \(report.waitingFor), expected dependencies "
            + "\(dependencies.sorted()) and \(expected)"
        }
      }
      // Then the operations of waiting submitters, first served first.
      let waitingOrder = scheduler.waitReport(of: queue, now: { harness.now }).filter {
        $0.waitingFor == [.capacity]
      }.compactMap { opOfID[$0.id] }
      if waitingOrder != model.line(of: scriptQueue) {
        return
          "queue \(scriptQueue)'s wait report lists \(waitingOrder.map(Self.name)) waiting for capacity, "
          + "the model \(model.line(of: scriptQueue).map(Self.name))"
      }
      for op in waitingOrder { reported[op] = nil }
      if let (op, report) = reported.first {
        return "op\(op) is in queue \(scriptQueue)'s wait report (\(report)) but not the model's waiting ops"
      }
    }
    return nil
  }

  /// The clocks, timers and timed-out ends against the model (see the type's comment).
  private mutating func timeProblem() -> String? {
    let scheduler = harness.scheduler
    let second: Int64 = 1_000_000_000
    if scheduler.systemTimers.live != 0 || !scheduler.systemTimers.isEmpty
      || scheduler.armedSystemTimer != nil
    {
      return
        "the system clock has timers (\(scheduler.systemTimers.live) live), though only a manual clock is used"
    }
    if scheduler.manualNow(of: clock) != Int64(model.now) * second {
      return "the clock reads \(scheduler.manualNow(of: clock)) ns, expected \(model.now) s"
    }
    let live = scheduler.manualClocks[clock]?.timers.live ?? -1
    var armed = 0
    for (index, record) in scheduler.operations.enumerated() where record.isLive {
      let timers = scheduler.armedTimers(of: index)
      armed += (timers.deadline == nil ? 0 : 1) + (timers.timeout == nil ? 0 : 1)
      armed += scheduler.armedBackoff(of: index) == nil ? 0 : 1
    }
    // Rate limits: each queue's permit timer and each limiter's permits are the model's.
    for (scriptQueue, queue) in queues.enumerated()
    where scheduler.queues[queue].isLive && queues.lastIndex(of: queue) == scriptQueue {
      let armedThrottle = scheduler.queues[queue].armedThrottle
      if armedThrottle != nil { armed += 1 }
      let expected = model.queues[scriptQueue].armedThrottle.map { Int64($0) * second }
      if armedThrottle != expected {
        return
          "q\(scriptQueue)'s permit timer is at \(armedThrottle.map(String.init) ?? "none") ns, expected "
          + "\(expected.map(String.init) ?? "none")"
      }
    }
    for (number, slot) in limiters.enumerated()
    where scheduler.limiterStates[slot].schedule != model.limiterSchedules[number] {
      return "limiter \(number)'s permits are \(scheduler.limiterStates[slot].schedule), the model's "
        + "\(model.limiterSchedules[number])"
    }
    if live != armed || live != model.armedTimerCount {
      return
        "the clock's heap has \(live) live timers, the records \(armed) armed, the model \(model.armedTimerCount)"
    }
    for op in model.sortedOpIndices where harness.handles[Self.name(op)] != nil {
      let name = Self.name(op)
      let index = harness.index(name)
      let state = harness.state(name)
      if let first = ended[op], first != state { return "op\(op) ended \(first), now shows \(state)" }
      if state.isTerminal, ended[op] == nil { ended[op] = state }
      if state == .executing, model.mustNotExecute(op) {
        return "op\(op) executes though its deadline passed before it started"
      }
      if state.isTerminal {
        if scheduler.time(of: index) != nil || !scheduler.operations[index].timeMarks.isEmpty {
          return "op\(op) ended with its time state kept"
        }
      } else {
        let expected = model.armedTimers(of: op)
        let (deadline, timeout) = scheduler.armedTimers(of: index)
        if deadline != expected.deadline.map({ Int64($0) * second })
          || timeout != expected.timeout.map({ Int64($0) * second })
        {
          return "op\(op) has deadline \(deadline.map { "\($0) ns" } ?? "none") and timeout "
            + "\(timeout.map { "\($0) ns" } ?? "none") armed, expected \(expected)"
        }
        if scheduler.isTimedOut(index) != model.isTimedOut(op) {
          return "op\(op) is\(model.isTimedOut(op) ? " not" : "") timed out, expected otherwise"
        }
        // A retry's backoff: the model's instant, and no slot, no worker, no task held.
        let backoff = scheduler.armedBackoff(of: index)
        if backoff != model.ops[op]?.backoffAt.map({ Int64($0) * second }) {
          return
            "op\(op) has backoff \(backoff.map { "\($0) ns" } ?? "none") armed, expected \(model.ops[op]?.backoffAt.map { "\($0) s" } ?? "none")"
        }
        if model.isInBackoff(op) {
          guard case .pending = scheduler.operations[index].phase, scheduler.operations[index].worker == nil,
            !harness.running.contains(name), scheduler.operations[index].body != nil
          else { return "op\(op) waits out a backoff holding \(scheduler.operations[index].phase)" }
        }
        if model.ops[op]?.retry != nil, scheduler.attemptCount(of: index) != model.attempts(of: op) {
          return
            "op\(op) counts \(scheduler.attemptCount(of: index)) attempts, expected \(model.attempts(of: op))"
        }
      }
      guard state == .failed else { continue }
      let error: (any Error)? =
        if case .failure(let error) = scheduler.operations[index].outcome?.value { error } else { nil }
      let timeout = error as? OperationTimeoutError
      if let expected = model.timeoutEnd(of: op) {
        if expected.either, timeout == nil { continue }
        guard let timeout, timeout.kind == (expected.deadline ? .deadline : .executionTimeout),
          timeout.hadStarted == expected.hadStarted
        else {
          return "op\(op) failed with \(error.map { "\($0)" } ?? "no error"), expected a timeout "
            + "(deadline: \(expected.deadline), had started: \(expected.hadStarted))"
        }
      } else if let timeout {
        return "op\(op) failed with \(timeout), though no timer acted on it"
      }
    }
    return nil
  }

  /// Whether `step` may run between two slices of the work left in ``SchedulerHarness/pendingBulk``
  /// and still agree with the model, which applies the call whole and then `step`: when it acts
  /// only on queues that nothing connects (a dependency, a capture, shared work, keys or rate
  /// limiters arbitrated across queues) to the queues the call has left work in or holds; or,
  /// while that work is only walks cancelling every
  /// operation of their queues, when it cancels an operation of such a queue or adds one to it
  /// (the walk leaves out what was added after the call; its queue starts nothing until the
  /// walk ends, and then starts what the call and the step left ready).
  private func interleavable(_ step: Step) -> Bool {
    // Submitters are served as each slice frees space, the model's after the whole call: never
    // between slices while a queue is bounded.
    guard !model.queues.contains(where: { $0.capacity != .max || !$0.line.isEmpty }) else { return false }
    let work = harness.pendingBulk
    let scheduler = harness.scheduler
    func scriptQueue(ofRecord index: Int) -> Int? { queues.lastIndex(of: scheduler.operations[index].queue) }
    var touched = Set<Int>()
    var walked = Set<Int>()
    var onlyCancelWalks = true
    for bulk in work {
      // A cancel-by-tag call's operations may be anywhere, and so may an escalation's chain:
      // nothing runs between their slices.
      guard bulk.tagCancels.isEmpty, bulk.escalations.isEmpty else { return false }
      for walk in bulk.walks {
        if let queue = queues.lastIndex(of: walk.queue.index) {
          touched.insert(queue)
          walked.insert(queue)
        }
        if walk.kind != .cancel { onlyCancelWalks = false }
      }
      for queue in bulk.held { if let queue = queues.lastIndex(of: queue.index) { touched.insert(queue) } }
      for release in bulk.releases {
        onlyCancelWalks = false
        if let queue = scriptQueue(ofRecord: release.dependency) { touched.insert(queue) }
        for entry in release.entries {
          if let queue = scriptQueue(ofRecord: entry.index) { touched.insert(queue) }
        }
      }
      for end in bulk.ends {
        onlyCancelWalks = false
        if let queue = scriptQueue(ofRecord: end.index) { touched.insert(queue) }
      }
    }
    if onlyCancelWalks, touched == walked {
      switch step {
      case .cancel(let op): if let queue = model.ops[op]?.queue, walked.contains(queue) { return true }
      case .add(_, let queue, _, let body) where walked.contains(queue) && body.captures.isEmpty: return true
      default: break
      }
    }
    // A step on a group's queue not made yet is skipped: never between slices.
    guard let stepQueues = queues(of: step), stepQueues.allSatisfy({ $0 < model.queues.count }) else {
      return false
    }
    // Queues connected by an op's dependency, capture or shared work, as components.
    var component = Array(model.queues.indices)
    func find(_ queue: Int) -> Int {
      var queue = queue
      while component[queue] != queue { queue = component[queue] }
      return queue
    }
    for op in model.ops.values {
      // A group waits for its children: its queue and theirs are one.
      for other in op.allDependencies.compactMap({ model.ops[$0]?.queue }) + op.captures
        + [op.groupQueue].compactMap({ $0 })
      {
        component[find(other)] = find(op.queue)
      }
    }
    // Queues whose starts are arbitrated across queues (keys, possibly in the shared domain; rate
    // limiters, possibly shared) are one too: the scheduler arbitrates once the call has ended, so
    // an op added between its slices competes with what the call freed, as the model's does not.
    let arbitrated = model.queues.indices.filter { model.queues[$0].hasKeys }
    for queue in arbitrated.dropFirst() { component[find(queue)] = find(arbitrated[0]) }
    let touchedComponents = Set(touched.map(find))
    return stepQueues.allSatisfy { !touchedComponents.contains(find($0)) }
  }

  /// The queues `step` acts on (its own, its ops', what its bodies capture); nil for the steps
  /// that move bodies or let go of references.
  private func queues(of step: Step) -> [Int]? {
    func queueOf(_ op: Int) -> [Int] { model.ops[op].map { [$0.queue] } ?? [] }
    switch step {
    case .add(_, let queue, _, let body), .barrier(_, let queue, let body),
      .addCoalesced(_, _, let queue, _, _, let body, _), .addTimed(_, let queue, _, _, _, let body),
      .addTagged(_, let queue, _, _, let body),
      .addRetrying(_, let queue, _, _, let body), .addExclusive(_, let queue, _, _, _, let body),
      .addConditional(_, let queue, _, _, _, _, let body, _), .addWaiting(_, let queue, _, let body),
      .tryAdd(_, let queue, _, let body):
      return [queue] + body.captures
    case .setCapacity(let queue, _), .setEscalation(let queue, _):
      return [queue]
    case .escalate:
      return nil  // its dependencies may be on any queue
    case .cancelWaiting(let op):
      return queueOf(op)
    case .addAfter(_, let queue, _, let inputs, let body):
      return [queue] + body.captures + inputs.flatMap(queueOf)
    case .batch(let queue, let prepared, let dependencies):
      return [queue] + prepared.flatMap(\.body.captures)
        + dependencies.flatMap { queueOf($0.dependent) + queueOf($0.dependency) }
    case .depend(let dependency):
      return queueOf(dependency.dependent) + queueOf(dependency.dependency)
    case .undepend(let dependent, let dependency):
      return queueOf(dependent) + queueOf(dependency)
    case .addAgain(let op, let queue):
      return [queue] + queueOf(op)
    case .cancel(let op), .setPriority(let op, _), .pause(let op), .resume(let op):
      return queueOf(op)
    case .cancelAll(let queue), .setLimit(let queue, _), .setSuspended(let queue, _), .pauseAll(let queue),
      .resumeAll(let queue), .setLimitPausingExcess(let queue, _):
      return [queue]
    case .open, .openFully, .dropHandle, .releaseQueue, .advance, .setLimiters, .addCosted, .penalize,
      .addGroup,
      .addChild, .cancelTagged:
      return nil
    }
  }

  /// The handles the model says nothing refers to any more (of ops a released queue let go of)
  /// are released, as their `deinit`s report it: the harness's own handles never are.
  mutating func releaseGoneHandles() {
    for op in model.takeGoneHandles() { harness.handleGone(Self.name(op)) }
  }

  /// An op made ready on a queue whose worker lingers sets the wake flag: the worker reports.
  mutating func wakeLingerer() {
    while harness.lingererWake, harness.lingering { harness.endLinger() }
  }

  private mutating func expect(
    _ expectation: StepExpectation, _ call: (inout SchedulerHarness) throws(ActorQueueError) -> Void
  ) -> String? {
    do throws(ActorQueueError) {
      try call(&harness)
      if case .refused(let refusal) = expectation { return "returned; expected \(refusal)" }
      return nil
    } catch {
      let refusal: Refusal =
        switch error {
        case .dependencyCycle: .dependencyCycle
        case .alreadyEnqueued: .alreadyEnqueued
        case .joinedSharedWork: .joinedSharedWork
        default: .alreadyStarted
        }
      if case .refused(let expected) = expectation, expected == refusal { return nil }
      return "threw \(error); expected \(expectation)"
    }
  }

  private mutating func depend(_ dependency: Dependency, _ expectation: StepExpectation) -> String? {
    let dependencyHandle = harness[Self.name(dependency.dependency)]
    let dependent = harness[Self.name(dependency.dependent)]
    let requirement: DependencyRequirement = dependency.mustSucceed ? .success : .completion
    var refusal: ActorQueueError?
    let problem = expect(expectation) { (h: inout SchedulerHarness) throws(ActorQueueError) in
      do throws(ActorQueueError) {
        try h.depend(dependent, on: dependencyHandle, requiring: requirement)
      } catch {
        refusal = error
        throw error
      }
    }
    if problem == nil, let refusal, refusal == .dependencyCycle {
      ValueExecutor.checkedCycles.add(1, ordering: .relaxed)
      if refusal.cycle.contains(where: \.isSharedWork) {
        ValueExecutor.checkedCyclesThroughSharedWork.add(1, ordering: .relaxed)
      }
      return model.cycleProblem(
        refusal.cycle.map { (op(refusal: $0.id), $0.isSharedWork) }, refusing: dependency)
    }
    return problem
  }

  /// The model op of the harness's operation `id` (every op, shared work included, is kept by
  /// the harness under its model name).
  private func op(refusal id: OperationID) -> Int? {
    guard let name = harness.handles.first(where: { $0.value.id == id })?.key else { return nil }
    return Int(name.dropFirst(2))
  }

  private mutating func act(_ step: Step, _ expectation: StepExpectation) -> String? {
    guard expectation != .skip else { return nil }
    switch step {
    case .addGroup(let op, let queue, let inGroup, let priority, _, _, let deadline, _, let keys):
      // As `addOperationGroup` does: its traits, a time state, one submission.
      let target = queues[inGroup.map { model.ops[$0]!.groupQueue! } ?? queue]
      let handle = harness.makeOperation(Self.name(op), priority: OperationPriority.allCases[priority])
      let index = handle.recordIndex
      let traits = timeTraits(deadline: deadline, timeout: nil) + groupKeyTraits(keys)
      harness.event { s, _, _ in
        s.setTraits(traits, of: index)
        s.modifyTime(of: index) { _ in }
      }
      harness.event { s, now, e in s.submit(handle, to: target, now: now, &e) }
    case .addChild(let op, let group, let priority, _, let keys):
      harness.add(
        Self.name(op), priority: OperationPriority.allCases[priority], traits: groupKeyTraits(keys),
        to: queues[model.ops[group]!.groupQueue!])
    case .add(let op, let queue, let priority, _):
      harness.add(Self.name(op), priority: OperationPriority.allCases[priority], to: queues[queue])
    case .addTagged(let op, let queue, let priority, let tags, _):
      // Added with its traits (even ops, and any on a group's queue), or prepared (odd ops).
      let traits = tagTraits(tags, valueScriptTags)
      let priority = OperationPriority.allCases[priority]
      if op.isMultiple(of: 2) || !model.isBase(queue) {
        harness.add(Self.name(op), priority: priority, traits: traits, to: queues[queue])
      } else {
        harness.addPrepared(Self.name(op), priority: priority, traits: traits, to: queues[queue])
      }
    case .cancelTagged(let queue, let tag):
      let target = queue.map { queues[$0] }
      let id = valueScriptTags[tag].id
      harness.event { s, now, e in s.cancelTagged(id, in: target, now: now, &e) }
    case .escalate(let op, let code):
      let index = harness.index(Self.name(op))
      harness.event { s, now, e in s.escalate(index, to: EscalationCode.priority(code).rawValue, now: now, &e)
      }
    case .setEscalation(let queue, let reorders):
      let target = queues[queue]
      harness.event { s, _, _ in s.queues[target].reordersEscalated = reorders }
    case .setCapacity(let queue, let capacity):
      let target = queues[queue]
      harness.event { s, now, e in s.setCapacity(capacity ?? .max, of: target, now: now, &e) }
    case .addWaiting(let op, let queue, let priority, _):
      // Created, then added or lined up in one event, as `addOperationWaitingForCapacity` does; a
      // lined-up submitter never suspends here (no continuation: served or cancelled as it is).
      let handle = harness.makeOperation(Self.name(op), priority: OperationPriority.allCases[priority])
      let target = queues[queue]
      let added = harness.event { s, now, e in
        switch s.submitOrLineUp(handle, to: target, now: now, &e) {
        case .added(let spawn):
          if let spawn { e.spawn(spawn) }
          return true
        case .lined: return false
        }
      }
      if added == model.ops[op]!.awaitingSpace {
        return "added \(added ? "at once" : "nothing"); the model \(added ? "lines it up" : "adds it")"
      }
    case .tryAdd(let op, let queue, let priority, _):
      let target = queues[queue]
      let space = harness.scheduler.hasSpace(in: target)
      if space != (model.ops[op] != nil) { return "tryAdd found space \(space); the model \(!space)" }
      if space { harness.add(Self.name(op), priority: OperationPriority.allCases[priority], to: target) }
    case .cancelWaiting(let op):
      // The model has dropped the op: its queue is the one the record waits in.
      let name = Self.name(op)
      let index = harness.index(name)
      guard let target = queues.first(where: { harness.scheduler.capacityWaiters(of: $0).contains(index) })
      else {
        return "\(name) waits in no queue's line"
      }
      harness.event { s, _, e in s.stopWaitingForSpace(of: index, in: target, &e) }
      // Its submitter throws, and lets go of the handle: the record is freed.
      harness.handleGone(name)
    case .addAfter(let op, let queue, let priority, let inputs, _):
      let handle = harness.makeOperation(Self.name(op), priority: OperationPriority.allCases[priority])
      let inputHandles = inputs.map { harness[Self.name($0)] }
      let target = queues[queue]
      harness.event { s, now, e in s.submit(handle, inputs: inputHandles, to: target, now: now, &e) }
    case .batch(let queue, let prepared, let dependencies):
      for spec in prepared {
        harness.makeOperation(Self.name(spec.op), priority: OperationPriority.allCases[spec.priority])
      }
      for (dependency, expected) in zip(dependencies, model.lastBatchExpectations) where expected != .skip {
        if let problem = depend(dependency, expected) { return "\(dependency): \(problem)" }
        // One caller makes these calls in turn: each returns after its last slice (an
        // addDependency that ended the dependent releases its own dependents in slices).
        while harness.continueBulk() {}
      }
      let names = prepared.map { Self.name($0.op) }
      let target = queues[queue]
      return expect(.done) { (h: inout SchedulerHarness) throws(ActorQueueError) in
        try h.submit(names, to: target)
      }
    case .barrier(let op, let queue, _):
      let handle = harness.makeOperation(Self.name(op))
      let target = queues[queue]
      harness.event { s, now, e in s.submitBarrier(handle, to: target, now: now, &e) }
    case .depend(let dependency):
      return depend(dependency, expectation)
    case .undepend(let dependent, let dependency):
      let dependentIndex = harness.index(Self.name(dependent))
      let dependencyIndex = harness.index(Self.name(dependency))
      harness.event { s, now, e in s.removeDependency(dependencyIndex, from: dependentIndex, now: now, &e) }
    case .addAgain(let op, let queue):
      let name = Self.name(op)
      let target = queues[queue]
      return expect(expectation) { (h: inout SchedulerHarness) throws(ActorQueueError) in
        try h.submit([name], to: target)
      }
    case .cancel(let op):
      harness.cancel(Self.name(op))
    case .cancelAll(let queue):
      let target = queues[queue]
      harness.event { s, now, e in s.cancelAll(in: target, now: now, &e) }
    case .setLimit(let queue, let limit):
      let target = queues[queue]
      let value = limit == -1 ? Int.max : limit
      harness.event { s, now, e in s.setLimit(value, of: target, now: now, &e) }
    case .setSuspended(let queue, let suspended):
      let target = queues[queue]
      harness.event { s, now, e in s.setSuspended(suspended, of: target, now: now, &e) }
    case .setPriority(let op, let priority):
      let index = harness.index(Self.name(op))
      harness.event { s, now, e in
        s.changePriority(OperationPriority.allCases[priority], of: index, now: now, &e)
      }
    case .open, .openFully, .dropHandle:
      break  // bodies move when the model moves them; the value's records live with the harness
    case .pause(let op):
      harness.pause(Self.name(op))
    case .resume(let op):
      harness.resume(Self.name(op))
    case .pauseAll(let queue):
      harness.pauseAll(in: queues[queue])
    case .resumeAll(let queue):
      harness.resumeAll(in: queues[queue])
    case .setLimitPausingExcess(let queue, let limit):
      harness.setLimit(limit == -1 ? .max : limit, of: queues[queue], pausingExcess: true)
    case .addCoalesced(let op, let work, let queue, let priority, let key, _, let tags):
      let added = harness.addCoalesced(
        Self.name(op), key: "k\(key)", work: Self.name(work), priority: OperationPriority.allCases[priority],
        traits: tags.map { tagTraits($0, valueScriptTags) } ?? [], to: queues[queue])
      let expected = model.ops[work]?.followers.first == op
      if added != expected { return added ? "added new work; expected to join" : "joined; expected new work" }
    case .releaseQueue(let queue):
      let target = queues[queue]
      harness.event { s, now, e in s.releaseQueue(target, now: now, &e) }
    case .addTimed(let op, let queue, let priority, let deadline, let timeout, _):
      // Both ways traits reach an operation: folded at submission (even ops), or kept in a time
      // state from before it is added (odd ops, as `QueueOperation(traits:)` keeps them).
      let traits = timeTraits(deadline: deadline, timeout: timeout)
      let priority = OperationPriority.allCases[priority]
      if op.isMultiple(of: 2) {
        harness.add(Self.name(op), priority: priority, traits: traits, to: queues[queue])
      } else {
        harness.addPrepared(Self.name(op), priority: priority, traits: traits, to: queues[queue])
      }
    case .advance(let seconds):
      harness.advance(clock, by: .seconds(seconds))
    case .addExclusive(let op, let queue, let priority, let keys, let shared, _):
      let traits = exclusiveTraits(keys: keys, shared: shared, domain: sharedDomain)
      let priority = OperationPriority.allCases[priority]
      if op.isMultiple(of: 2) {
        harness.add(Self.name(op), priority: priority, traits: traits, to: queues[queue])
      } else {
        harness.addPrepared(Self.name(op), priority: priority, traits: traits, to: queues[queue])
      }
    case .setLimiters(let queue, let listed):
      let slots = listed.map { limiters[$0] }
      let target = queues[queue]
      harness.event { s, now, e in s.setRateLimiters(slots, keeping: [], of: target, now: now, &e) }
    case .addCosted(let op, let queue, let priority, let cost, _):
      let priority = OperationPriority.allCases[priority]
      if op.isMultiple(of: 2) {
        harness.add(Self.name(op), priority: priority, traits: [.cost(cost)], to: queues[queue])
      } else {
        harness.addPrepared(Self.name(op), priority: priority, traits: [.cost(cost)], to: queues[queue])
      }
    case .penalize(let limiter, let seconds):
      let slot = limiters[limiter]
      let end = harness.scheduler.manualNow(of: clock) + Int64(seconds) * 1_000_000_000
      harness.event { s, now, e in s.penalize(slot, until: end, now: now, &e) }
    case .addRetrying(let op, let queue, let priority, let retry, _):
      let priority = OperationPriority.allCases[priority]
      if op.isMultiple(of: 2) {
        harness.add(Self.name(op), priority: priority, traits: retry.traits, to: queues[queue])
      } else {
        harness.addPrepared(Self.name(op), priority: priority, traits: retry.traits, to: queues[queue])
      }
    case .addConditional(let op, let queue, let priority, _, let keys, let deadline, _, let produced):
      // Never evaluated here: the executor answers for it, as the model says (see `quiesce`).
      let condition = ClosureCondition(name: ConditionCode.conditionName(op)) { _ in .satisfied }
      let traits = ConditionCode.traits(keys: keys, deadline: deadline, condition)
      let priority = OperationPriority.allCases[priority]
      // What its condition's `dependency(for:)` returns: a new operation, made first.
      let dependencies = produced.map { [harness.makeOperation(Self.name($0.op))] } ?? []
      if op.isMultiple(of: 2) {
        harness.add(
          Self.name(op), priority: priority, traits: traits, producing: dependencies, to: queues[queue])
      } else {
        harness.addPrepared(
          Self.name(op), priority: priority, traits: traits, producing: dependencies, to: queues[queue])
      }
    }
    return nil
  }

  /// Compares what executes; lets the bodies the model moves move, one at a time, in the model's
  /// order; then compares every op's state, every pause flag and what paused bodies were told.
  private mutating func quiesce() -> String? {
    while true {
      syncGroups()
      if let problem = compareExecuting() {
        // A lingering worker that was not woken takes what waits once its window runs out (see
        // LingerWakeDefectTests): let it, and compare again.
        guard waitsOutLingers, harness.lingering else { return problem }
        harness.now += LingerPolicy.window
        harness.endLinger()
        if let problem = compareExecuting() { return problem }
      }
      if let problem = compareCheckpointLog() { return problem }
      guard let move = model.nextMove() else { break }
      let name = Self.name(move.op)
      guard harness.running.contains(name) else { return "op\(move.op) should move now but is not running" }
      if move.evaluation {
        if let problem = answer(move, name) { return problem }
        continue
      }
      guard !harness.evaluating.contains(name) else {
        return "op\(move.op)'s body should move now, but its conditions are being evaluated"
      }
      var outcome: Outcome?
      if move.reachesCheckpoint {
        if harness.pauseFlag(name) != move.askedToPause, model.ops[move.op]?.cancelRequested == false,
          !model.isTimedOut(move.op), move.result != .rescheduled
        {
          return
            "op\(move.op)'s pause flag is \(!move.askedToPause) at its checkpoint, expected \(move.askedToPause)"
        }
        let decision = harness.checkpoint(name)
        switch (decision, move.result) {
        case (.proceed, .passed), (.suspended, .paused): break
        case (.cancelled, .ended(.cancelled)), (.cancelled, .built): outcome = .failure(CancellationError())
        case (.cancelled, .ended(.failed)) where model.isTimedOut(move.op):
          outcome = .failure(CancellationError())
        case (.cancelled, .rescheduled):
          outcome = .failure(CancellationError())  // its execution timeout, retried
        default: return "op\(move.op)'s checkpoint decided \(decision), expected \(move.result)"
        }
      } else if model.ops[move.op]?.threw == true {
        outcome = .failure(CancellationError())  // its checkpoint threw while it was paused (or timed out)
      } else {
        outcome = bodyOutcome(move.op)
      }
      if let outcome, model.ops[move.op]?.groupLimit != nil {
        // A group's build ended: its body cancels the children if it threw, then waits for them.
        let threw: Bool
        if case .failure = outcome { threw = true } else { threw = false }
        built[move.op] = threw
        if threw, let reference = groupQueues[move.op] {
          harness.event { s, now, e in s.cancelGroupChildren(reference, now: now, &e) }
        }
        syncGroups()
        wakeLingerer()
        let state = harness.state(name)
        switch move.result {
        case .ended(let expected) where modelState(state) != expected:
          return "group op\(move.op) ended \(state), expected \(expected)"
        case .built where state.isTerminal:
          return
            "group op\(move.op) ended \(state) when its build ended, expected it to wait for its children"
        default: break
        }
      } else if let outcome {
        harness.end(name, with: outcome)
        syncGroups()
        wakeLingerer()
        let state = harness.state(name)
        if case .ended(let expected) = move.result, modelState(state) != expected {
          return "op\(move.op) ended \(state), expected \(expected)"
        }
        if move.result == .rescheduled, state != .pending, state != .ready, state != .executing {
          return "op\(move.op) is \(state) after its attempt failed, expected it rescheduled"
        }
      }
      releaseGoneHandles()
    }
    for op in model.sortedOpIndices {
      guard let expected = model.expectedState(op), harness.handles[Self.name(op)] != nil else { continue }
      let real = harness.state(Self.name(op))
      if real != expected
        && !(model.acceptsEither(op) && expected.isTerminal && real.isTerminal && real != .finished)
      {
        return "op\(op) is \(real), expected \(expected)"
      }
      let escalation = harness.scheduler.operations[harness.index(Self.name(op))].escalation
      if !real.isTerminal, escalation != model.ops[op]!.escalation {
        return "op\(op)'s escalation is \(escalation), the model's \(model.ops[op]!.escalation)"
      }
      let isPaused = harness.scheduler.isPaused(harness.index(Self.name(op)))
      if isPaused != model.expectedIsPaused(op) {
        return "op\(op).isPaused is \(isPaused), expected \(model.expectedIsPaused(op))"
      }
      if real == .executing, harness.pauseFlag(Self.name(op)) != model.pauseRequested(op) {
        return "op\(op)'s pause flag is \(!model.pauseRequested(op)), expected \(model.pauseRequested(op))"
      }
      // A condition's body runs only after it answered satisfied: evaluating exactly when the model is.
      if let modelOp = model.ops[op], modelOp.answers != nil, modelOp.state == .executing, modelOp.holdsSlot,
        harness.evaluating.contains(Self.name(op)) != modelOp.evaluating
      {
        return "op\(op) is\(modelOp.evaluating ? " not" : "") evaluating its conditions, expected otherwise"
      }
    }
    return nil
  }

  /// What the bodies of group ops do outside their builds, after each event: make the group's
  /// queue once it started (in the model's order, so queue indices agree), pass a cancellation of
  /// the group's task on to its children, and end a group whose build ended once its queue took
  /// its last child.
  private mutating func syncGroups() {
    while queues.count < model.queues.count {
      let group = model.queues[queues.count].groupOp!
      let spec = model.ops[group]!
      let made = harness.scheduler.createGroupQueue(
        of: harness.index(Self.name(group)), name: nil, limit: spec.groupLimit!,
        policy: GroupPolicyCode.policy(spec.groupPolicy))
      groupQueues[group] = made.reference
      queues.append(made.reference.index)
    }
    // Each a call of its own, as the model has them: every cancellation passed on first, then one
    // group's end at a time (the lowest op number first), its starts decided before the next.
    while true {
      // The model decides the last event's starts before a group's end: a lingering worker that
      // event woke claims first (else a group's dependent, made ready by its end, could take it).
      wakeLingerer()
      var passedOn = false
      for (group, reference) in groupQueues.sorted(by: { $0.key < $1.key })
      where !sealed.contains(group) && !cancelsPassedOn.contains(group)
        && harness.scheduler.operations[harness.index(Self.name(group))].taskCancelled
      {
        cancelsPassedOn.insert(group)
        harness.event { s, now, e in s.cancelGroupChildren(reference, now: now, &e) }
        passedOn = true
      }
      if passedOn { continue }
      guard
        let (group, reference) = groupQueues.sorted(by: { $0.key < $1.key }).first(where: {
          !sealed.contains($0.key) && built[$0.key] != nil
            && harness.scheduler.unfinishedCount(of: $0.value.index) == 0
        }), let threw = built[group], let (failures, cancelled) = harness.scheduler.sealGroup(reference.index)
      else { return }
      sealed.insert(group)
      let outcome: Outcome
      if cancelled {
        outcome = .failure(CancellationError())
      } else if threw {
        outcome = .failure(ScriptError(op: group))
      } else if model.ops[group]!.groupPolicy != 2, !failures.isEmpty {
        outcome = .failure(GroupFailedError(failures: failures))
      } else {
        outcome = .success(group)
      }
      harness.end(Self.name(group), with: outcome)
      ValueExecutor.groupsEnded.add(1, ordering: .relaxed)
      if case .failure(let error) = outcome, error is GroupFailedError {
        ValueExecutor.groupsFailedByChildren.add(1, ordering: .relaxed)
      }
    }
  }

  /// The model's evaluation `move` of op `name`: its worker must be evaluating; it answers the
  /// model's code, and the op must then run its body, end or wait as the model says.
  private mutating func answer(_ move: BodyMove, _ name: String) -> String? {
    guard harness.evaluating.contains(name) else {
      return "op\(move.op)'s conditions should be evaluated now, but its body runs"
    }
    ValueExecutor.evaluations.add(1, ordering: .relaxed)
    let answer =
      move.answer == 0
      ? nil
      : ConditionAnswer(
        name: ConditionCode.conditionName(move.op), result: ConditionCode.result(move.answer, op: move.op))
    harness.answer(name, answer)
    wakeLingerer()
    let state = harness.state(name)
    switch move.result {
    case .evaluated:
      guard state == .executing, harness.running.contains(name), !harness.evaluating.contains(name) else {
        return "op\(move.op) is \(state) after its conditions were satisfied, expected its body to run"
      }
    case .ended(let expected):
      if modelState(state) != expected { return "op\(move.op) ended \(state), expected \(expected)" }
    case .deferred:
      // Pending again (or, ready at once, claimed again): compared exactly below.
      if state.isTerminal { return "op\(move.op) ended \(state) after its condition said not yet" }
    default:
      return "op\(move.op): an evaluation cannot \(move.result)"
    }
    releaseGoneHandles()
    return nil
  }

  /// What the paused bodies were told (granted a slot, cancelled) agrees with the model.
  private mutating func compareCheckpointLog() -> String? {
    let actual = harness.checkpointLog.take().sorted()
    let expected = model.takeCheckpointLog().sorted()
    return actual == expected ? nil : "paused bodies were told \(actual), expected \(expected)"
  }

  /// What the op's body does when it ends, as the real executor's bodies do.
  private func bodyOutcome(_ op: Int) -> Outcome {
    guard let spec = model.ops[op]?.body else { return .success(op) }
    let index = harness.index(Self.name(op))
    // A timeout cancels its task as cancel() does: `checkCancellation()` throws.
    let cancelRequested = harness.scheduler.isCancelRequested(index) || harness.scheduler.isTimedOut(index)
    if spec.checksCancellation, cancelRequested { return .failure(CancellationError()) }
    // The attempt that ran (the model may have started the next one already).
    if spec.throwing || harness.scheduler.attemptCount(of: index) <= (model.ops[op]?.retry?.failures ?? 0) {
      return .failure(ScriptError(op: op))
    }
    return .success(op)
  }

  private func compareExecuting() -> String? {
    // A paused body keeps its worker (its task waits at the checkpoint) but holds no slot.
    var actual = [Set<String>](repeating: [], count: queues.count)
    for name in harness.running {
      let index = harness.index(name)
      guard harness.scheduler.state(of: index) == .executing,
        let queue = queues.lastIndex(of: harness.scheduler.operations[index].queue)
      else { continue }
      actual[queue].insert(name)
    }
    for queue in queues.indices {
      let expected = Set(model.executing(in: queue).map(Self.name))
      if actual[queue] != expected {
        return "q\(queue) executes \(actual[queue].sorted()), expected \(expected.sorted())"
      }
    }
    return nil
  }

}

import Synchronization
import Testing

@testable import ActorQueue

/// Drives a `Scheduler` value of its own, with no task and no real time: the test is every
/// worker and the clock. Each event runs as `Engine` runs it (the event, then its effects), but
/// "performing" the effects here means recording them: a spawn becomes a simulated worker whose
/// steps the test advances, one event at a time.
struct SchedulerHarness {
  /// A simulated worker task and the step it is at.
  struct SimulatedWorker {
    let worker: Worker
    let queue: Int
    var action: WorkerAction
  }

  var scheduler = Scheduler()
  /// The manual clock: every event reads "now" from here.
  var now = SchedulerInstant.now()
  /// Workers that have not retired, in the order they were started.
  private(set) var workers: [SimulatedWorker] = []
  /// Every worker ever started.
  private(set) var spawned = 0
  /// Handles made by this harness, by name (kept alive like a user would).
  private(set) var handles: [String: AnyQueueOperation] = [:]
  /// The effects of the last event.
  private(set) var lastEffects = SchedulerEffects()
  /// The wake-up flag of a lingering worker, as `Engine.lingererWake`: set by any event that
  /// made an op ready on a queue whose worker lingers, cleared when the worker reports.
  private(set) var lingererWake = false

  // MARK: Setting up

  /// A queue whose timers are on `clock` (0: the system clock; else a manual clock registered
  /// with ``registerManualClock(_:)``).
  mutating func makeQueue(limit: Int = .max, clock: UInt64 = 0) -> Int {
    scheduler.createQueue(name: nil, limit: limit, taskPriority: nil, clock: QueueClock(id: clock)).index
  }

  /// Registers the manual clock `id` in this value only (pick ids no real clock has, e.g.
  /// 1_000_000 + n), at instant zero.
  mutating func registerManualClock(_ id: UInt64) {
    scheduler.registerManualClock(id)
  }

  /// A prepared operation (not in any queue), kept by the harness under `name`.
  @discardableResult
  mutating func makeOperation(_ name: String, priority: OperationPriority = .normal) -> AnyQueueOperation {
    let id = OperationID()
    let index = scheduler.createOperation(id: id, name: name, priority: priority, work: .typed { name })
    let handle = QueueOperation<String>(id: id, name: name, recordIndex: index, isInEngine: false)
    handles[name] = handle
    return handle
  }

  subscript(_ name: String) -> AnyQueueOperation {
    guard let handle = handles[name] else { preconditionFailure("no operation named \(name)") }
    return handle
  }

  /// Records of operations whose handle the harness let go of (``forget(_:)``), by name.
  private(set) var forgotten: [String: Int] = [:]

  func index(_ name: String) -> Int { handles[name]?.recordIndex ?? forgotten[name]! }

  /// Lets go of the harness's handle to `name`, as a caller that drops the handle
  /// `addOperation` returned: the queue's reference may be the last one.
  mutating func forget(_ name: String) {
    forgotten[name] = index(name)
    handles[name] = nil
  }

  func state(_ name: String) -> OperationState { scheduler.state(of: index(name)) }

  /// The last reference to `name`'s handle went, as its `deinit` reports it
  /// (`Scheduler.releaseOperation`), while its released queue had let go of it; the harness
  /// forgets it.
  mutating func handleGone(_ name: String) {
    let index = index(name)
    let id = self[name].id
    event { scheduler, now, effects in
      let released = scheduler.releaseOperation(index, owner: id, now: now)
      if let more = released.effects { effects = more }
    }
    forget(name)
  }

  // MARK: Events

  /// Runs one event with the harness's clock, then starts the workers it asked for.
  @discardableResult
  mutating func event<Result, Failure: Error>(
    _ body: (inout Scheduler, () -> SchedulerInstant, inout SchedulerEffects) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    var effects = SchedulerEffects()
    let instant = now
    let result = try body(&scheduler, { instant }, &effects)
    let bulk = effects.takeBulk()
    record(effects)
    precondition(!scheduler.hasBulk, "an event left bulk work in the scheduler instead of its effects")
    if let bulk { pendingBulk.append(bulk) }
    if continuesBulkAtOnce { while continueBulk() {} }
    return result
  }

  /// Whether an event's work beyond its slice is done at once, slice after slice, as `Engine`
  /// does; `false`: it waits in ``pendingBulk`` until the test calls ``continueBulk()``, so
  /// that other events can run between its slices.
  var continuesBulkAtOnce = true
  /// Work left by events beyond their slices (see `BulkWork`), oldest first.
  private(set) var pendingBulk: [BulkWork] = []

  /// Does the next slice of the oldest work left; returns whether there was any.
  @discardableResult
  mutating func continueBulk() -> Bool {
    guard !pendingBulk.isEmpty else { return false }
    let work = pendingBulk.removeFirst()
    var effects = SchedulerEffects()
    let instant = now
    scheduler.continueBulk(work, now: { instant }, &effects)
    let more = effects.takeBulk()
    record(effects)
    if let more { pendingBulk.insert(more, at: 0) }
    return true
  }

  /// Prepares and submits operations one call each, as `addOperation` does: through the
  /// single-operation submission, which starts an idle queue in one step
  /// (`Scheduler.startOnIdle`).
  mutating func add(_ names: String..., priority: OperationPriority = .normal, to queue: Int) {
    for name in names {
      let handle = makeOperation(name, priority: priority)
      event { scheduler, now, effects in scheduler.submit(handle, to: queue, now: now, &effects) }
    }
  }

  /// `addOperation(traits:)`: a new operation submitted with its traits, folded, in one event,
  /// as `ActorQueue.submit(name:priority:traits:_:as:)` does.
  mutating func add(
    _ name: String, priority: OperationPriority = .normal, traits: [OperationTrait],
    producing produced: [AnyQueueOperation] = [], to queue: Int
  ) {
    let handle = makeOperation(name, priority: priority)
    guard !traits.isEmpty else {
      return event { scheduler, now, effects in scheduler.submit(handle, to: queue, now: now, &effects) }
    }
    if traits.count == 1, case .exclusive(let request) = traits[0].kind {
      return event { scheduler, now, effects in
        scheduler.submitExclusive(handle, request, to: queue, now: now, &effects)
      }
    }
    if traits.count == 1, case .tags(_, let tags) = traits[0].kind {
      return event { scheduler, now, effects in
        guard !tags.isEmpty else { return scheduler.submit(handle, to: queue, now: now, &effects) }
        scheduler.submitTagged(handle, tags, to: queue, now: now, &effects)
      }
    }
    let time = TimeTraits(traits)
    guard time.conditions.isEmpty else {
      // Conditions: created, given its traits (and produced dependencies), then submitted.
      let index = handle.recordIndex
      event { scheduler, _, _ in scheduler.setTraits(traits, of: index, produced: produced) }
      return event { scheduler, now, effects in scheduler.submit(handle, to: queue, now: now, &effects) }
    }
    event { scheduler, now, effects in scheduler.submitTimed(handle, time, to: queue, now: now, &effects) }
  }

  /// `QueueOperation(traits:)`, then `addOperation(_:)`: the traits wait in a time state until
  /// the operation is added, in a second event.
  mutating func addPrepared(
    _ name: String, priority: OperationPriority = .normal, traits: [OperationTrait],
    producing produced: [AnyQueueOperation] = [], to queue: Int
  ) {
    let handle = makeOperation(name, priority: priority)
    let index = handle.recordIndex
    if !traits.isEmpty {
      event { scheduler, _, _ in scheduler.setTraits(traits, of: index, produced: produced) }
    }
    // `addOperation(_:)`, which may throw (a produced dependency's cycle; none here).
    try? event { scheduler, now, effects throws(ActorQueueError) in
      try scheduler.submit([handle], to: queue, now: now, &effects)
    }
  }

  /// The manual clock `clock` moves `duration` forward: what is due fires, in one event, as
  /// `ManualClock.advance(by:)` does.
  mutating func advance(_ clock: UInt64, by duration: Duration) {
    let target = scheduler.manualNow(of: clock) &+ duration.wholeNanoseconds
    // Each stop at a permit timer is an event of its own, its slices done before the next, as
    // `ManualClock.advance` does; the last one's may wait (`continuesBulkAtOnce`).
    while event({ scheduler, now, effects in
      scheduler.advanceManualClock(clock, to: target, now: now, &effects)
    }) {
      while continueBulk() {}
    }
  }

  /// Submits prepared operations in one batch.
  mutating func submit(_ names: [String], to queue: Int) throws(ActorQueueError) {
    let batch = names.map { self[$0] }
    try event { scheduler, now, effects throws(ActorQueueError) in
      try scheduler.submit(batch, to: queue, now: now, &effects)
    }
  }

  /// `tryAddOperation` without traits: a new operation added only if `queue` has space (no
  /// operation is made otherwise); returns whether it was added.
  @discardableResult
  mutating func tryAdd(_ name: String, priority: OperationPriority = .normal, to queue: Int) -> Bool {
    guard event({ scheduler, _, _ in scheduler.hasSpace(in: queue) }) else { return false }
    add(name, priority: priority, to: queue)
    return true
  }

  /// `addOperationWaitingForCapacity` without traits: a new operation added, or lined up until
  /// `queue` has space, in one event (its submitter never suspends here: it is served or stops
  /// waiting as it is). Returns whether it was added at once.
  @discardableResult
  mutating func addWaitingForCapacity(
    _ name: String, priority: OperationPriority = .normal, to queue: Int
  ) -> Bool {
    let handle = makeOperation(name, priority: priority)
    return event { scheduler, now, effects in
      guard case .added(let spawn) = scheduler.submitOrLineUp(handle, to: queue, now: now, &effects) else {
        return false
      }
      if let spawn { effects.spawn(spawn) }
      return true
    }
  }

  /// `addOperationGroup`: the group's operation, given a time state (its children's deadline),
  /// submitted in one event. Once it runs, its body makes its queue (``makeGroupQueue(of:limit:policy:)``).
  mutating func addGroup(
    _ name: String, priority: OperationPriority = .normal, traits: [OperationTrait] = [], to queue: Int
  ) {
    let handle = makeOperation(name, priority: priority)
    let index = handle.recordIndex
    event { scheduler, now, effects in
      if !traits.isEmpty { scheduler.setTraits(traits, of: index) }
      scheduler.modifyTime(of: index) { _ in }
      scheduler.submit(handle, to: queue, now: now, &effects)
    }
  }

  /// The body of the running group operation `name` makes the group's queue, as
  /// `ActorQueue(groupOf:)` does; returns the queue (its children are added there).
  mutating func makeGroupQueue(of name: String, limit: Int = .max, policy: GroupFailurePolicy) -> Int {
    let index = index(name)
    return event { scheduler, _, _ in
      scheduler.createGroupQueue(of: index, name: name, limit: limit, policy: policy).reference.index
    }
  }

  /// `queue.waitReport()` for the queue at `queue`.
  func waitReport(of queue: Int) -> [OperationWaitReport] {
    let instant = now
    return scheduler.waitReport(of: queue, now: { instant })
  }

  /// `dependent.addDependency(dependency, requiring:)`, as the public call makes it.
  mutating func depend(
    _ dependent: AnyQueueOperation, on dependency: AnyQueueOperation,
    requiring requirement: DependencyRequirement = .completion
  ) throws(ActorQueueError) {
    let index = dependent.recordIndex
    try event { scheduler, now, effects throws(ActorQueueError) in
      try scheduler.addDependency(dependency, to: index, requirement: requirement, now: now, &effects)
    }
  }

  mutating func cancel(_ name: String) {
    let index = index(name)
    event { scheduler, now, effects in scheduler.cancel(index, now: now, &effects) }
  }

  /// What the checkpoints that waited were told, in order: "name resumed", "name cancelled".
  let checkpointLog = CheckpointLog()

  mutating func pause(_ name: String) {
    let index = index(name)
    event { scheduler, now, effects in scheduler.pause(index, now: now, &effects) }
  }

  mutating func resume(_ name: String) {
    let index = index(name)
    event { scheduler, now, effects in scheduler.resume(index, now: now, &effects) }
  }

  mutating func pauseAll(in queue: Int) {
    event { scheduler, now, effects in scheduler.pauseAll(in: queue, now: now, &effects) }
  }

  mutating func resumeAll(in queue: Int) {
    event { scheduler, now, effects in scheduler.resumeAll(in: queue, now: now, &effects) }
  }

  mutating func setLimit(_ limit: Int, of queue: Int, pausingExcess: Bool = false) {
    event { scheduler, now, effects in
      if pausingExcess {
        scheduler.setLimitPausingExcess(limit, of: queue, now: now, &effects)
      } else {
        scheduler.setLimit(limit, of: queue, now: now, &effects)
      }
    }
  }

  /// The body of the running operation `name` reaches a checkpoint and takes the slow path
  /// (as it does when its worker's flag says a pause is asked for). While it waits, its worker
  /// stays with it (the test ends it later with ``end(_:with:yieldAfter:)``).
  @discardableResult
  mutating func checkpoint(_ name: String, token: UInt64 = 0) -> Scheduler.CheckpointDecision {
    let index = index(name)
    let id = scheduler.operations[index].id
    let log = checkpointLog
    return event { scheduler, now, effects in
      scheduler.checkpoint(
        index, id: id, token: token,
        resume: { cancelled in log.append("\(name) \(cancelled ? "cancelled" : "resumed")") },
        now: now, &effects)
    }
  }

  /// `addOperation(coalescingBy: key)` by a caller whose handle the harness keeps as `name`;
  /// new shared work is kept as `work` (by default `"work:" + key`: give a name of its own when a
  /// key is used again once its work has ended). Compares keys outside the event, as the public
  /// call does. Returns whether it added new work (false: it joined).
  @discardableResult
  mutating func addCoalesced(
    _ name: String, key: String, work: String? = nil, priority: OperationPriority = .normal,
    traits: [OperationTrait] = [], to queue: Int
  ) -> Bool {
    let key = CoalescingKey(key)
    let hash = key.hashValue
    let bucket = scheduler.coalescingBucket(hash, in: queue)
    let match = bucket.entries.first { $0.key == key }
    let made = LockedValue<[AnyQueueOperation]>([])
    let workName = work ?? "work:\(key.base)"
    let outcome = event { scheduler, now, effects in
      scheduler.submitCoalesced(
        key: key, hash: hash, version: bucket.version, match: match, resultType: String.self, name: workName,
        priority: priority, traits: traits, work: .typed { workName }, to: queue,
        makeHandle: { id, index in
          let handle = QueueOperation<String>(id: id, name: workName, recordIndex: index, isInEngine: false)
          made.withLock { $0.append(handle) }
          return handle
        }, now: now, &effects)
    }
    guard case .handle(let handle) = outcome else {
      Issue.record("coalesced add of \(name) did not return a handle: \(outcome)")
      return false
    }
    let handles = made.withLock { $0 }
    if handles.count == 2 { self.handles[workName] = handles[0] }
    self.handles[name] = handle
    return handles.count == 2
  }

  /// Whether the worker running `name` has its pause flag set (what a checkpoint reads first).
  /// Also checks that the worker is listed where checkpoints look for it exactly when its flag
  /// is set (`Scheduler.pauses`).
  func pauseFlag(_ name: String) -> Bool {
    guard let worker = scheduler.operations[index(name)].worker else { return false }
    let flag = worker.isPauseRequested
    #expect(
      scheduler.pauses.contains(worker) == flag,
      "\(name)'s worker is listed for checkpoints iff its flag is set")
    return flag
  }

  private mutating func record(_ effects: SchedulerEffects) {
    lastEffects = effects
    // Resumptions are the test's own closures here (checkpoints), recorded in `checkpointLog`.
    for resumption in effects.resumptions ?? [] { resumption() }
    if effects.wakeLingerer { lingererWake = true }
    for spawn in effects.spawns ?? [] {
      spawned += 1
      spawn.worker.noteBegun()  // its simulated task runs at once
      if let first = spawn.first {
        let action = bodyStartsAtOnce(first, on: spawn.worker)
        workers.append(SimulatedWorker(worker: spawn.worker, queue: spawn.queue, action: action))
      } else {
        let worker = spawn.worker
        let asked = event { scheduler, now, effects in
          scheduler.workerAsksForWork(worker, queue: spawn.queue, now: now, &effects)
        }
        let action = bodyStartsAtOnce(asked, on: worker)
        workers.append(SimulatedWorker(worker: worker, queue: spawn.queue, action: action))
      }
    }
    workers.removeAll {
      if case .retire = $0.action { return true }
      return false
    }
  }

  // MARK: Workers

  /// The operations whose bodies run now (or whose conditions are evaluated), by name, in the
  /// order their workers started.
  var running: [String] {
    workers.compactMap { worker in
      switch worker.action {
      case .run(let index, _, _), .evaluate(let index, _, _, _): scheduler.operations[index].name
      default: nil
      }
    }
  }

  /// The operations whose conditions are evaluated now, by name.
  var evaluating: [String] {
    workers.compactMap { worker in
      guard case .evaluate(let index, _, _, _) = worker.action else { return nil }
      return scheduler.operations[index].name
    }
  }

  /// The conditions of `name`, being evaluated, answered `answer` (`nil`: all satisfied): its
  /// worker reports it and takes its next step (runs the body, or claims the next).
  mutating func answer(_ name: String, _ answer: ConditionAnswer?) {
    let target = index(name)
    guard
      let position = workers.firstIndex(where: {
        if case .evaluate(let index, _, _, _) = $0.action { return index == target }
        return false
      }), case .evaluate(_, let id, _, _) = workers[position].action
    else {
      Issue.record("\(name) is not being evaluated (running: \(running))")
      return
    }
    let worker = workers[position]
    let next = event { scheduler, now, effects in
      scheduler.conditionsAnswered(
        target, id: id, worker: worker.worker, queue: worker.queue, answer: answer, now: now, &effects)
    }
    setAction(next, of: worker.worker)
  }

  /// Whether some worker lingers.
  var lingering: Bool {
    workers.contains {
      if case .linger = $0.action { return true }
      return false
    }
  }

  /// Ends the body of the running operation `name` with `outcome` (a value by default); its
  /// worker takes its next step.
  mutating func end(_ name: String, with outcome: Outcome = .success("done"), yieldAfter: Bool = false) {
    let target = index(name)
    guard
      let position = workers.firstIndex(where: {
        if case .run(let index, _, _) = $0.action { return index == target }
        return false
      })
    else {
      Issue.record("\(name) is not running (running: \(running))")
      return
    }
    let worker = workers[position]
    let box = OutcomeBox(outcome)
    var next = event { scheduler, now, effects in
      scheduler.operationEnded(
        target, worker: worker.worker, queue: worker.queue, outcome: box, yieldAfter: yieldAfter, now: now,
        &effects)
    }
    // A failed attempt of a retried operation: the worker asks its policy (outside the lock, in
    // the engine), then reports the decision.
    if case .decideRetry(let pending) = next {
      let delay = pending.decide()
      next = event { scheduler, now, effects in
        scheduler.retryDecided(
          pending, delay: delay, worker: worker.worker, queue: worker.queue, now: now, &effects)
      }
    }
    setAction(next, of: worker.worker)
  }

  /// A lingering worker's poll found the wake flag set or its time up: it reports back.
  mutating func endLinger() {
    guard
      let position = workers.firstIndex(where: {
        if case .linger = $0.action { return true }
        return false
      }), case .linger(let since) = workers[position].action
    else {
      Issue.record("no worker lingers")
      return
    }
    let worker = workers[position]
    lingererWake = false
    let next = event { scheduler, now, effects in
      scheduler.lingerEnded(worker.worker, queue: worker.queue, since: since, now: now, &effects)
    }
    setAction(next, of: worker.worker)
  }

  /// Runs every ready body to its end, one event at a time, and returns the order they ran in.
  mutating func runToCompletion() -> [String] {
    var ran: [String] = []
    while let name = running.first(where: { !evaluating.contains($0) }) {
      ran.append(name)
      end(name)
    }
    return ran
  }

  /// A body with a timeout is handed out as `runTimed`: its simulated worker reports the body's
  /// start at once, in an event of its own at the same instant, and runs it.
  private mutating func bodyStartsAtOnce(_ action: WorkerAction, on worker: Worker) -> WorkerAction {
    guard case .runTimed(let index, let id, let body) = action else { return action }
    event { scheduler, now, effects in
      scheduler.bodyStarting(index, id: id, worker: worker, now: now, &effects)
    }
    return .run(operation: index, id: id, body: body)
  }

  private mutating func setAction(_ action: WorkerAction, of worker: Worker) {
    let action = bodyStartsAtOnce(action, on: worker)
    if let position = workers.firstIndex(where: { $0.worker === worker }) {
      workers[position].action = action
    }
    workers.removeAll {
      if case .retire = $0.action { return true }
      return false
    }
  }
}

/// The harness's record of checkpoint resumptions.
final class CheckpointLog: Sendable {
  private let entries = LockedValue<[String]>([])

  func append(_ entry: String) { entries.withLock { $0.append(entry) } }

  /// Everything recorded since the last call.
  func take() -> [String] {
    entries.withLock { entries in
      defer { entries = [] }; return entries
    }
  }
}

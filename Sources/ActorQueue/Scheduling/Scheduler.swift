// The scheduler of every queue in the process, as one value.
//
// Where a reader starts:
// - `Scheduler` (this file) holds every scheduling decision's state: a record per operation
//   (`OperationRecord.swift`: its phase, priority, submission order, its queue and place in it,
//   its dependency edges with their requirement, the unfinished-dependency count, its work until
//   claimed, its outcome, handlers, waiters and subscribers) and a record per queue
//   (`QueueRecord.swift`: the start rule in `QueueStartRule`, with its ready set, limit,
//   suspension, slots and worker accounting; the unfinished operations in submission order; its
//   unfinished barriers; its linger policy). It lives in one lock (`Engine.scheduler`), so no
//   scheduling field is reachable without it. What an operation runs is in `OperationWork.swift`
//   and `ExternalWork.swift` (the adapter's seam); records are created and freed in
//   `Scheduler+Storage.swift`.
// - Where an operation is, is one field: its `Phase`. `pending` (not in a queue, waiting for a
//   dependency, or held by `pause()`); `ready(stamp:)` (in the ready set); `executing` on a
//   worker's task or as external work, holding a slot; `detached` (a legacy operation cancelled
//   while waiting, its work started without a slot; it reads as `executing`);
//   `paused` and `resumed` (a started body without a slot, with its worker, the tasks waiting at
//   a checkpoint, and its stamp while it competes for a slot); `following` (a caller's handle to
//   coalesced work); `ended`. Its observable `OperationState` is derived. `transition` is the
//   only writer (`phase` is `fileprivate(set)` in its file): it keeps the ready set and the count
//   of paused bodies in it in step, and tells the subscribers when the derived state changes.
//   A payload is changed in place by swapping (`modifyPauseWaiters`, as NIO's `.modifying`).
//   Beside the phase, a record keeps requests, not places: `cancelRequested`, `pauseHeld`,
//   `excessPaused`, `taskCancelled`. The random testers check every phase against the queues
//   after each step (`PhaseCheck`).
// - Each event is one `mutating` method that records into a `SchedulerEffects` value what to do
//   once the lock is released (start worker tasks, resume waiters and event consumers, run
//   completion handlers, cancel tasks, start or cancel external work, and release whatever the
//   user gave us); a worker's events also return its next `WorkerAction`. The value performs
//   no effect and runs no user code; `Engine` performs the effects. (The effects are an `inout`
//   parameter rather than a return value only because the value is large and is then never
//   copied; it is the same contract.) An event takes `now:` and ends in `settle`; a helper it
//   calls never settles and never shares an event's name (`cancelOne`, `pauseOne`, `resumeOne`).
// - Starts are decided once per event, at its end (`settle`), all in `Scheduler+Starts.swift`:
//   an event changes the ready sets first (a batch is submitted whole, every cancellation of
//   `cancelAllOperations()` is done) and only then are operations claimed and workers asked for.
//   So a batch is scheduled by priority, and nothing that the same event is about to cancel can
//   start. One shortcut: an operation added alone to an idle queue, where nothing else could
//   happen in that event, is enqueued and claimed for a new worker in one step (`startOnIdle`),
//   to the same outcome; it records no effect (asserted), and the random tester on the value
//   checks both paths against its model.
// - Time is an input: the events that may decide about lingering take `now`, a
//   `SchedulerInstant` (integer nanoseconds of the monotonic clock: cheap to read and compare
//   on an idle queue's start); tests drive it (`SchedulerTests`, and the random tester on the
//   value).
// - Pausing (`Scheduler+Pause.swift`) and coalescing (`Scheduler+Coalescing.swift`) are events
//   of the same value. A paused body is an operation whose worker task waits at a checkpoint,
//   holding no slot; given a slot again, it continues on that task (no worker is started for
//   it). Coalesced work is one operation of its queue; each caller's handle is a record that
//   follows it. Coalescing's fields live out of line (`OperationExtras`, in a copy-on-write
//   box), so an operation that does not coalesce pays one null reference for them.
// - Exclusivity by key (`Scheduler+Exclusivity.swift`): the starts of a queue that ever had an
//   operation with keys are all decided by one arbitration across those queues, at the end of
//   each event (`settle`) or for a worker that asks; other queues start as described above.
// - Rate limits (`RateLimit/Scheduler+RateLimits.swift`): a queue with limiters is decided by the
//   same arbitration, which admits a head only when its limiters have its cost's permits, and
//   arms one timer per queue whose head waits for them.
// - Bounded capacity (`Capacity/Scheduler+Capacity.swift`): submitters lined up in a full queue
//   are added, first come first served, in the event whose end made space, before it decides
//   starts (`settle`, and a worker's claim after an end).
// - Tags (`Tags/Scheduler+Tags.swift`): each tag lists its operations in creation order; a
//   cancel-by-tag call walks the list in slices.
//
// Design choices:
// - Dense indices. An operation's record is created with its handle (`AnyQueueOperation`) and
//   freed by the handle's `deinit`: anything that needs the record holds the handle (a queue
//   holds its unfinished operations' handles, an unfinished dependent holds its dependencies'),
//   so the index a handle keeps is valid for the handle's whole life, and a prepared graph that
//   is dropped without ever being enqueued is freed like any object graph. One exception: an
//   operation held by `pause()` in a released queue, which the queue let go of (`letGo`), may
//   outlive its handle; its record is then freed at its end. A queue's record
//   lives while its `ActorQueue` does, and after it until its last operation and worker end.
// - Ownership. Like Foundation, an unfinished operation keeps its dependencies alive. Unlike
//   Foundation, an operation that has ended stops owning them (it keeps weak references, to
//   list those still alive in `dependencies`): so no retain cycle can form through the public
//   API, whatever order dependencies are added in, since a cycle of unfinished operations is
//   refused as a dependency cycle.
// - Nothing user-owned is released under the lock: handles, bodies, outcomes, handlers and
//   errors that the value lets go of are moved into the effects and released after unlocking
//   (releasing the last reference to a body may release the last reference to a queue, whose
//   `deinit` takes this lock).
// - Long graphs: ending an operation releases its dependents through a work list, never by
//   recursion; a dropped prepared chain is released through `releaseBacklog`, one link at a
//   time, never by nested `deinit`s.
/// The whole scheduling state of the process; see the top of this file.
struct Scheduler: Sendable {
  typealias Effects = SchedulerEffects

  var operations: [OperationRecord] = []
  var freeOperations: [Int] = []
  /// The free records' indices (for tests).
  var freeRecordIndices: [Int] { freeOperations }
  /// The most records live at once, the records created, and when, since the storage was last
  /// judged (see `judgeStorageIfAllFree(now:)`).
  var peakLiveOperations = 0
  var createdSinceJudged = 0
  var storageJudgedAt: SchedulerInstant?
  /// A whole-queue walk is cancelling operations (`cancelAllOperations()`, a suspended queue's
  /// release): their records are left for their handles' `deinit`s, after unlocking, so that
  /// each slice does only the cancelling.
  var isEndingInBulk = false
  /// The current event's work beyond its slice, handed to its caller at the end of the event
  /// (see `BulkWork`); `hasBulk` says whether there may be any.
  var bulk = BulkWork()
  var hasBulk = false
  /// Units of bulk work done in the current hold of the lock, and the most one hold may do
  /// (see `BulkWork`).
  var sliceWork = 0
  var sliceLimit = Scheduler.defaultSliceLimit
  /// The most units of bulk work any one hold of the lock did (for tests).
  var largestSlice = 0
  /// Calls whose work goes on in slices, from the hold that hands out the rest of one until the
  /// hold that finishes it (each hold that hands work out counts it, each continuation uncounts
  /// it first): read under the lock, it tells another thread (a test) that what it sees may be
  /// part of such a call's work done.
  var callsInSlices = 0
  /// Those of ``callsInSlices`` whose work left may change a queue with keys or limiters
  /// (``BulkWork/touchesArbitration``): arbitration waits for their last slices.
  var arbitratedCallsInSlices = 0
  /// Counts the times a queue took keys or limiters while calls found to change none such were
  /// in slices, and might change it (`makeArbitrated`): what those calls' work was found to
  /// change is stale, so arbitration waits for their next slices, which look again.
  var arbitrationEpoch: UInt64 = 0
  /// The calls in slices found to change no queue with keys or limiters before the last such time
  /// (their work's `epoch` is older than ``arbitrationEpoch``): arbitration waits for them.
  var staleCallsInSlices = 0
  /// Identifies whole-queue walks.
  var nextWalkToken: UInt64 = 0
  var queues: [QueueRecord] = []
  /// Groups whose queue takes children: while there are some, a cycle may close through a group,
  /// which waits for its children.
  var liveGroups = 0
  /// The group of each group's queue, by queue index (kept out of the queue records, which every
  /// add and end touch).
  var groupRecords = GroupTable()
  /// The children of each group's queue that failed, in the order they ended (none kept with
  /// ``GroupFailurePolicy/ignore``): apart, so that a group's record is plain data, which reading
  /// it for each child copies without retaining anything.
  var groupFailures: [Int: [GroupFailedError.Failure]] = [:]
  /// The tags of each tagged operation (by record index), until its record is freed.
  var operationTags: [Int: OperationTags] = [:]
  /// The unfinished operations added to a queue with each tag (record indices).
  var taggedOperations: [UInt64: TagMembers] = [:]
  /// Counts listings under tags (see `TagMembers.Entry.listing`).
  var nextTagListing: UInt64 = 0
  /// Test recorders noting the keys of each start, by queue index (`ActorQueue.recordKeys()`).
  var keyRecordings: [Int: [KeyRecording]] = [:]
  /// The submitters waiting for space in each full queue, by queue index (see `Scheduler+Capacity.swift`).
  var capacityLines: [Int: CapacityLine] = [:]
  /// Queues with waiting submitters and space for some, served before the event decides starts.
  var queuesWithSpace: [Int] = []
  var hasCapacityWork = false
  var freeQueues: [Int] = []
  var nextQueueGeneration: UInt64 = 0
  /// Submission order: one counter for all queues.
  var nextSubmission: UInt64 = 0
  /// Start order: one counter for all queues.
  var nextStart: UInt64 = 0
  /// The global order of events.
  private(set) var nextEventSequence: UInt64 = 0
  /// Workers lingering on an idle queue (see ``LingerPolicy``): at most one in the process, so
  /// lingering never keeps more than one thread of the pool busy.
  var lingeringWorkers = 0
  /// Queues changed by the current event, whose starts `settle` decides, in the order they were
  /// changed: a list threaded through their records (`QueueRecord.nextTouched`; -1: none), so
  /// that marking one costs no array.
  var firstTouched = -1
  var lastTouched = -1
  /// Handles let go of by released operations while another thread releases a chain of them
  /// (see ``releaseOperation(_:owner:now:)``).
  var releaseBacklog: [Handle] = []
  var isDrainingBacklog = false

  // Time (see `Scheduler+Time.swift`).
  /// The system clock's timers; each manual clock's, and its instant, by `QueueClock.id`.
  var systemTimers = TimerQueue()
  var manualClocks: [UInt64: ClockTimers] = [:]
  /// What running bodies await, while a manual clock exists (`Waiting/AwaitRegistry.swift`).
  var awaits = AwaitRegistry()
  /// The time state of operations with a timeout, early traits or a timed waiter, by their
  /// record's `timeSlot`; the free slots.
  var timeStates: [OperationTime] = []
  var freeTimeStates: [Int32] = []
  /// The retry state of operations with a `.retry` trait, by their record's `retrySlot`; the
  /// free slots (see `Scheduler+Retry.swift`).
  var retryStates: [RetryState] = []
  var freeRetryStates: [Int32] = []
  /// What only a custom policy or a deadline needs, by retry slot (`RetryState.hasExtras`).
  var retryExtras: [Int32: RetryExtras] = [:]
  /// Draws the jitter of retry policies decided here (no generator of the caller's): cheap, and
  /// no system call under the lock.
  var jitterRandom = JitterRandom()
  // Exclusivity (see `Scheduler+Exclusivity.swift`).
  /// The state of operations with keys, by record; the locks in use; the queues whose starts
  /// arbitration decides; the operations reserving keys (aging).
  var exclusiveStates: [ExclusiveState] = []
  /// Locks in use, by slot; the free slots. `lockChains[k]` is the first slot of a lock on key
  /// id `k` (ids are small and dense: interned), the others of that key linked through
  /// `LockState.nextWithKey`: a lock is found without hashing.
  var lockStates: [LockState] = []
  /// The other locks of operations with several keys (`ExclusiveState.more`); the free entries.
  var moreLocks: [MoreLocks] = []
  var freeMoreLocks: [Int] = []
  var freeLockSlots: [Int] = []
  var lockChains: [Int] = []
  var exclusiveQueues: [Int] = []
  var reservers: [Int] = []
  /// Locks (slots) released or unreserved since arbitration last ran, and whether it must run.
  var dirtyLocks: [Int] = []
  var needsArbitration = false
  /// Passes over after which a waiter reserves its keys (a test's value may lower it).
  var agingLimit = Scheduler.defaultAgingLimit

  // Rate limits (see `Scheduler+RateLimits.swift`).
  /// Limiters by slot; the free slots; the queues that have limiters.
  var limiterStates: [LimiterState] = []
  var freeLimiterSlots: [Int] = []
  var limitedQueues: [Int] = []
  /// The queue whose gate just took its head's permits, until the claim that follows in the same
  /// step (`gatePermits`), or -1.
  var gatePaid = -1
  /// The cost of each operation whose cost is not 1 (`OperationTrait.cost`), by record.
  var costs: [Int: Int64] = [:]
  /// Counts greedy rounds: a queue or limiter marked with the current one was passed over in it.
  var greedyRound: UInt64 = 1
  /// The system clock's instant, read once per greedy round that needs it.
  var roundSystemNow: Int64?
  /// A manual clock's advance has stopped short of its target (from that stop's event until the
  /// last stop's): starts are claimed in their event (`startEagerly`), as the next stop follows
  /// at once.
  var startsEagerly = false
  /// Operations found waiting with a cost their queue's limiters can never grant: they end when
  /// the event settles.
  var impossibleCosts: [(index: Int, id: OperationID)] = []

  /// Time traits the current event noted, armed when it settles.
  var pendingTimes: [PendingTime] = []
  /// The current event has time work for `settle` (`pendingTimes`, or the system clock's timers
  /// changed): one test for events that have none.
  var hasTimeWork = false
  var systemTimersChanged = false
  /// The instant the timer task was last told to sleep until (`nil`: it was told to end).
  var armedSystemTimer: Int64?
  var timerGeneration: UInt64 = 0
  var nextWaiterToken: UInt64 = 0

  /// The workers asked to pause, where checkpoints find them: the process's queues share
  /// `Engine.pauses`; a test's scheduler value has its own.
  let pauses: WorkerDirectory
  /// The workers running an attempt of a retried operation, where `ActorQueue.currentAttempt`
  /// finds them: `Engine.attempts`, or a test's scheduler value's own.
  let attempts: WorkerDirectory

  /// Whether this is the process's scheduler (`Engine.scheduler`), whose system-clock timers the
  /// one timer task serves. A test's scheduler value keeps its timers in its state and commands no
  /// task: the task and its generations are the process's, and a test value's commands would
  /// replace the real scheduler's (its timers would not fire until its generations caught up).
  let commandsTimerTask: Bool

  init(
    pauses: WorkerDirectory = WorkerDirectory(), attempts: WorkerDirectory = WorkerDirectory(),
    commandsTimerTask: Bool = false
  ) {
    self.pauses = pauses
    self.attempts = attempts
    self.commandsTimerTask = commandsTimerTask
  }

  // MARK: Reading (each under the lock, O(1) unless stated)

  /// Whether a cancellation of the waiting operation `index` starts its work instead of ending
  /// it (a legacy operation's).
  func startsWhenCancelled(_ index: Int) -> Bool {
    guard let external = operations[index].external else { return false }
    return external.startsWhenCancelled
  }

  /// Whether the body of `index` started and is suspended at a checkpoint, holding no slot
  /// (state `.paused`, or `.ready` once resumed while it waits for a slot).
  func isPausedInBody(_ index: Int) -> Bool { operations[index].phase.isPausedInBody }

  func state(of index: Int) -> OperationState { operations[index].phase.state }
  /// How `index` ended; `nil` until it has.
  func endedOutcome(of index: Int) -> OperationOutcome? {
    guard case .ended(let state) = operations[index].phase, let outcome = operations[index].outcome else {
      return nil
    }
    return OperationOutcome(state: state, outcome: outcome.value)
  }
  func priority(of index: Int) -> OperationPriority { operations[index].priority }
  func isCancelRequested(_ index: Int) -> Bool { operations[index].cancelRequested }
  func outcome(of index: Int) -> OutcomeBox? { operations[index].outcome }
  /// Whether the body waiting to run is kept as it was given (`()`, cannot throw), or wrapped to
  /// box its value; `nil`: no body waits (for tests).
  func bodyIsKeptAsGiven(_ index: Int) -> Bool? {
    switch operations[index].body {
    case .void: true
    case .boxing: false
    case nil: nil
    }
  }
  func thrownError(of index: Int) -> (any Error)? { operations[index].thrownError }

  /// The dependencies `index` lists: owned while unfinished, those still alive once ended.
  /// O(dependencies).
  func dependencies(of index: Int) -> [Handle] {
    operations[index].dependencies.compactMap { $0.handle ?? $0.weakHandle?.object }
  }

  func limit(of queue: Int) -> Int { queues[queue].machine.limit }

  /// The queue whose body runs on the task at `address` (see ``ActorQueue/current``).
  /// O(queues + started bodies).
  func queue(runningOnTask address: Int) -> ActorQueue? {
    bodyRunning(onTask: address).flatMap { queues[$0.queue].owner }
  }

  /// The queue and record of the body executing on the task at `address`. O(queues + started
  /// bodies).
  func bodyRunning(onTask address: Int) -> (queue: Int, index: Int)? {
    for queue in queues.indices where queues[queue].isLive {
      var index = queues[queue].firstStarted
      while index >= 0 {
        if case .executing(.worker(let worker)) = operations[index].phase,
          worker.recordedTaskAddress == address
        {
          return (queue, index)
        }
        index = operations[index].nextStarted
      }
    }
    return nil
  }
  func isSuspended(_ queue: Int) -> Bool { queues[queue].machine.isSuspended }
  func unfinishedCount(of queue: Int) -> Int { queues[queue].unfinishedCount }
  /// O(n).
  func unfinished(of queue: Int) -> [Handle] {
    var handles: [Handle] = []
    handles.reserveCapacity(queues[queue].unfinishedCount)
    var index = queues[queue].first
    while index >= 0 {
      if let handle = operations[index].enqueuedHandle { handles.append(handle) }
      index = operations[index].nextInQueue
    }
    return handles
  }

  /// The records of `queue`'s unfinished operations, in submission order. O(n).
  func unfinishedIndices(of queue: Int) -> [Int] {
    var indices: [Int] = []
    indices.reserveCapacity(queues[queue].unfinishedCount)
    var index = queues[queue].first
    while index >= 0 {
      indices.append(index)
      index = operations[index].nextInQueue
    }
    return indices
  }

  // MARK: Waiting and watching

  /// Registers a task waiting for `index` to end; `false` if it has ended already.
  mutating func addWaiter(_ continuation: CheckedContinuation<Void, Never>, to index: Int) -> Bool {
    guard !operations[index].phase.hasEnded else { return false }
    operations[index].waiters.append(continuation)
    return true
  }

  /// ``addWaiter(_:to:)`` for a task of `priority` (`TaskPriority.rawValue`), which escalates
  /// the operation and what it waits for (`Scheduler+Escalation.swift`).
  mutating func addWaiter(
    _ continuation: CheckedContinuation<Void, Never>, to index: Int, escalatingTo priority: UInt8,
    now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> Bool {
    guard addWaiter(continuation, to: index) else { return false }
    if operations[index].escalation < priority { escalate(index, to: priority, now: now, &effects) }
    return true
  }

  /// Registers a task waiting for `queue` to have no unfinished operation; `false` if it has
  /// none now.
  mutating func addAllFinishedWaiter(_ continuation: CheckedContinuation<Void, Never>, to queue: Int) -> Bool
  {
    guard queues[queue].unfinishedCount > 0 else { return false }
    queues[queue].allFinishedWaiters.append(continuation)
    return true
  }

  /// Registers a completion handler; returns the outcome instead if `index` has ended.
  mutating func addCompletionHandler(_ handler: @escaping @Sendable (Outcome) -> Void, to index: Int)
    -> OutcomeBox?
  {
    if operations[index].phase.hasEnded, let outcome = operations[index].outcome { return outcome }
    operations[index].completionHandlers.append(handler)
    return nil
  }

  /// Subscribes `channel` to `index`'s states: the current one first.
  mutating func subscribe(_ channel: EventChannel<OperationState>, to index: Int, _ effects: inout Effects) {
    let state = operations[index].phase.state
    _ = channel.push(state, effects: &effects)
    if state.isTerminal {
      channel.finish(effects: &effects)
    } else {
      operations[index].subscribers.append(channel)
    }
  }

  /// Subscribes `channel` to `queue`'s events.
  mutating func subscribe(_ channel: EventChannel<QueueEvent>, to queue: Int) {
    queues[queue].subscribers.append(channel)
  }

  // MARK: Settings

  /// Changes the priority; a ready operation is re-sorted at once. O(log n).
  mutating func setPriority(_ priority: OperationPriority, of index: Int) {
    let old = operations[index].priority
    guard old != priority else { return }
    operations[index].priority = priority
    if operations[index].extrasBox != nil, operations[index].leader >= 0, !operations[index].phase.hasEnded {
      raiseLeaderPriority(operations[index].leader)  // its own priority only says what it asks for
      return
    }
    if operations[index].timeMarks.contains(.exclusive) { exclusivePriorityChanged(index) }
    // In a queue with rate limiters, a new head may have its permits where the old one waited
    // (the event settles: `changePriority`, or the coalescing call that raised a work's priority).
    let queue = operations[index].queue
    if queue >= 0, queues[queue].hasLimiters { limitedHeadMayHaveChanged(queue) }
    guard let stamp = operations[index].phase.stamp else { return }
    let moved = queues[operations[index].queue].machine.reprioritize(
      index, stamp: stamp, order: operations[index].order, from: old, to: priority)
    var effects = Effects()  // the state stays: nobody to tell
    switch operations[index].phase {
    case .ready: transition(index, to: .ready(stamp: moved), claimed: true, &effects)
    case .paused(var body):
      body.stamp = moved
      transition(index, to: .paused(body), claimed: true, &effects)
    case .resumed(var body):
      body.stamp = moved
      transition(index, to: .resumed(body), claimed: true, &effects)
    case .pending, .executing, .detached, .following, .ended, .modifying:
      preconditionFailure(
        "Internal inconsistency: \(operations[index].id) has a place in the ready set in no ready phase")
    }
    assert(effects.isEmpty, "Internal inconsistency: re-sorting recorded effects")
  }

  /// The public priority change: ``setPriority(_:of:)``, settled when it asks for an
  /// arbitration (in a queue with rate limiters).
  mutating func changePriority(
    _ priority: OperationPriority, of index: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    setPriority(priority, of: index)
    // A queue with limiters may start its new head (arbitration, or its own gate).
    if needsArbitration || firstTouched >= 0 { settle(now: now, &effects) }
  }

  /// Changes the limit (validated by the caller). Raising it may start operations at once.
  mutating func setLimit(
    _ limit: Int, of queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    guard limit != queues[queue].machine.limit else { return }
    queues[queue].machine.setLimit(limit)
    emit(.limitChanged(limit), in: queue, &effects)
    touch(queue)
    settle(now: now, &effects)
  }

  /// Suspends or resumes the queue. Resuming starts waiting operations at once.
  mutating func setSuspended(
    _ suspended: Bool, of queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    guard suspended != queues[queue].machine.isSuspended else { return }
    queues[queue].machine.setSuspended(suspended)
    if suspended { exclusiveQueueSuspended(queue) }
    emit(suspended ? .suspended : .resumed, in: queue, &effects)
    touch(queue)
    settle(now: now, &effects)
  }

  // MARK: Events

  /// Emits a queue event to every subscriber of `queue`.
  mutating func emit(_ kind: QueueEvent.Kind, in queue: Int, _ effects: inout Effects) {
    guard !queues[queue].subscribers.isEmpty else { return }
    nextEventSequence += 1
    let event = QueueEvent(
      sequence: nextEventSequence, kind: kind, executingCount: queues[queue].machine.executing,
      maxConcurrentOperationCount: queues[queue].machine.limit, queueName: queues[queue].name)
    var dropped: [EventChannel<QueueEvent>] = []
    queues[queue].subscribers.removeAll { channel in
      if channel.push(event, effects: &effects) { return false }
      dropped.append(channel)
      return true
    }
    if !dropped.isEmpty { effects.garbage.releaseLater(dropped) }
  }

}

extension Array where Element == Int {
  /// Removes the first occurrence of `element`, keeping the order of the rest.
  mutating func removeFirst(_ element: Int) {
    guard let position = firstIndex(of: element) else { return }
    remove(at: position)
  }
}

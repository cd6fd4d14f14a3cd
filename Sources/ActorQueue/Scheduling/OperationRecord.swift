/// An operation's handle, as the scheduler and its effects hold it.
typealias Handle = AnyQueueOperation

/// A weak reference, for the dependencies an ended operation lists but no longer owns.
struct WeakHandle<Object: AnyObject & Sendable>: Sendable {
  weak var object: Object?
}

/// A dependency edge, as the dependent holds it.
struct DependencyEdge: Sendable {
  /// The dependency's record.
  let index: Int
  /// The dependency itself: strongly while the dependent is unfinished.
  var handle: Handle?
  /// After the dependent ended: weakly.
  var weakHandle: WeakHandle<Handle>?
  /// Added by `addDependency`: `removeDependency` removes this part.
  var isExplicit = false
  /// The explicit part requires the dependency to finish (``DependencyRequirement/success``).
  var explicitRequiresSuccess = false
  /// A typed input of `addOperation(after:)`: requires success, cannot be removed.
  var isInput = false
  /// The queue's barrier ordering: cannot be removed with `removeDependency`.
  var isBarrier = false
  /// Produced by one of the dependent's conditions: cancelled if the dependent ends without
  /// running while nothing else waits for it.
  var isProduced = false

  /// The dependent ends (fails, or is cancelled) unless the dependency finishes.
  var requiresSuccess: Bool { isInput || (isExplicit && explicitRequiresSuccess) }

  /// Whether any part of the edge is left.
  var isEmpty: Bool { !isExplicit && !isInput && !isBarrier }
}

/// A dependency edge, as the dependency holds it while it is unfinished.
struct DependentEntry: Sendable {
  /// The dependent's record.
  let index: Int
  /// The dependent's identifier: a record freed and reused meanwhile is told apart by it.
  let id: OperationID
  var requiresSuccess: Bool
}

/// One operation's scheduling record.
struct OperationRecord: Sendable {
  /// The identifier of the handle this record belongs to.
  var id: OperationID
  var name: String?
  /// Where the operation is (see ``Phase``): written only by `Scheduler.transition(_:to:_:)`.
  fileprivate(set) var phase = Phase.pending
  // One-byte fields follow `phase` and `body`, in the bytes their payloads leave after them.
  var priority: OperationPriority
  /// `false` while the index is free.
  var isLive = true
  var cancelRequested = false
  var wasEnqueued = false
  var isBarrier = false
  /// The worker's task was asked to cancel: the worker must not run another operation.
  var taskCancelled = false
  /// The highest priority (`TaskPriority.rawValue`) of the tasks that awaited it, or of the
  /// operations awaited that wait for it; 0: none. Only grows (see `Scheduler+Escalation.swift`).
  /// In the byte the one-byte fields above leave before `queue`: the record keeps its size.
  var escalation: UInt8 = 0
  /// The queue's index while enqueued and unfinished; -1 otherwise.
  var queue = -1
  /// Submission order (one counter for every queue): the tie-break among ready operations.
  var order: UInt64 = 0
  /// The handle itself, while it is in a queue and unfinished: the queue keeps it alive (as
  /// Foundation's queue keeps its operations), and lists it.
  var enqueuedHandle: AnyQueueOperation?
  /// The neighbours in its queue's list of unfinished operations (submission order); -1: none.
  var previousInQueue = -1
  var nextInQueue = -1
  /// The neighbours in its queue's list of started bodies (``worker`` set); -1: none.
  var previousStarted = -1
  var nextStarted = -1
  /// The body, until a worker claims it or the operation ends without running.
  var body: OperationBody?
  /// `pause()` was called and `resume()` not since: a waiting operation is held (it does not
  /// become ready); an executing one pauses at its body's next checkpoint and stays paused.
  var pauseHeld = false
  /// Asked to pause at its next checkpoint because the limit was lowered with the excess
  /// paused; once paused, it competes for a slot again by itself.
  var excessPaused = false
  /// An ended dependent keeps a weak reference to this operation's handle: its record is freed
  /// only by the handle's `deinit` (see `Scheduler.endOne`).
  var isWeaklyReferenced = false
  /// Held by `pause()` in a released queue, the queue let go of its reference (of its callers'
  /// handles, for coalesced work): only references outside the queue keep it, and the last
  /// handle's `deinit` cancels it if it is still held (see `Scheduler.letGo(_:_:)`).
  var isLetGo = false
  /// Its handle was deinitialised before it ended (it had been let go of): the record is freed
  /// at its end.
  var isHandleGone = false
  /// It has tags (`Scheduler.operationTags`), until its record is freed.
  var isTagged = false
  /// Its deadline's timer, a limit that passed, whether it has a `timeSlot`: empty for most
  /// operations (see `Scheduler+Time.swift`).
  var timeMarks: TimeMarks = []
  /// External work instead of a body, until the operation ends.
  var external: (any ExternalWork)?
  var dependencies: [DependencyEdge] = []
  /// The position of each dependency's edge in `dependencies`, once there are many of them (a
  /// fan-in), so that adding the next edge does not scan them all; rebuilt after a removal.
  var edgePositions: [Int: Int]?
  /// Operations that waited for this one when they were linked (some may have ended since);
  /// emptied when it ends.
  var dependents: [DependentEntry] = []
  var unfinishedDependencies = 0
  /// The outcome once ended: the body's value, or the error (`CancellationError` when
  /// cancelled).
  var outcome: OutcomeBox?
  /// The error the body threw, when it ended `.cancelled` because cancellation had been
  /// requested (or `.failed`).
  var thrownError: (any Error)?
  var completionHandlers: [@Sendable (Outcome) -> Void] = []
  var waiters: [CheckedContinuation<Void, Never>] = []
  var subscribers: [EventChannel<OperationState>] = []
  /// The order in which operations started (one counter for every queue): excess pausing
  /// pauses the most recently started first among equal priorities.
  var startOrder: UInt64 = 0
  /// Its timeout, early traits and timed waiters: an index into `Scheduler.timeStates`, or -1
  /// (most operations, and those with only a deadline). Taken when it needs one, given back at
  /// its end (see `Scheduler+Time.swift`).
  var timeSlot: Int32 = -1
  /// Its retry state in `Scheduler.retryStates` (-1: no `.retry` trait), in the record's padding.
  var retrySlot: Int32 = -1
  /// What only coalesced work and its callers' handles need, out of line: an operation that
  /// does not coalesce carries one null reference (see ``extras``).
  private(set) var extrasBox: ExtrasBox?

  init(id: OperationID, name: String?, priority: OperationPriority, work: OperationWork) {
    self.id = id
    self.name = name
    self.priority = priority
    switch work {
    case .body(let body): self.body = body
    case .external(let external): self.external = external
    case .follower: break
    }
  }

  /// A record with every field at its initial value, which ``reuse(id:name:priority:work:)``
  /// makes the record of a new operation (see `Scheduler.createOperation`).
  static let vacant = OperationRecord(
    id: OperationID(rawValue: 0), name: nil, priority: .normal, work: .follower)

  /// The fields ``reuse(id:name:priority:work:)`` sets, and those set before they are read
  /// (`order` when enqueued, `startOrder` when started). It assumes every other field of a
  /// free record is at ``vacant``'s value: the tests check that on every free record
  /// (`FreeRecordCheck`), so a field added without resetting it where records are freed fails.
  static let fieldsSetByReuse: Set<String> = [
    "id", "isLive", "name", "priority", "phase", "cancelRequested", "wasEnqueued", "isBarrier",
    "taskCancelled", "escalation", "pauseHeld", "excessPaused", "isWeaklyReferenced",
    "isLetGo", "isHandleGone", "queue",
    "unfinishedDependencies", "extrasBox", "body", "external", "order", "startOrder",
  ]

  /// Makes a free record (every field left as ``Scheduler/releaseOperation(_:owner:now:)``
  /// leaves it) the record of a new operation, field by field: cheaper than assigning a whole
  /// record.
  mutating func reuse(id: OperationID, name: String?, priority: OperationPriority, work: OperationWork) {
    self.id = id
    isLive = true
    self.name = name
    self.priority = priority
    phase = .pending
    cancelRequested = false
    wasEnqueued = false
    isBarrier = false
    taskCancelled = false
    escalation = 0
    pauseHeld = false
    excessPaused = false
    isWeaklyReferenced = false
    isLetGo = false
    isHandleGone = false
    queue = -1
    unfinishedDependencies = 0
    startOrder = 0  // 0 until it starts: `attemptCount` reads it
    if extrasBox != nil { extrasBox = nil }
    switch work {
    case .body(let body): self.body = body
    case .external(let external): self.external = external
    case .follower: break
    }
  }

  /// The error this operation ended with, if it did not finish.
  var failure: (any Error)? {
    if case .failure(let error) = outcome?.value { return error }
    return nil
  }

  /// What only coalesced work and its callers' handles need, kept out of line. Changed in
  /// place: the box is written only while this record holds the sole reference to it (copied
  /// first otherwise), so records keep value semantics (a test copies the whole scheduler).
  var extras: OperationExtras? {
    get { extrasBox?.value }
    _modify {
      let unique = isKnownUniquelyReferenced(&extrasBox)
      var value = unique ? extrasBox!.take() : extrasBox?.value
      defer {
        if let value {
          if unique { extrasBox!.value = value } else { extrasBox = ExtrasBox(value) }
        } else if extrasBox != nil {
          extrasBox = nil
        }
      }
      yield &value
    }
  }

  /// A caller's handle to coalesced work: the shared operation's record, which this one
  /// mirrors (state and outcome); -1 otherwise.
  var leader: Int { extrasBox?.value.leader ?? -1 }

  /// Shared work: whether callers' handles follow it.
  var hasFollowers: Bool { !(extrasBox?.value.followers.isEmpty ?? true) }

  /// The state its handle, its subscribers and its queue's see (for tests; the scheduler reads
  /// `phase.state`: a computed property of a record read through the array may copy the record).
  var state: OperationState { phase.state }

  /// The worker whose task runs its body, or waits in it (for tests).
  var worker: Worker? { phase.worker }

  /// Changes the tasks of a paused body that wait at a checkpoint, in place (the phase is
  /// `.modifying` meanwhile, so the list is not copied); not a transition: the state stays.
  mutating func modifyPauseWaiters<Result>(_ change: (inout [PauseWaiter]) -> Result) -> Result {
    switch phase {
    case .paused(var body):
      phase = .modifying
      defer { phase = .paused(body) }
      return change(&body.waiters)
    case .resumed(var body):
      phase = .modifying
      defer { phase = .resumed(body) }
      return change(&body.waiters)
    case .pending, .ready, .executing, .detached, .following, .ended, .modifying:
      preconditionFailure("Internal inconsistency: \(id) has no paused body")
    }
  }
}

/// Several fields of one record changed in one access: each access to a record through the
/// array checks that its storage is not shared, so the hot paths group their writes.
extension OperationRecord {
  /// Joins `queue` in submission order `order`, after `previous` in its list (-1: first).
  mutating func join(queue: Int, order: UInt64, handle: AnyQueueOperation, previous: Int) {
    self.order = order
    self.queue = queue
    enqueuedHandle = handle
    previousInQueue = previous
  }

  /// Leaves its queue's list; returns its handle and its neighbours there, which the caller
  /// links to each other.
  mutating func leaveQueue() -> (handle: AnyQueueOperation?, previous: Int, next: Int) {
    defer {
      previousInQueue = -1
      nextInQueue = -1
      queue = -1
    }
    return (enqueuedHandle.take(), previousInQueue, nextInQueue)
  }

  /// Claims its body for a worker, as the start `startOrder`, and puts it first in its queue's
  /// list of started bodies, before `next`.
  mutating func claimBody(startOrder: UInt64, nextStarted next: Int) -> OperationBody? {
    self.startOrder = startOrder
    nextStarted = next
    previousStarted = -1
    return body.take()
  }

  /// Leaves its queue's list of started bodies; returns its neighbours there, and whether its
  /// worker's task was asked to cancel (reset: the worker reports it once).
  mutating func leaveStarted() -> (previous: Int, next: Int, taskCancelled: Bool) {
    defer {
      previousStarted = -1
      nextStarted = -1
      taskCancelled = false
    }
    return (previousStarted, nextStarted, taskCancelled)
  }

  /// Ends what only an unfinished operation keeps: its pause requests, and the body it never
  /// ran or its external work, which it returns for the caller to release.
  mutating func dropUnfinished() -> (body: OperationBody?, external: (any ExternalWork)?) {
    pauseHeld = false
    excessPaused = false
    return (body.take(), external.take())
  }

  /// Frees an ended record's index; returns the outcome and the thrown error for the caller to
  /// release.
  mutating func free() -> (outcome: OutcomeBox?, error: (any Error)?) {
    isLive = false
    if !dependencies.isEmpty { dependencies = [] }
    if edgePositions != nil { edgePositions = nil }
    return (outcome.take(), thrownError.take())
  }
}

/// A place in a queue's ready set.
typealias ReadyStamp = ReadyQueue<Int>.Stamp

/// Where an operation is: the one field of its record that says it, with what only that place
/// has. Its observable ``OperationState`` is derived (``state``).
enum Phase: Sendable {
  /// In no ready set and not started: not in a queue yet, waiting for a dependency, or held by
  /// `pause()`.
  case pending
  /// In its queue's ready set: it starts when a slot is free.
  case ready(stamp: ReadyStamp)
  /// Holds a slot of its queue: its body runs on a worker's task, or its external work runs.
  case executing(ExecutionSite)
  /// Its external work runs holding no slot: cancelled while it waited, it was started anyway
  /// (Foundation's rule for legacy operations). It reads as `.executing`, which it is.
  case detached
  /// Its body started and holds no slot: its tasks wait at a checkpoint, or (cancelled) it runs
  /// to its end.
  case paused(PausedBody)
  /// Its paused body was resumed: it competes for a slot in the ready set (state `.ready`), and
  /// continues on its own task once given one.
  case resumed(PausedBody)
  /// A caller's handle to coalesced work: it reads as the work's state.
  case following(shown: OperationState)
  /// Ended, in a terminal state.
  case ended(OperationState)
  /// Only while ``OperationRecord/modifyPauseWaiters(_:)`` changes a payload in place.
  case modifying

  /// Where a slot-holding operation runs.
  enum ExecutionSite: Sendable {
    /// Its body, on this worker's task.
    case worker(Worker)
    /// Its external work, elsewhere.
    case external
  }

  /// The state this phase reads as.
  var state: OperationState {
    switch self {
    case .pending: .pending
    case .ready, .resumed: .ready
    case .executing, .detached: .executing
    case .paused: .paused
    case .following(let shown), .ended(let shown): shown
    case .modifying: preconditionFailure("Internal inconsistency: a phase read while it changes")
    }
  }

  /// The worker whose task runs its body, or waits in it at a checkpoint.
  var worker: Worker? {
    switch self {
    case .executing(.worker(let worker)): worker
    case .paused(let body), .resumed(let body): body.worker
    case .pending, .ready, .executing(.external), .detached, .following, .ended, .modifying: nil
    }
  }

  /// Its body started and waits at a checkpoint, holding no slot (paused, or resumed and
  /// waiting for a slot).
  var isPausedInBody: Bool {
    switch self {
    case .paused, .resumed: true
    case .pending, .ready, .executing, .detached, .following, .ended, .modifying: false
    }
  }

  /// In a ready set, never started (a start there costs permits; a paused body's does not).
  var isReadyToStart: Bool {
    if case .ready = self { return true }
    return false
  }

  /// Its external work runs: in a slot, or detached.
  var runsExternally: Bool {
    switch self {
    case .executing(.external), .detached: true
    case .pending, .ready, .executing(.worker), .paused, .resumed, .following, .ended, .modifying: false
    }
  }

  /// Its external work runs holding no slot, since it was cancelled while waiting.
  var isDetached: Bool {
    if case .detached = self { return true }
    return false
  }

  /// It has ended.
  var hasEnded: Bool {
    if case .ended = self { return true }
    return false
  }

  /// It waits to start: pending or ready, not a resumed body, not detached; for a caller's
  /// handle to coalesced work, the work waits to start.
  var hasNotStarted: Bool {
    switch self {
    case .pending, .ready: true
    case .following(let shown): shown == .pending || shown == .ready
    case .executing, .detached, .paused, .resumed, .ended, .modifying: false
    }
  }

  /// What a transition needs to know of a phase, read in one switch.
  struct Facts {
    var state: OperationState
    var stamp: ReadyStamp?
    var isPausedInReady = false
  }

  var facts: Facts {
    @inline(__always) get {
      switch self {
      case .pending: Facts(state: .pending)
      case .ready(let stamp): Facts(state: .ready, stamp: stamp)
      case .executing, .detached: Facts(state: .executing)
      case .paused(let body): Facts(state: .paused, stamp: body.stamp, isPausedInReady: body.stamp != nil)
      case .resumed(let body): Facts(state: .ready, stamp: body.stamp, isPausedInReady: body.stamp != nil)
      case .following(let shown), .ended(let shown): Facts(state: shown)
      case .modifying: preconditionFailure("Internal inconsistency: a phase read while it changes")
      }
    }
  }

  /// Its place in the ready set, if it is there.
  var stamp: ReadyStamp? {
    switch self {
    case .ready(let stamp): stamp
    case .paused(let body), .resumed(let body): body.stamp
    case .pending, .executing, .detached, .following, .ended, .modifying: nil
    }
  }

  /// A started body in the ready set: what `QueueRecord.pausedInReady` counts.
  var isPausedInReady: Bool {
    switch self {
    case .paused(let body), .resumed(let body): body.stamp != nil
    case .pending, .ready, .executing, .detached, .following, .ended, .modifying: false
    }
  }
}

/// A body that started and holds no slot.
struct PausedBody: Sendable {
  /// The worker whose task runs the body: it continues there once given a slot.
  let worker: Worker
  /// The body's tasks suspended at a checkpoint; resumed when it has a slot again (throwing,
  /// when it is cancelled).
  var waiters: [PauseWaiter] = []
  /// Its place in the ready set: resumed, or paused for the excess (it competes for a slot at
  /// once); `nil` while held by `pause()`, or cancelled (it runs to its end holding no slot).
  var stamp: ReadyStamp?
}

/// The fields of an operation's record that only coalesced work and its callers' handles use.
struct OperationExtras: Sendable {
  /// See ``OperationRecord/leader``.
  var leader = -1
  /// Shared work: the callers' handles that joined it (some may have ended, cancelled).
  var followers: [DependentEntry] = []
  /// Shared work: the handles of the callers still waiting for it, kept alive (as a queue keeps
  /// its operations) so that a handle its caller dropped still ends, runs its completion
  /// handlers and ends its event streams; let go of once each has ended.
  var followerHandles: [AnyQueueOperation] = []
  /// Shared work: the hash of its key in its queue, and the result type every caller must expect.
  var coalescing: (hash: Int, resultType: ObjectIdentifier)?
  /// Shared work: the result type, for the message when a caller expects another.
  var coalescingResultType: Any.Type?
}

/// The box that keeps ``OperationExtras`` out of line of a record: its `extrasBox`, tested for
/// `nil` where `extras` would copy them.
///
/// `@unchecked Sendable`: its one mutable field is written only through
/// ``OperationRecord/extras``, and only while that record holds the sole reference to the box
/// (`isKnownUniquelyReferenced`; a shared box is copied first), as an array's buffer is. Records
/// live in the scheduler value, behind its lock; no box is ever written while another value can
/// read it. A class rather than an array of none or one (which would need no unchecked field):
/// the hot paths test a null reference, not an array's count.
final class ExtrasBox: @unchecked Sendable {
  fileprivate(set) var value: OperationExtras

  fileprivate init(_ value: OperationExtras) {
    self.value = value
  }

  /// Moves the value out, leaving an empty one.
  fileprivate func take() -> OperationExtras {
    var taken = OperationExtras()
    swap(&taken, &value)
    return taken
  }
}

/// A task of an operation's body suspended at ``ActorQueue/checkpoint()`` while the operation is
/// paused.
struct PauseWaiter: Sendable {
  /// Tells this waiter apart when its own task is cancelled.
  let token: UInt64
  /// Resumes the task (an effect: after unlocking); `true`: it throws `CancellationError`.
  let resume: @Sendable (_ cancelled: Bool) -> Void
}

extension Scheduler {
  /// Moves `index` to `next`: the only way its phase changes. Keeps its queue's ready set in
  /// step (a stamp that `next` does not keep is withdrawn, unless `claimed`: the start rule took
  /// it out already, by a claim or a re-sort) and the queue's count of paused bodies in it, and,
  /// when the state it reads as changes, tells its subscribers, its followers and its queue's
  /// subscribers (on an end: the last state each hears; followers end on their own).
  ///
  /// Inlined so that what `next` implies is known where it is built; the rest is `enter`.
  @inline(__always)
  mutating func transition(
    _ index: Int, to next: consuming Phase, claimed: Bool = false, _ effects: inout Effects
  ) {
    let facts = next.facts
    enter(index, next, facts, claimed: claimed, &effects)
  }

  @inline(__always)
  private mutating func enter(
    _ index: Int, _ next: consuming Phase, _ new: Phase.Facts, claimed: Bool, _ effects: inout Effects
  ) {
    let queue = operations[index].queue
    // Swapped in, not copied: the old phase is read from here and released at the end.
    var replaced = next
    swap(&operations[index].phase, &replaced)
    let old = replaced.facts
    if let stamp = old.stamp, stamp != new.stamp, !claimed {
      queues[queue].machine.withdraw(stamp: stamp, priority: operations[index].priority)
      // A head that waited for permits may have left: what follows it may start.
      if queues[queue].hasLimiters { limitedHeadMayHaveChanged(queue) }
    }
    if old.isPausedInReady != new.isPausedInReady {
      queues[queue].pausedInReady += old.isPausedInReady ? -1 : 1
    }
    let state = new.state
    guard state != old.state else { return }
    if !operations[index].subscribers.isEmpty || operations[index].extrasBox != nil
      || (queue >= 0 && !queues[queue].subscribers.isEmpty)
    {
      tell(index, state, in: queue, &effects)
    }
  }

  /// The idle start's transition (`startOnIdle`): a new operation, pending and alone, moves to
  /// `executing` on `worker`. Its caller checked what `transition` would otherwise test (no
  /// stamp, no paused body, nobody to tell), so this sets the phase only: an idle start runs
  /// with cold caches, and each line of code it does not run is one it does not fetch.
  @inline(__always)
  mutating func transition(_ index: Int, toStartAloneOn worker: Worker) {
    // What the general path would record as effects, and the idle start skips: nobody hears.
    assert(
      operations[index].subscribers.isEmpty && operations[index].extrasBox == nil
        && queues[operations[index].queue].subscribers.isEmpty,
      "Internal inconsistency: \(operations[index].id) started alone with someone to tell")
    guard case .pending = operations[index].phase else {
      preconditionFailure("Internal inconsistency: \(operations[index].id) started alone while not pending")
    }
    operations[index].phase = .executing(.worker(worker))
  }

  /// Tells `index`'s subscribers, its followers and its queue's subscribers its new state; on
  /// an end, the last state each hears (followers end on their own). Out of line: most
  /// operations have no one to tell, and its code would make every transition longer to fetch.
  @inline(never)
  private mutating func tell(_ index: Int, _ state: OperationState, in queue: Int, _ effects: inout Effects) {
    if state.isTerminal {
      if !operations[index].subscribers.isEmpty { finishSubscribers(of: index, state, &effects) }
    } else {
      if !operations[index].subscribers.isEmpty { pushState(of: index, state, &effects) }
      if operations[index].extrasBox != nil, operations[index].hasFollowers {
        mirrorToFollowers(index, state, &effects)
      }
    }
    if queue >= 0, !queues[queue].subscribers.isEmpty { emitState(of: index, state, in: queue, &effects) }
  }

  /// Pushes `index`'s new state to its subscribers; drops those whose stream has ended.
  private mutating func pushState(of index: Int, _ newState: OperationState, _ effects: inout Effects) {
    operations[index].subscribers.removeAll { !$0.push(newState, effects: &effects) }
  }
}

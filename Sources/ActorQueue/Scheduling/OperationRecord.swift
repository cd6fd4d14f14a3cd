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
  /// `false` while the index is free.
  var isLive = true
  var name: String?
  var state: OperationState = .pending
  var priority: OperationPriority
  var cancelRequested = false
  var wasEnqueued = false
  var isBarrier = false
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
  /// Set while in the queue's ready set.
  var readyStamp: ReadyQueue<Int>.Stamp?
  /// The body, until a worker claims it or the operation ends without running.
  var body: OperationBody?
  /// External work instead of a body, until the operation ends.
  var external: (any ExternalWork)?
  /// Set while the body runs on a worker task.
  var worker: Worker?
  /// The worker's task was asked to cancel: the worker must not run another operation.
  var taskCancelled = false
  /// External work is running (in a slot, or detached when cancelled while waiting).
  var runsExternally = false
  /// External work started outside the slot accounting (cancelled while waiting).
  var isDetached = false
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
  /// `pause()` was called and `resume()` not since: a waiting operation is held (it does not
  /// become ready); an executing one pauses at its body's next checkpoint and stays paused.
  var pauseHeld = false
  /// Asked to pause at its next checkpoint because the limit was lowered with the excess
  /// paused; once paused, it competes for a slot again by itself.
  var excessPaused = false
  /// The order in which operations started (one counter for every queue): excess pausing
  /// pauses the most recently started first among equal priorities.
  var startOrder: UInt64 = 0
  /// What only operations that pause or coalesce need: kept out of line of the hot fields, so
  /// an operation that does neither carries a single `nil` (nothing to copy or release).
  var extras: OperationExtras?
  /// `extras != nil`, as a plain flag: the hot paths test it without touching `extras`.
  var hasExtras = false
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
    "id", "isLive", "name", "priority", "state", "cancelRequested", "wasEnqueued", "isBarrier",
    "taskCancelled", "runsExternally", "isDetached", "pauseHeld", "excessPaused", "isWeaklyReferenced",
    "isLetGo", "isHandleGone", "queue", "unfinishedDependencies", "extras", "hasExtras", "body", "external",
    "order", "startOrder",
  ]

  /// Makes a free record (every field left as ``Scheduler/releaseOperation(_:owner:now:)``
  /// leaves it) the record of a new operation, field by field: cheaper than assigning a whole
  /// record.
  mutating func reuse(id: OperationID, name: String?, priority: OperationPriority, work: OperationWork) {
    self.id = id
    isLive = true
    self.name = name
    self.priority = priority
    state = .pending
    cancelRequested = false
    wasEnqueued = false
    isBarrier = false
    taskCancelled = false
    runsExternally = false
    isDetached = false
    pauseHeld = false
    excessPaused = false
    isWeaklyReferenced = false
    isLetGo = false
    isHandleGone = false
    queue = -1
    unfinishedDependencies = 0
    if hasExtras {
      extras = nil
      hasExtras = false
    }
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

  /// The body's tasks suspended at a checkpoint while the operation is paused; resumed when it
  /// has a slot again (or throwing, when it is cancelled).
  var pauseWaiters: [PauseWaiter] {
    get { extras?.pauseWaiters ?? [] }
    _modify {
      if extras == nil {
        extras = OperationExtras()
        hasExtras = true
      }
      yield &extras!.pauseWaiters
    }
  }

  /// A caller's handle to coalesced work: the shared operation's record, which this one
  /// mirrors (state and outcome); -1 otherwise.
  var leader: Int { extras?.leader ?? -1 }

  /// Shared work: whether callers' handles follow it.
  var hasFollowers: Bool { !(extras?.followers.isEmpty ?? true) }

}

/// The fields of an operation's record that only operations that pause or coalesce use.
struct OperationExtras: Sendable {
  /// See ``OperationRecord/pauseWaiters``.
  var pauseWaiters: [PauseWaiter] = []
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

/// A task of an operation's body suspended at ``ActorQueue/checkpoint()`` while the operation is
/// paused.
struct PauseWaiter: Sendable {
  /// Tells this waiter apart when its own task is cancelled.
  let token: UInt64
  /// Resumes the task (an effect: after unlocking); `true`: it throws `CancellationError`.
  let resume: @Sendable (_ cancelled: Bool) -> Void
}

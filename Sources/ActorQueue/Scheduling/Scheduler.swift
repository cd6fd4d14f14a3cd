// The scheduler of every queue in the process, as one value.
//
// Where a reader starts:
// - `Scheduler` (this file) holds every scheduling decision's state: a record per operation
//   (state, priority, submission order, its queue and place in it, its dependency edges with their
//   requirement, the unfinished-dependency count, its ready stamp, its work until claimed, its
//   outcome, handlers, waiters and subscribers) and a record per queue (the start rule in
//   `QueueStartRule`: ready set, limit, suspension, slots and worker accounting; the
//   unfinished operations in submission order; its unfinished barriers; its linger policy). It
//   lives in one lock (`Engine.scheduler`), so no scheduling field is reachable without it.
// - Each event is one `mutating` method that records into a `SchedulerEffects` value what to do
//   once the lock is released (start worker tasks, resume waiters and event consumers, run
//   completion handlers, cancel tasks, start or cancel external work, and release whatever the
//   user gave us); a worker's events also return its next `WorkerAction`. The value performs
//   no effect and runs no user code; `Engine` performs the effects. (The effects are an `inout`
//   parameter rather than a return value only because the value is large and is then never
//   copied; it is the same contract.)
// - Starts are decided once per event, at its end (`settle`): an event changes the ready sets
//   first (a batch is submitted whole, every cancellation of `cancelAllOperations()` is done)
//   and only then are operations claimed and workers asked for. So a batch is scheduled by
//   priority, and nothing that the same event is about to cancel can start. One shortcut: an
//   operation added alone to an idle queue, where nothing else could happen in that event, is
//   enqueued and claimed for a new worker in one step (`startOnIdle`), to the same outcome.
// - Time is an input: the events that may decide about lingering take `now`, a
//   `SchedulerInstant` (integer nanoseconds of the monotonic clock: cheap to read and compare
//   on an idle queue's start, where `ContinuousClock` cost about 3 µs); tests drive it
//   (`SchedulerTests`, and the random tester on the value).
// - Pausing (`Scheduler+Pause.swift`) and coalescing (`Scheduler+Coalescing.swift`) are events
//   of the same value. A paused body is an operation whose worker task waits at a checkpoint,
//   holding no slot; given a slot again, it continues on that task (no worker is started for
//   it). Coalesced work is one operation of its queue; each caller's handle is a record that
//   follows it. Their fields live out of line (`OperationExtras`), so an operation that does
//   neither pays one `nil` for them.
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

/// An operation's outcome, type-erased: the body's value, or the error it ended with.
typealias Outcome = Result<any Sendable, any Error>

/// An outcome as one reference: created outside the lock (by the body's typed wrapper, once the
/// body returned), moved and released as one pointer. A body that returned `()` needs no box
/// (a null reference: nothing allocated, and nothing to count, since retaining or releasing it
/// writes no memory); every operation cancelled before its body returned shares one box.
///
/// Measured: a box per `()` outcome was about 4% of the bench's independent trivial rows; one
/// box shared by them all made every worker thread write its reference count, a cache line
/// that moved between the cores for each operation (limit 4, two threads).
struct OutcomeBox: Sendable {
  /// `nil`: the body returned `()`.
  private let box: Box?

  private final class Box: Sendable {
    let value: Outcome
    init(_ value: Outcome) { self.value = value }
  }

  init(_ value: Outcome) {
    box = Box(value)
  }

  private init(void: ()) {
    box = nil
  }

  var value: Outcome { box?.value ?? .success(()) }

  /// Whether this is a `()` outcome, which holds no box (for tests).
  var holdsNoBox: Bool { box == nil }

  /// Whether both are the same outcome: the same box, or both `()` (for tests).
  func isSame(as other: OutcomeBox) -> Bool { box === other.box }

  /// The outcome of every operation cancelled before its body returned: one instance, so
  /// cancelling 100,000 waiting operations allocates nothing per operation.
  static let cancelled = OutcomeBox(.failure(CancellationError()))

  /// The outcome of a body that returned `()`: no box.
  static var void: OutcomeBox { OutcomeBox(void: ()) }

  /// The outcome of a body that returned `value`.
  @inline(__always)
  static func success<Success: Sendable>(_ value: Success) -> OutcomeBox {
    if Success.self == Void.self { return void }
    return OutcomeBox(.success(value))
  }
}

/// The body of an operation, type-erased so the worker's hot path runs no unspecialised
/// generic code.
enum OperationBody: Sendable {
  /// A body that returns `()` and cannot throw, kept as it was given: no wrapper closure to
  /// allocate, no reabstraction thunks between the worker and the body (measured: a
  /// `() async -> Void` value given to the generic `addOperation` cost three closure contexts
  /// and three async frames per operation), and nothing to box when it returns.
  case void(@Sendable () async -> Void)
  /// Any other body, wrapped to return its value already boxed as the outcome (see
  /// ``OperationWork/typed(_:)``).
  case boxing(@Sendable () async throws -> OutcomeBox)
}

/// What an operation runs when it starts.
enum OperationWork: Sendable {
  /// A body returning `Success`, run by a worker task of its queue; its value is boxed by the
  /// typed wrapper, where `Success` is known (a body returning `()` shares one box).
  @inline(__always)
  static func typed<Success: Sendable>(_ body: @escaping @Sendable () async throws -> Success)
    -> OperationWork
  {
    .body(.boxing { OutcomeBox.success(try await body()) })
  }

  /// A body returning `()` that cannot throw, run by a worker task of its queue as it is.
  @inline(__always)
  static func void(_ body: @escaping @Sendable () async -> Void) -> OperationWork {
    .body(.void(body))
  }

  /// A body, run by a worker task of its queue.
  case body(OperationBody)
  /// Work that runs elsewhere (a thread, a callback API) and reports its end.
  case external(any ExternalWork)
  /// None of its own: a caller's handle to coalesced work (``OperationRecord/leader``), which it
  /// follows.
  case follower
}

/// Work that runs elsewhere (a thread, a callback API) and reports its end, for an operation
/// made with ``QueueOperation/init(name:priority:external:)`` (package-internal: the
/// OperationAdapter's legacy operations conform). The scheduler calls each method once the lock
/// is released.
///
/// A protocol rather than a bundle of closures: the adapter's object that runs a legacy
/// operation is its external work as it is, so an operation costs no closure allocations.
package protocol ExternalWork: AnyObject, Sendable {
  /// With `true`, an operation cancelled while waiting in a queue is not ended at once: its work
  /// is started outside the slot accounting (Foundation's rule, which the OperationAdapter
  /// follows), and it ends when the work reports its end.
  var startsWhenCancelled: Bool { get }
  /// Starts the work, which reports its end through `complete` (from any thread; later calls
  /// are ignored). Must return promptly.
  func start(_ complete: @escaping @Sendable (Result<any Sendable, any Error>) -> Void)
  /// The operation was cancelled while its work runs (on the cancelling thread).
  func cancel()
  /// The operation has ended, however it ended (before its completion handlers run).
  func ended()
}

/// External work given as closures.
final class ClosureExternalWork: ExternalWork {
  let startsWhenCancelled: Bool
  private let startWork: @Sendable (_ complete: @escaping @Sendable (Outcome) -> Void) -> Void
  private let cancelWork: @Sendable () -> Void

  init(
    start: @escaping @Sendable (_ complete: @escaping @Sendable (Outcome) -> Void) -> Void,
    cancel: @escaping @Sendable () -> Void, startsWhenCancelled: Bool
  ) {
    self.startWork = start
    self.cancelWork = cancel
    self.startsWhenCancelled = startsWhenCancelled
  }

  func start(_ complete: @escaping @Sendable (Outcome) -> Void) { startWork(complete) }
  func cancel() { cancelWork() }
  func ended() {}
}

/// A coalescing key, type-erased: made only from `Hashable & Sendable` values, so it is
/// `Sendable` as checked (an `AnyHashable` is not, as it may hold any value). Its `==` and
/// `hash(into:)` are the key's own, and run only outside the scheduler's lock.
struct CoalescingKey: Hashable, Sendable {
  let base: any Hashable & Sendable

  init(_ key: some Hashable & Sendable) {
    base = key
  }

  static func == (lhs: CoalescingKey, rhs: CoalescingKey) -> Bool {
    AnyHashable(lhs.base) == AnyHashable(rhs.base)
  }

  func hash(into hasher: inout Hasher) {
    AnyHashable(base).hash(into: &hasher)
  }
}

/// The coalesced work of one queue whose keys have one hash value.
///
/// Keys are compared outside the lock (their `==` is user code): a caller copies the bucket,
/// finds its key in the copy, and submits what it found with the bucket's version; a bucket
/// changed meanwhile makes it look again.
struct CoalescingBucket: Sendable {
  struct Entry: Sendable {
    let key: CoalescingKey
    let leader: Int
    let leaderID: OperationID
  }

  /// Changes whenever an entry is added or removed.
  var version: UInt64 = 0
  var entries: [Entry] = []
}

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

  /// Whether this operation, new, may start on an idle queue in one step
  /// (`Scheduler.startOnIdle`): nothing waits on it and it waits on nothing.
  var startsAlone: Bool {
    state == .pending && !wasEnqueued && external == nil && !hasExtras && subscribers.isEmpty
      && unfinishedDependencies == 0 && !pauseHeld
  }

  /// Enqueues this new operation on `queue` and moves it to `.executing` on `worker`, in one
  /// access to the record (`Scheduler.startOnIdle`); returns the worker's first step.
  mutating func startAlone(
    as index: Int, in queue: Int, order: UInt64, startOrder: UInt64, previous: Int, handle: AnyQueueOperation,
    worker: Worker
  ) -> WorkerAction {
    guard let body = body.take() else {
      preconditionFailure("Internal inconsistency: \(id) was claimed twice")
    }
    wasEnqueued = true
    self.queue = queue
    self.order = order
    self.startOrder = startOrder
    enqueuedHandle = handle
    previousInQueue = previous
    self.worker = worker
    state = .executing
    return .run(operation: index, id: id, body: body)
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

/// One queue's scheduling record.
struct QueueRecord: Sendable {
  /// Distinguishes this queue from earlier ones that used the same index.
  var generation: UInt64
  var isLive = true
  var name: String?
  /// The priority of its worker tasks (`TaskPriority.rawValue`): a `TaskPriority` is a
  /// resilient type whose layout is known only at run time, which would make every record
  /// that holds one slow to copy and test (its optionals through value witnesses).
  var taskPriority: UInt8?
  /// The start rule: ready operations, slots, workers, limit, suspension.
  var machine: QueueStartRule<Int>
  /// Unfinished operations in submission order: a list threaded through their records (O(1)
  /// to add and to leave, in any order); -1: none.
  var first = -1
  var last = -1
  var unfinishedCount = 0
  /// Tasks in `waitUntilAllOperationsAreFinished()`.
  var allFinishedWaiters: [CheckedContinuation<Void, Never>] = []
  /// Unfinished barriers, oldest first: operations added now wait for each of them.
  var barriers: [Int] = []
  /// Subscribers of `ActorQueue.events`.
  var subscribers: [EventChannel<QueueEvent>] = []
  /// Whether a worker that finds this queue idle lingers (see ``LingerPolicy``).
  var linger = LingerPolicy()
  /// The `ActorQueue` is gone: the record is freed once nothing runs or waits in it.
  var isReleased = false
  /// Changed by the current event: its starts are decided at the end of the event.
  var isTouched = false
  /// Some executing operation was asked to pause because the limit was lowered with the excess
  /// paused, and has not reached a checkpoint yet: each slot freed meanwhile withdraws a request
  /// that is no longer needed.
  var hasExcessRequests = false
  /// Paused bodies in the ready set (resumed, or paused for the excess): only then does
  /// deciding starts look for one at the head to give a slot to without a worker.
  var pausedInReady = 0
  /// Coalesced work waiting or executing, by the hash of its key (see ``CoalescingBucket``).
  var coalesced: [Int: CoalescingBucket] = [:]
  /// Some operation with external work was added (sticky): only then does deciding starts
  /// look for external work at the head of the ready set.
  var hasExternalWork = false
  /// Where each whole-queue call in progress is in this queue's list (see `BulkWork`).
  var walkCursors: [WalkCursor] = []
  /// The operations whose body runs on a worker, executing or paused at a checkpoint, most
  /// recently started first (a list threaded through their records; -1: none): what limit
  /// changes look at, so they cost what executes, not the whole backlog.
  var firstStarted = -1

  /// Whether an operation added now may start in one step (`Scheduler.startOnIdle`), as far as
  /// this record knows; the start rule decides the rest (`QueueStartRule.takeSlotOnIdle()`).
  var admitsIdleStart: Bool {
    barriers.isEmpty && subscribers.isEmpty && !hasExcessRequests && pausedInReady == 0
  }

  /// Appends `index`, just enqueued, to the queue's unfinished operations in submission order;
  /// returns the operation it follows (-1: none), whose `nextInQueue` the caller links.
  mutating func append(_ index: Int) -> Int {
    let previous = last
    if previous < 0 { first = index }
    last = index
    unfinishedCount += 1
    return previous
  }
}

/// Identifies a queue's record: its index, and the generation that tells it from a later queue
/// that reuses the index.
struct QueueReference: Hashable, Sendable {
  let index: Int
  let generation: UInt64
}

/// An operation's handle, as the scheduler and its effects hold it.
typealias Handle = AnyQueueOperation

/// The whole scheduling state of the process; see the top of this file.
struct Scheduler: Sendable {
  typealias Effects = SchedulerEffects

  var operations: [OperationRecord] = []
  private var freeOperations: [Int] = []
  /// The free records' indices (for tests).
  var freeRecordIndices: [Int] { freeOperations }
  /// The most records live at once, the records created, and when, since the storage was last
  /// judged (see `judgeStorageIfAllFree(now:)`).
  private var peakLiveOperations = 0
  private var createdSinceJudged = 0
  private var storageJudgedAt: SchedulerInstant?
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
  /// Identifies whole-queue walks.
  var nextWalkToken: UInt64 = 0
  var queues: [QueueRecord] = []
  private var freeQueues: [Int] = []
  private var nextQueueGeneration: UInt64 = 0
  /// Submission order: one counter for all queues.
  var nextSubmission: UInt64 = 0
  /// Start order: one counter for all queues.
  var nextStart: UInt64 = 0
  /// The global order of events.
  private(set) var nextEventSequence: UInt64 = 0
  /// Workers lingering on an idle queue (see ``LingerPolicy``): at most one in the process, so
  /// lingering never keeps more than one thread of the pool busy.
  var lingeringWorkers = 0
  /// Queues changed by the current event, whose starts `settle` decides.
  var touched: [Int] = []
  /// Handles let go of by released operations while another thread releases a chain of them
  /// (see ``releaseOperation(_:owner:now:)``).
  private var releaseBacklog: [Handle] = []
  private var isDrainingBacklog = false

  /// The workers asked to pause, where checkpoints find them: the process's queues share
  /// `Engine.pauses`; a test's scheduler value has its own.
  let pauses: PauseDirectory

  init(pauses: PauseDirectory = PauseDirectory()) {
    self.pauses = pauses
  }

  // MARK: Operations

  /// Creates the record of a new handle; returns its index. O(1).
  mutating func createOperation(
    id: OperationID, name: String?, priority: OperationPriority, work: OperationWork
  ) -> Int {
    defer {
      createdSinceJudged &+= 1
      let live = operations.count - freeOperations.count
      if live > peakLiveOperations { peakLiveOperations = live }
    }
    if let index = freeOperations.popLast() {
      operations[index].reuse(id: id, name: name, priority: priority, work: work)
      return index
    }
    // A new slot is appended empty and filled in place, as a freed one is: appending a record
    // built for it copied the whole record through its value witness, then destroyed the
    // original (callgrind: about 345 instructions more per record appended).
    operations.append(OperationRecord.vacant)
    let index = operations.count - 1
    operations[index].reuse(id: id, name: name, priority: priority, work: work)
    return index
  }

  /// What a released handle's record let go of.
  struct Released: Sendable {
    /// User-owned values, released by the caller after unlocking.
    var garbage: Garbage
    /// The handle is the first of a chain being released: the caller releases `garbage`, then
    /// drains ``takeReleaseBacklog()`` until it is empty.
    var drains: Bool
    /// The handle was the last reference to an operation its released queue had let go of:
    /// what its cancellation decided, performed by the caller after unlocking.
    var effects: SchedulerEffects? = nil
  }

  /// The handle that owned `index` was deinitialised: frees its record. Its dependencies (the
  /// only handles a record can own after its handle is gone) go to the release backlog when
  /// another release is being drained, so a dropped chain of any length is released
  /// iteratively.
  mutating func releaseOperation(
    _ index: Int, owner: OperationID, now: () -> SchedulerInstant
  ) -> Released {
    guard operations[index].isLive, operations[index].id == owner else {
      preconditionFailure(
        "Internal inconsistency: operation record \(index) released by a handle it does not belong to")
    }
    if !operations[index].state.isTerminal, operations[index].isLetGo || isFollowerOfLetGoWork(index) {
      return Released(garbage: Garbage(), drains: false, effects: handleGone(index, now: now))
    }
    precondition(
      operations[index].queue == -1 && operations[index].worker == nil && !operations[index].runsExternally,
      "Internal inconsistency: the handle of \(owner) was released while its queue still held it")
    if operations[index].state.isTerminal {
      // The common case, an operation that ended.
      var effects = Effects()
      freeEnded(index, owner: owner, &effects)
      judgeStorageIfAllFree(now: now)
      return Released(garbage: effects.garbage, drains: false)
    }
    operations[index].isLive = false
    freeOperations.append(index)
    var garbage = Garbage()
    // Dependencies that still list it as a dependent skip it by its identifier (the index may
    // be reused), so there is nothing to unlink there. What it owned is taken out in place.
    if !operations[index].dependencies.isEmpty {
      for edge in operations[index].dependencies {
        if let handle = edge.handle { garbage.releaseLater(handle: handle) }
      }
      operations[index].dependencies = []
    }
    if let outcome = operations[index].outcome.take() { garbage.releaseLater(outcome: outcome) }
    if let body = operations[index].body.take() { garbage.releaseLater(body: body) }
    if let external = operations[index].external.take() { garbage.releaseLater(external: external) }
    if let error = operations[index].thrownError.take() { garbage.releaseLater(error: error) }
    operations[index].readyStamp = nil
    operations[index].edgePositions = nil
    if !operations[index].dependents.isEmpty { operations[index].dependents = [] }
    if !operations[index].completionHandlers.isEmpty {
      garbage.releaseLater(operations[index].completionHandlers)
      operations[index].completionHandlers = []
    }
    if !operations[index].subscribers.isEmpty { operations[index].subscribers = [] }
    judgeStorageIfAllFree(now: now)
    guard garbage.hasHandles else { return Released(garbage: garbage, drains: false) }
    if isDrainingBacklog {
      releaseBacklog.append(contentsOf: garbage.takeHandles())
      return Released(garbage: garbage, drains: false)
    }
    isDrainingBacklog = true
    return Released(garbage: garbage, drains: true)
  }

  /// Frees the record of an ended operation whose handle is being released (by its `deinit`,
  /// or by its end when the queue held the last reference): its end let go of everything but
  /// its outcome, the error it threw and weak references to its dependencies. O(1).
  mutating func freeEnded(_ index: Int, owner: OperationID, _ effects: inout Effects) {
    precondition(
      operations[index].isLive && operations[index].id == owner && operations[index].state.isTerminal,
      "Internal inconsistency: operation record \(index) freed while not an ended operation of \(owner)")
    operations[index].isLive = false
    freeOperations.append(index)
    if let outcome = operations[index].outcome.take() { effects.garbage.releaseLater(outcome: outcome) }
    if let error = operations[index].thrownError.take() { effects.garbage.releaseLater(error: error) }
    if !operations[index].dependencies.isEmpty { operations[index].dependencies = [] }
    if operations[index].edgePositions != nil { operations[index].edgePositions = nil }
    // An end that freed the last record is judged at the end of its event, by `settle`, which
    // knows the time.
  }

  /// How long the records' storage may stay underused before it is given back, whatever the
  /// number of operations meanwhile (see `judgeStorageIfAllFree(now:)`).
  static let storageWindow: Duration = .nanoseconds(storageWindowNanoseconds)
  /// ``storageWindow`` in nanoseconds: what the judgement compares.
  static let storageWindowNanoseconds: Int64 = 1_000_000_000

  /// Once no operation of the process has a record any more (every handle is gone), the records'
  /// storage is judged. It is kept if a quarter of it or more was in use at once since it was
  /// last judged, and given back if not, once as many operations as it holds have come and gone
  /// since then or ``storageWindow`` has passed; until then it is judged again at the next such
  /// moment. Memory follows the recent peak of live operations, not the largest burst ever seen,
  /// and a workload that repeats bursts of one size keeps its storage instead of growing it again
  /// each time (measured: regrowing the storage for 100,000 operations cost about 30 ms of CPU, a
  /// third of running them, most of it copying and page faults under the lock). Not judged on
  /// less work or time, because every record is also free for a moment whenever the workers
  /// catch up with a burst that is still being added: judged at such a moment, on the few
  /// operations since the last one, the storage was given back in the middle of the burst and
  /// grown again at once (counted with callgrind: three rounds of 100,000 trivial operations at
  /// limit 4 regrew it from nothing in every round, copying and destroying a record per
  /// operation, and cost 13% more instructions). O(1) amortised: every record dropped was added by
  /// an operation that found no free one, and the free list is rebuilt only after a quarter of
  /// the storage was in use at once since the last judgement, which took that many new
  /// operations.
  ///
  /// Kept after a burst, the free records are handed out again from the lowest index up (the
  /// free list is rebuilt in order, once per burst that used a quarter of the storage or more):
  /// left in the order the burst freed them, the next work's records were scattered over the
  /// whole storage (measured: 10,000 legacy operations after a 100,000-operation burst took
  /// 30–38 ms instead of 18–22 ms).
  @inline(never)
  private mutating func judgeStorageIfAllFree(now: () -> SchedulerInstant) {
    guard freeOperations.count == operations.count else { return }
    if operations.count > 1024 {
      let instant = now()
      if peakLiveOperations >= operations.count / 4 {
        if peakLiveOperations > 1024 {
          freeOperations.removeAll(keepingCapacity: true)
          freeOperations.append(contentsOf: stride(from: operations.count - 1, through: 0, by: -1))
        }
      } else if createdSinceJudged < operations.count, let judged = storageJudgedAt,
        instant.nanoseconds &- judged.nanoseconds < Self.storageWindowNanoseconds
      {
        return  // too little work and time since it was judged to tell
      } else {
        operations = []
        freeOperations = []
      }
      storageJudgedAt = instant
    }
    peakLiveOperations = 0
    createdSinceJudged = 0
  }

  /// The next handles to release while draining a chain; `[]` ends the drain.
  mutating func takeReleaseBacklog() -> [Handle] {
    if releaseBacklog.isEmpty {
      isDrainingBacklog = false
      return []
    }
    defer { releaseBacklog = [] }
    return releaseBacklog
  }

  // MARK: Queues

  /// Creates a queue's record.
  mutating func createQueue(name: String?, limit: Int, taskPriority: TaskPriority?) -> QueueReference {
    nextQueueGeneration += 1
    let record = QueueRecord(
      generation: nextQueueGeneration, name: name, taskPriority: taskPriority?.rawValue,
      machine: QueueStartRule(limit: limit))
    if let index = freeQueues.popLast() {
      queues[index] = record
      return QueueReference(index: index, generation: nextQueueGeneration)
    }
    queues.append(record)
    return QueueReference(index: queues.count - 1, generation: nextQueueGeneration)
  }

  /// Whether the queue's record still exists (its `ActorQueue` or its work is alive).
  func isLive(_ queue: QueueReference) -> Bool {
    queue.index < queues.count && queues[queue.index].isLive
      && queues[queue.index].generation == queue.generation
  }

  /// The queue's `ActorQueue` was released. A suspended queue that nobody can resume any more
  /// cancels its waiting operations; a queue with nothing left is freed (its event streams
  /// end).
  ///
  /// Nobody can reach what `pause()` holds there but through a handle outside the queue: the
  /// queue lets go of it, so that it ends once the last such handle goes. Suspended, nobody can
  /// resume the queue: what waits for a start or for a slot again (a body paused at a
  /// checkpoint) would wait forever, and is cancelled. Both in slices of the lock, as
  /// `cancelAllOperations()`.
  mutating func releaseQueue(_ queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects) {
    queues[queue].isReleased = true
    let reference = QueueReference(index: queue, generation: queues[queue].generation)
    if queues[queue].first >= 0 { beginWalk(.release, in: queue, &effects) }
    if isLive(reference) { freeQueueIfDone(queue, &effects) }
    settle(now: now, &effects)
  }

  /// Frees a released queue's record once no operation and no worker is left in it.
  mutating func freeQueueIfDone(_ queue: Int, _ effects: inout Effects) {
    guard queues[queue].isLive, queues[queue].isReleased, queues[queue].unfinishedCount == 0,
      queues[queue].machine.executing == 0, queues[queue].machine.startingWorkers == 0
    else { return }
    let generation = queues[queue].generation
    for subscriber in queues[queue].subscribers { subscriber.finish(effects: &effects) }
    effects.garbage.releaseLater(queues[queue].subscribers)
    queues[queue] = QueueRecord(
      generation: generation, isLive: false, machine: QueueStartRule(limit: 1))
    freeQueues.append(queue)
  }

  // MARK: Reading (each under the lock, O(1) unless stated)

  /// Whether a cancellation of the waiting operation `index` starts its work instead of ending
  /// it (a legacy operation's).
  func startsWhenCancelled(_ index: Int) -> Bool {
    guard let external = operations[index].external else { return false }
    return external.startsWhenCancelled
  }

  /// Whether the body of `index` started and is suspended at a checkpoint, holding no slot
  /// (state `.paused`, or `.ready` once resumed while it waits for a slot). Reads stored fields
  /// only: a computed property of a record, or optional chaining through one of its fields
  /// (`operations[i].field?.x`), may copy the whole record (measured: it did, in `endOne`).
  func isPausedInBody(_ index: Int) -> Bool {
    operations[index].worker != nil
      && (operations[index].state == .paused || operations[index].state == .ready)
  }

  func state(of index: Int) -> OperationState { operations[index].state }
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
    guard !operations[index].state.isTerminal else { return false }
    operations[index].waiters.append(continuation)
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
    if operations[index].state.isTerminal, let outcome = operations[index].outcome { return outcome }
    operations[index].completionHandlers.append(handler)
    return nil
  }

  /// Subscribes `channel` to `index`'s states: the current one first.
  mutating func subscribe(_ channel: EventChannel<OperationState>, to index: Int, _ effects: inout Effects) {
    let state = operations[index].state
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
    if operations[index].hasExtras, operations[index].leader >= 0, !operations[index].state.isTerminal {
      raiseLeaderPriority(operations[index].leader)  // its own priority only says what it asks for
      return
    }
    if let stamp = operations[index].readyStamp {
      let queue = operations[index].queue
      operations[index].readyStamp = queues[queue].machine.reprioritize(
        index, stamp: stamp, order: operations[index].order, from: old, to: priority)
    }
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

  /// Moves `index` to a non-terminal `newState` and tells its subscribers and its queue's.
  mutating func transition(_ index: Int, to newState: OperationState, _ effects: inout Effects) {
    operations[index].state = newState
    // Who hears of it, out of line: most operations have no subscriber and no follower, and
    // the code that tells them would make every transition set up its generic types.
    if !operations[index].subscribers.isEmpty { pushState(of: index, newState, &effects) }
    if operations[index].hasExtras, operations[index].hasFollowers {
      mirrorToFollowers(index, newState, &effects)
    }
    let queue = operations[index].queue
    if queue >= 0, !queues[queue].subscribers.isEmpty { emitState(of: index, newState, in: queue, &effects) }
  }

  /// Pushes `index`'s new state to its subscribers; drops those whose stream has ended.
  @inline(never)
  private mutating func pushState(of index: Int, _ newState: OperationState, _ effects: inout Effects) {
    operations[index].subscribers.removeAll { !$0.push(newState, effects: &effects) }
  }

  // MARK: Deciding starts

  /// Marks `queue` as changed by the current event.
  mutating func touch(_ queue: Int) {
    guard !queues[queue].isTouched else { return }
    queues[queue].isTouched = true
    touched.append(queue)
    if hasBulk { holdForBulk(queue) }
  }

  /// Decides the starts of every queue the current event changed: called once, at the end of
  /// each event. A queue that needs a worker gets one; an idle queue's new worker starts with
  /// the best ready operation claimed for it here, so an add→start on an idle queue takes the
  /// lock once on each side.
  mutating func settle(now: () -> SchedulerInstant, _ effects: inout Effects) {
    if hasBulk { holdOrLetGoQueues() }
    var position = 0
    while position < touched.count {
      let queue = touched[position]
      position += 1
      queues[queue].isTouched = false
      // The rare cases are out of line, so that the common path (an idle queue's start, above
      // all) is compact: with cold caches, what a start costs is the cache lines it touches, and
      // with them inline the whole of this function was touched (callgrind's cache simulator).
      if queues[queue].hasExcessRequests || queues[queue].pausedInReady > 0 || queues[queue].hasExternalWork {
        startWithoutWorkers(queue, &effects)
      }
      if queues[queue].machine.readyCount > 0, queues[queue].machine.isLingering {
        effects.wakeLingerer = true
      }
      guard queues[queue].machine.needsWorker() else { continue }
      if queues[queue].machine.executing == 0 {
        queues[queue].linger.workArrived(at: now())
        let worker = Worker(queue: queue)
        let step = queues[queue].machine.claimForStartingWorker()
        let first = apply(step, worker: worker, queue: queue, &effects)
        if case .retire = first { continue }
        effects.spawn(
          Spawn(taskPriority: queues[queue].taskPriority, worker: worker, first: first))
      } else {
        effects.spawn(Spawn(taskPriority: queues[queue].taskPriority, worker: Worker(queue: queue)))
      }
    }
    // An end that freed the last record leaves every record free: the storage is judged. Tested
    // here rather than in the call, which costs every event a call (callgrind: 43 instructions
    // per `addOperation`).
    if freeOperations.count == operations.count { judgeStorageIfAllFree(now: now) }
    if sliceWork > 0 || hasBulk { endSlice(&effects) }
    // Emptied from the end, keeping the storage: nearly always one element, and
    // `removeAll(keepingCapacity:)` costs a general range replacement (about 60 instructions
    // per event, counted with callgrind) where `removeLast()` costs a few.
    while !touched.isEmpty { touched.removeLast() }
  }

  /// The starts of `queue` that need no worker: requests to pause the excess that are no longer
  /// needed are withdrawn, paused bodies given a slot continue on their own tasks, and external
  /// work is given its slot (started once the lock is released, on this thread: see
  /// `Engine.startExternal`).
  @inline(never)
  private mutating func startWithoutWorkers(_ queue: Int, _ effects: inout Effects) {
    if queues[queue].hasExcessRequests { withdrawUnneededExcessRequests(in: queue) }
    // A paused body given a slot continues on the task it paused in: no worker needed.
    while queues[queue].pausedInReady > 0, queues[queue].machine.canStartNow,
      let head = queues[queue].machine.peekReady(), isPausedInBody(head)
    {
      _ = queues[queue].machine.claimWithoutWorker()
      grantSlot(toPaused: head, &effects)
    }
    // External work runs elsewhere and needs no worker.
    if queues[queue].hasExternalWork {
      while queues[queue].machine.canStartNow, let head = queues[queue].machine.peekReady(),
        operations[head].external != nil, operations[head].worker == nil
      {
        _ = queues[queue].machine.claimWithoutWorker()
        startExternalInSlot(head, &effects)
      }
    }
  }
}

extension Array where Element == Int {
  /// Removes the first occurrence of `element`, keeping the order of the rest.
  mutating func removeFirst(_ element: Int) {
    guard let position = firstIndex(of: element) else { return }
    remove(at: position)
  }
}

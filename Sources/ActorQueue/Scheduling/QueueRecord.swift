/// One queue's scheduling record.
struct QueueRecord: Sendable {
  /// Distinguishes this queue from earlier ones that used the same index.
  var generation: UInt64
  /// The `ActorQueue` this record belongs to, while it lives: what ``ActorQueue/current``
  /// returns to a body of this queue.
  weak var owner: ActorQueue?
  var isLive = true
  var name: String?
  /// The priority of its worker tasks (`TaskPriority.rawValue`): a `TaskPriority` is a
  /// resilient type whose layout is known only at run time, which would make every record
  /// that holds one slow to copy and test (its optionals through value witnesses).
  var taskPriority: UInt8?
  /// The ``QueueClock`` its operations' deadlines and timeouts are measured on (its `id`).
  var clock: UInt64 = 0
  /// The task executor its worker tasks prefer, if any; let go of outside the lock when the
  /// record is freed (it is the user's).
  var taskExecutor: (any TaskExecutor)?
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
  /// The next queue the current event changed (see `Scheduler.firstTouched`); -1: none.
  var nextTouched = -1
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
  /// An operation with exclusivity keys was added, or it lists a limiter another queue lists
  /// (sticky): its starts are all decided by `Scheduler.arbitrate`, across such queues
  /// (`Scheduler.exclusiveQueues`).
  var isArbitrated = false
  /// Its rate limiters (`Scheduler.limiterStates` slots; see `Scheduler+RateLimits.swift`), and
  /// the objects that keep them alive, let go of outside the lock.
  var limiters: [Int] = []
  var limiterObjects: [RateLimiter] = []
  /// `!limiters.isEmpty`, as a flag: one load in every add's idle-start check.
  var hasLimiters = false
  /// Its only limiter's slot, or -1 (none, or several): a gate asks it without walking the array.
  var soleLimiter = -1
  /// It has limiters, each listed by no other queue, and no keys: its starts go through the start
  /// rule as any queue's, gated by its head's permits (`Scheduler.gatePermits`), not arbitration.
  var gatesPermits = false
  /// The greedy round (`Scheduler.greedyRound`) that passed it over: its head waits for permits.
  var skippedRound: UInt64 = 0
  /// When skipped: the instant its head's permits conform (nil: it waits for a better-ranked
  /// head's start, which shares one of its limiters).
  var throttledUntil: Int64?
  /// The instant of its armed permit timer, if one is armed.
  var armedThrottle: Int64?
  /// Where each whole-queue call in progress is in this queue's list (see `BulkWork`).
  var walkCursors: [WalkCursor] = []
  /// The operations whose body runs on a worker, executing or paused at a checkpoint, most
  /// recently started first (a list threaded through their records; -1: none): what limit
  /// changes look at, so they cost what executes, not the whole backlog.
  var firstStarted = -1
  /// It is an operation group's queue (``OperationGroup/queue``), whose group is in
  /// `Scheduler.groupRecords`: one flag for the paths every add and end take.
  var isGroup = false
  /// The most unfinished operations a submitter that asks for space may add to (``ActorQueue/capacity``);
  /// `Int.max`: unbounded.
  var capacity = Int.max
  /// Submitters wait for space (`Scheduler.capacityLines`): one flag for the path every end takes.
  var hasCapacityWaiters = false
  /// Its operations that ended, by terminal state (the rest of ``ActorQueue/counts`` is derived:
  /// see `Scheduler.counts(of:)`).
  var ended = QueueCounts()
  /// Its legacy operations running detached (cancelled while waiting, started anyway, holding no
  /// slot): executing, but neither in a slot nor among the started bodies.
  var detachedCount = 0
  /// Its policy is ``EscalationPolicy/taskPriorityAndOrder``: an escalated waiting operation is
  /// raised to `.veryHigh`.
  var reordersEscalated = false

  /// Leaves the list of queues the current event changed; returns the next one there.
  mutating func untouch() -> Int {
    defer {
      isTouched = false
      nextTouched = -1
    }
    return nextTouched
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

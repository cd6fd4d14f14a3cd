/// The start rule of one queue, as a value: which ready operation starts next, and when a
/// worker task must be started. It performs no effect; `Engine` applies its decisions.
///
/// Slots: `executing` operations hold a slot each. Workers: a worker is a task that runs
/// operations one after another; a *starting* worker has been asked for (spawned) but has not
/// claimed an operation yet. At most one worker is starting at a time: a worker that claims an
/// operation asks for the next worker while ready operations still wait for a free slot. So
/// the number of worker tasks follows the operations that actually run at once (a trivial
/// workload on two cores needs two or three tasks for any number of operations), while every
/// ready operation still starts at once when slots are free: each claim starts the next worker.
///
/// A worker whose queue went idle may *linger* (``lingerIfIdle()``): it stays counted as the
/// starting worker, polling, so that an operation made ready meanwhile is handed to it
/// (``isLingering`` says so) instead of to a new task.
///
/// Part of ``Scheduler``, which decides when to ask for a worker (``needsWorker()``): once at the
/// end of each event, so that every operation an event makes ready is in the ready set first.
///
/// The rule: an operation starts when it is ready, the queue is not suspended and
/// `executing < limit`. Among ready operations: higher priority first, then submission order.
struct QueueStartRule<Element> {
  /// What a worker does next.
  struct WorkerStep {
    /// The operation the worker must run now (it holds a slot already), or `nil`: retire.
    var run: Element?
    /// Whether one more worker must be started.
    var spawnWorker: Bool
  }

  private(set) var limit: Int
  private(set) var isSuspended: Bool
  /// Whole-queue calls in progress whose contract forbids a start in between (cancelling,
  /// pausing or resuming every operation, done in slices of the lock).
  private(set) var walks = 0
  /// No operation may start: suspended, or a whole-queue call is in progress.
  private var startsStopped = false
  private(set) var executing = 0
  private(set) var startingWorkers = 0
  /// The starting worker is one that lingers (it runs already and polls for work).
  private(set) var isLingering = false
  private var ready = ReadyQueue<Element>()

  init(limit: Int, isSuspended: Bool = false) {
    self.limit = limit
    self.isSuspended = isSuspended
    startsStopped = isSuspended
  }

  /// Ready operations waiting for a slot.
  var readyCount: Int { ready.count }

  private var canStart: Bool { !startsStopped && executing < limit && !ready.isEmpty && !throttled }

  /// The head of the ready set waits for its rate limiters' permits: nothing is claimed. Kept by
  /// the scheduler for a queue whose own limiters gate its starts (`Scheduler.gatePermits`).
  var throttled = false

  /// Whether a new worker must be started now; if so, it is counted as starting.
  mutating func needsWorker() -> Bool {
    guard startingWorkers == 0, canStart else { return false }
    startingWorkers += 1
    return true
  }

  private mutating func claim() -> WorkerStep {
    guard canStart, let element = ready.popFirst() else {
      return WorkerStep(run: nil, spawnWorker: needsWorker())
    }
    executing += 1
    return WorkerStep(run: element, spawnWorker: needsWorker())
  }

  // MARK: Events

  /// An operation became ready. Returns the stamp that withdraws it. Whether a worker must be
  /// started for it is asked separately (``needsWorker()``); a lingering worker will claim it.
  mutating func insertReady(
    _ element: Element, order: UInt64, priority: OperationPriority
  ) -> ReadyQueue<Element>.Stamp {
    ready.insert(element, order: order, priority: priority)
  }

  /// A ready operation left the ready set without starting (cancelled, or pending again).
  mutating func withdraw(stamp: ReadyQueue<Element>.Stamp, priority: OperationPriority) {
    ready.remove(stamp: stamp, priority: priority)
  }

  /// A ready operation's priority changed: it is re-sorted at once.
  mutating func reprioritize(
    _ element: Element, stamp: ReadyQueue<Element>.Stamp, order: UInt64,
    from old: OperationPriority, to new: OperationPriority
  ) -> ReadyQueue<Element>.Stamp {
    ready.remove(stamp: stamp, priority: old)
    return ready.insert(element, order: order, priority: new)
  }

  /// Every ready operation is cancelled at once.
  mutating func withdrawAll() {
    ready.removeAll()
  }

  /// A whole-queue call began that no start may interleave with; nothing starts until it ends.
  mutating func beginWalk() {
    walks += 1
    startsStopped = true
  }

  /// A whole-queue call begun with ``beginWalk()`` ended.
  mutating func endWalk() {
    precondition(walks > 0, "Internal inconsistency: a walk ended that had not begun")
    walks -= 1
    startsStopped = isSuspended || walks > 0
  }

  /// The limit changed. Raising it may start workers; lowering it governs every later start.
  mutating func setLimit(_ newLimit: Int) {
    precondition(newLimit >= 1, "Internal inconsistency: limit \(newLimit) was not validated")
    limit = newLimit
  }

  /// The queue was suspended or resumed.
  mutating func setSuspended(_ suspended: Bool) {
    isSuspended = suspended
    startsStopped = isSuspended || walks > 0
  }

  /// An operation arrives on an idle queue (nothing executing, nothing ready, no worker starting
  /// or lingering, not suspended): it takes a slot at once, for a new worker that starts with it.
  /// The same outcome as ``insertReady(_:order:priority:)``, ``needsWorker()`` and the new
  /// worker's ``claimForStartingWorker()`` in a row, in one step; returns `false`, changing nothing, when
  /// the queue is not idle.
  mutating func takeSlotOnIdle() -> Bool {
    guard startingWorkers == 0, executing == 0, ready.isEmpty, !startsStopped else { return false }
    executing = 1
    return true
  }

  /// A worker task began to run: it claims the next operation, or retires.
  mutating func claimForStartingWorker() -> WorkerStep {
    precondition(startingWorkers > 0, "Internal inconsistency: a worker started that was not asked for")
    startingWorkers -= 1
    return claim()
  }

  /// The lingering worker stops lingering (woken, or its time is up): it claims the next
  /// operation, or retires. Only it clears ``isLingering``: another worker of the queue (one whose
  /// body paused, so it ran while the queue was idle) may claim meanwhile, and the lingering one
  /// must still be woken for the next operation made ready.
  mutating func lingerEnded() -> WorkerStep {
    precondition(isLingering, "Internal inconsistency: a worker stopped lingering that did not linger")
    isLingering = false
    return claimForStartingWorker()
  }

  /// A worker that found nothing to claim (``claimForStartingWorker()`` returned no operation) asks to
  /// linger. It may when the queue is idle (nothing executing, nothing ready, not suspended)
  /// and no other worker is starting; it then counts as the starting worker until it calls
  /// ``claimForStartingWorker()`` again, so that operations made ready meanwhile are left for it.
  mutating func lingerIfIdle() -> Bool {
    guard startingWorkers == 0, executing == 0, ready.isEmpty, !startsStopped else { return false }
    startingWorkers = 1
    isLingering = true
    return true
  }

  /// The operation a worker ran has ended: its slot is free, and the worker counts as starting
  /// until it claims again (``claimForStartingWorker()``) or retires (``workerRetired()``). Counting it so
  /// means an operation that becomes ready meanwhile (a dependent of the one that ended) is
  /// left for this worker instead of starting a new task.
  mutating func operationEnded() {
    precondition(executing > 0, "Internal inconsistency: an operation ended that held no slot")
    executing -= 1
    startingWorkers += 1
  }

  /// A worker that started an externally completed operation (which keeps its slot) claims the
  /// next ready operation, if a slot is free.
  mutating func claimNext() -> WorkerStep {
    claim()
  }

  /// An externally completed operation ended: its slot is free.
  mutating func externalOperationEnded() {
    precondition(executing > 0, "Internal inconsistency: an operation ended that held no slot")
    executing -= 1
  }

  // MARK: Pausing

  /// Whether a ready operation may be given a slot now.
  var canStartNow: Bool { canStart }

  /// Whether an operation made ready now could be given a slot now: starts are not stopped and a
  /// slot is free.
  var hasRoom: Bool { !startsStopped && executing < limit }

  /// The lingering worker stops lingering without claiming (its queue's starts are decided by
  /// arbitration): it stays counted as starting until it retires.
  mutating func stopLingering() {
    precondition(isLingering, "Internal inconsistency: a worker stopped lingering that did not linger")
    isLingering = false
  }

  /// The ready operation that starts next, left in the ready set.
  mutating func peekReady() -> Element? {
    ready.peekFirst()
  }

  /// Gives the next ready operation a slot without a worker: a paused body that was resumed
  /// continues on the task it paused in.
  mutating func claimWithoutWorker() -> Element? {
    guard canStart, let element = ready.popFirst() else { return nil }
    executing += 1
    return element
  }

  /// Gives a slot to an operation that is not in the ready set (arbitration's hand-off; the
  /// caller checked ``hasRoom``).
  mutating func takeSlot() {
    precondition(!startsStopped && executing < limit, "Internal inconsistency: a slot taken with no room")
    executing += 1
  }

  /// An executing operation paused at a checkpoint: its slot is free; its worker stays with it.
  mutating func operationPaused() {
    precondition(executing > 0, "Internal inconsistency: an operation paused that held no slot")
    executing -= 1
  }

  /// The body of an operation that held no slot (cancelled while paused) ended: its worker counts
  /// as starting, as after ``operationEnded()``.
  mutating func slotlessOperationEnded() {
    startingWorkers += 1
  }

  /// A starting worker retires without claiming (its task was cancelled).
  mutating func workerRetired() {
    precondition(startingWorkers > 0, "Internal inconsistency: a worker retired that was not starting")
    startingWorkers -= 1
  }
}

extension QueueStartRule: Sendable where Element: Sendable {}
extension QueueStartRule.WorkerStep: Sendable where Element: Sendable {}

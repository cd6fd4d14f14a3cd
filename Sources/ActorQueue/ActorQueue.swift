/// A queue of operations with a live concurrency limit, priorities, suspension, dependencies,
/// cooperative cancellation and awaitable completion: `OperationQueue`, rebuilt on Swift
/// concurrency.
///
/// ```swift
/// let queue = ActorQueue(name: "images", maxConcurrentOperationCount: 4)
/// let load = queue.addOperation(name: "load") { try await fetch(url) }
/// let filtered = queue.addOperation(after: load) { data in try tiltShift(data) }
/// let image = try await filtered.value
/// ```
///
/// **Calling it.** The members Foundation has as synchronous ones are synchronous here too
/// (`nonisolated`): callable from any context without `await` — a UI callback, a delegate, a
/// plain function — and calls made one after another from one thread take effect in that
/// order. Waiting (``waitUntilAllOperationsAreFinished()``, ``addOperations(_:waitUntilFinished:)``)
/// suspends the caller and never blocks a thread.
///
/// **Where bodies run.** Each body runs in a task of the queue's: a small set of reused worker
/// tasks (at most one per executing operation), created detached at ``taskPriority``, on the
/// global concurrent executor or on the queue's ``taskExecutor``. So a body does not inherit the
/// submitter's actor, priority or task-local values; pass what it needs in its captures. A body
/// that must run on the main actor is written `{ @MainActor in … }`.
///
/// **Scheduling.** An operation starts when it is ready (its dependencies have ended), the queue
/// is not suspended, and fewer than ``maxConcurrentOperationCount`` operations are executing;
/// among ready operations, higher ``AnyQueueOperation/queuePriority`` first, then submission
/// order. The decisions are made by a pure state machine under one short lock shared by every
/// queue (dependencies may cross queues); no actor hop is made per operation.
///
/// **Lifetime.** As with Foundation, operations keep running after you release the queue, and
/// the queue's resources are freed when its last operation ends; then its event streams end. A
/// *suspended* queue that nobody references any more could never run its waiting operations,
/// so they are cancelled when the queue is released (Foundation leaks them).
///
/// **What the actor is, and is not.** `ActorQueue` is an actor so that it is a reference type
/// that is `Sendable` by construction and can be handed to any task; it has no isolated state,
/// and every member is `nonisolated`: no call hops onto the actor's executor, and no operation's
/// body runs on it. The queue's state lives in the process-wide scheduler (one short lock, see
/// "Scheduling"), not in the actor, so that synchronous calls from any thread take effect in
/// the order they are made. You may still write your own `isolated` extensions; the queue never
/// uses the actor's executor.
public actor ActorQueue {
  /// `Int.max`: no limit. Foundation's constant `-1` (`OperationQueue.defaultMaxConcurrentOperationCount`)
  /// is accepted as unlimited too, so migrated code keeps working.
  public static let defaultMaxConcurrentOperationCount = Int.max

  /// This queue's record in the scheduler.
  nonisolated let reference: QueueReference
  nonisolated var index: Int { reference.index }
  /// The queue's name, kept here too so reading it takes no lock.
  private nonisolated let storedName: String?
  private nonisolated let storedTaskPriority: TaskPriority?
  private nonisolated let storedTaskExecutor: (any TaskExecutor)?
  /// The clock its operations' deadlines and timeouts are measured on.
  public nonisolated let clock: QueueClock
  /// The queue under ``ActorQueue/main``: serial for good, since every module that adds to it
  /// counts on its order.
  private nonisolated let isMainQueue: Bool
  /// The group whose children this queue runs, if it is an ``OperationGroup/queue``.
  nonisolated let groupIdentity: GroupIdentity?

  /// Creates a queue.
  ///
  /// - Parameters:
  ///   - name: for debugging and events.
  ///   - maxConcurrentOperationCount: at most this many operations execute at once: `1` makes
  ///     the queue serial (in submission order, respecting priorities and dependencies). `-1`
  ///     and `Int.max` mean unlimited. `0` and other values below 1 are refused (precondition):
  ///     use ``isSuspended`` to pause a queue.
  ///   - taskPriority: the priority of the tasks that run the bodies (Foundation's
  ///     `qualityOfService`); `nil`, the default, leaves it to the runtime.
  ///   - taskExecutor: where the bodies run (Foundation's `underlyingQueue`): the tasks that run
  ///     them prefer this executor, and so do the child tasks a body creates; see
  ///     ``taskExecutor``. `nil`, the default: the global concurrent executor.
  ///   - clock: what its operations' deadlines and timeouts are measured on (see
  ///     ``QueueClock``): the system's monotonic clock by default; a test passes a manual clock's
  ///     (`ActorQueueTesting`).
  public init(
    name: String? = nil, maxConcurrentOperationCount: Int = defaultMaxConcurrentOperationCount,
    taskPriority: TaskPriority? = nil, taskExecutor: (any TaskExecutor)? = nil, clock: QueueClock = .system
  ) {
    let limit = Self.validated(maxConcurrentOperationCount)
    storedName = name
    storedTaskPriority = taskPriority
    storedTaskExecutor = taskExecutor
    self.clock = clock
    isMainQueue = false
    groupIdentity = nil
    reference = Engine.mutate {
      $0.createQueue(
        name: name, limit: limit, taskPriority: taskPriority, taskExecutor: taskExecutor, clock: clock)
    }
    Engine.mutate { [reference] in $0.queues[reference.index].owner = self }
  }

  /// The serial queue under ``ActorQueue/main``, whose limit stays 1.
  init(mainQueueNamed name: String) {
    storedName = name
    storedTaskPriority = nil
    storedTaskExecutor = nil
    clock = .system
    isMainQueue = true
    groupIdentity = nil
    reference = Engine.mutate { $0.createQueue(name: name, limit: 1, taskPriority: nil) }
    Engine.mutate { [reference] in $0.queues[reference.index].owner = self }
  }

  /// A group's queue, made by the group's body.
  init(groupOf settings: GroupSettings) {
    storedName = settings.name
    storedTaskPriority = settings.taskPriority
    storedTaskExecutor = settings.taskExecutor
    clock = settings.clock
    isMainQueue = false
    guard
      let made = Engine.mutate({
        $0.createGroupQueue(
          runningOnTask: currentTaskAddress(), name: settings.name, limit: settings.limit,
          policy: settings.policy)
      })
    else { preconditionFailure("Internal inconsistency: a group's body ran outside its worker") }
    reference = made.reference
    groupIdentity = GroupIdentity(operation: made.group, id: made.id, domain: settings.domain)
    Engine.mutate { [reference] in $0.queues[reference.index].owner = self }
  }

  /// The queue whose operation's body is running on the calling task, or `nil` outside a
  /// body: Foundation's `OperationQueue.current`.
  ///
  /// A body's own task only: a child task (`async let`, a task group's) or an unstructured
  /// `Task` that a body creates is another task, and reads `nil` (capture the queue for
  /// those). A body of ``ActorQueue/main`` reads `ActorQueue.main.queue`. Inside a legacy
  /// `Operation` run by the OperationAdapter it is `nil`, as `OperationQueue.current` is.
  ///
  /// Cost: one look-up under the scheduler's lock, O(queues + operations executing in the
  /// process); nothing is added to starting or running an operation.
  public static var current: ActorQueue? {
    let address = currentTaskAddress()
    guard address != 0 else { return nil }
    return Engine.read { $0.queue(runningOnTask: address) }
  }

  deinit {
    let index = reference.index
    Engine.run { $0.releaseQueue(index, now: Engine.now, &$1) }
  }

  /// This queue's own ``ExclusivityDomain``: where ``OperationTrait/exclusive(_:in:)-(ExclusivityKey...,_)`` puts keys
  /// when no domain is named. Only this queue's operations may name it (another queue's are
  /// refused with a precondition message); to exclude across queues, make an
  /// ``ExclusivityDomain`` and share it. An ``OperationGroup/queue`` has the domain of the queue
  /// its outermost group is in, whose keys its children share. Cost: a small object per call.
  public nonisolated var exclusivityDomain: ExclusivityDomain {
    groupIdentity?.domain
      ?? ExclusivityDomain(queueGeneration: reference.generation, name: storedName.map { "queue \"\($0)\"" })
  }

  /// The limit as stored: `-1` means unlimited; values below 1 are misuse, refused in every
  /// build configuration with a message that says what to do.
  static func validated(_ limit: Int) -> Int {
    if limit == -1 { return .max }
    if limit < 1 {
      fatalError(
        "ActorQueue: maxConcurrentOperationCount must be at least 1 (or -1 for unlimited); got \(limit). "
          + "To stop a queue from starting operations, set isSuspended = true instead.")
    }
    return limit
  }

  /// A new limit for this queue, validated as ``validated(_:)`` does; the main queue's stays 1,
  /// refused in every build configuration with a message that says what to do.
  nonisolated func validatedNewLimit(_ limit: Int) -> Int {
    let limit = Self.validated(limit)
    if isMainQueue, limit != 1 {
      fatalError(
        "ActorQueue: ActorQueue.main is serial, so its maxConcurrentOperationCount stays 1; got "
          + "\(limit == .max ? "unlimited" : String(limit)). Every module that adds to the main queue counts "
          + "on its order. Run concurrent work on an ActorQueue of your own, and add only its "
          + "main-actor steps to ActorQueue.main.")
    }
    return limit
  }

  // MARK: Configuration

  /// The queue's name, for debugging and events.
  public nonisolated var name: String? { storedName }

  /// The priority of the tasks that run this queue's bodies; `nil`: the runtime's default.
  public nonisolated var taskPriority: TaskPriority? { storedTaskPriority }

  /// The executor this queue's bodies run on, if one was given: Foundation's `underlyingQueue`,
  /// as Swift's task executor preference. Set when the queue is created (Foundation lets
  /// `underlyingQueue` change while the queue is empty; here, create another queue).
  ///
  /// The queue's worker tasks are created with this preference, so a body's nonisolated code,
  /// and the child tasks it creates (`async let`, task groups), run on it; code isolated to an
  /// actor runs on that actor's executor, so a body written `{ @MainActor in … }` runs on the
  /// main actor whatever this is. ``DispatchQueueExecutor`` runs the bodies on a dispatch queue
  /// of yours. A serial executor runs one job at a time: bodies of a queue whose limit is above
  /// 1 then interleave at their suspension points, as operations on a serial
  /// `underlyingQueue` do, and a body that blocks its thread holds up the others. The queue
  /// keeps the executor until it and its work are gone. Cost: none per operation; `nil` for
  /// ``ActorQueue/main``'s queue.
  public nonisolated var taskExecutor: (any TaskExecutor)? { storedTaskExecutor }

  /// At most this many operations execute at once. Live, in both directions.
  ///
  /// Raising it starts waiting operations at once. Lowering it governs every later start at
  /// once: no operation starts while as many as the new limit are executing; operations already
  /// executing are not interrupted (Foundation behaves the same for running operations, but
  /// its "lowered" limit is easy to misread as immediate). `-1` means unlimited; values below 1
  /// are refused with a precondition failure (set ``isSuspended`` to pause), and so is any value
  /// but 1 on the queue of ``ActorQueue/main``, which stays serial. Reading it returns
  /// `Int.max` when unlimited. Cost: O(1).
  public nonisolated var maxConcurrentOperationCount: Int {
    get { Engine.read { $0.limit(of: index) } }
    set {
      let limit = validatedNewLimit(newValue)
      Engine.run { $0.setLimit(limit, of: index, now: Engine.now, &$1) }
    }
  }

  /// While `true`, executing operations continue and no operation starts; setting it back to
  /// `false` starts waiting operations at once. Cancelling a waiting operation still ends it at
  /// once while suspended. Cost: O(1).
  public nonisolated var isSuspended: Bool {
    get { Engine.read { $0.isSuspended(index) } }
    set { Engine.run { $0.setSuspended(newValue, of: index, now: Engine.now, &$1) } }
  }

  // MARK: Introspection

  /// The number of operations added and not yet ended (executing ones included). Ended
  /// operations leave the queue at once. Cost: O(1).
  public nonisolated var operationCount: Int { Engine.read { $0.unfinishedCount(of: index) } }

  /// The operations added and not yet ended, in submission order. A snapshot. Cost: O(n).
  public nonisolated var operations: [AnyQueueOperation] { Engine.read { $0.unfinished(of: index) } }

  /// Why each operation that is not running waits: every operation of this queue that has not
  /// started, or whose body is paused, in submission order, with what it waits for (a
  /// dependency, on any queue; a slot; the queue's suspension; ``AnyQueueOperation/pause()``; a
  /// retry's instant; an exclusivity key and the operation holding it; a rate limiter's
  /// permits; a condition that said "not yet", until when) and its deadline; then the operations
  /// of submitters waiting for space in a full queue (``capacity``), first served first.
  /// Executing operations are left out. A snapshot, for the
  /// day something is stuck (`print(queue.waitReport())`, or a test's assertion), not a
  /// scheduling input: what it says may change at once. Cost: O(n + timers of the queue's clock),
  /// in one hold of the scheduler's lock, as ``operations``. `OperationQueue` has no equivalent.
  public nonisolated func waitReport() -> [OperationWaitReport] {
    Engine.read { $0.waitReport(of: index, now: Engine.now) }
  }

  /// Every transition of this queue and its operations, losslessly, for one subscriber (see
  /// ``events(bufferingPolicy:)``).
  public nonisolated var events: AsyncStream<QueueEvent> { events(bufferingPolicy: .lossless) }

  /// Every transition of this queue and its operations from now on, for one subscriber: each
  /// operation's states (id, name, state) and the queue's own changes (suspended, resumed,
  /// limit), each with its global sequence number and the executing count and limit at that
  /// moment.
  ///
  /// Each call creates a new subscriber (an `AsyncStream` has one consumer); the subscription
  /// ends when the stream is released or its consuming task is cancelled. Cost: nothing while
  /// nobody subscribes; an append per transition per subscriber, delivered about one
  /// microsecond per event. Replaces KVO on `"operations"` and `"operationCount"`.
  public nonisolated func events(bufferingPolicy: QueueEvent.BufferingPolicy) -> AsyncStream<QueueEvent> {
    let channel: EventChannel<QueueEvent>
    switch bufferingPolicy {
    case .lossless:
      channel = EventChannel()
    case .bufferingNewest(let capacity):
      if capacity < 1 {
        fatalError(
          "ActorQueue.events(bufferingPolicy: .bufferingNewest(\(capacity))): a bounded subscriber must "
            + "buffer at least 1 event; use .lossless to keep every event.")
      }
      channel = EventChannel(capacity: capacity, droppedMarker: QueueEvent.dropped(count:last:))
    }
    Engine.mutate { $0.subscribe(channel, to: index) }
    return channel.makeStream()
  }

  // MARK: Submission

  /// Adds an operation that runs `body`, and returns its handle.
  ///
  /// Synchronous and ordered: two calls made one after the other from one thread are
  /// submitted in that order. Cost: two allocations (the handle, and the wrapper that boxes the
  /// body's value when it returns, a third allocation unless the value is `()`) and O(1)
  /// (O(log n) when priorities mix). A body that returns nothing and cannot throw takes the
  /// non-generic overload instead, which needs only the handle.
  ///
  /// - Parameters:
  ///   - name: for debugging and events.
  ///   - priority: orders it among this queue's ready operations.
  ///   - body: the work; see ``QueueOperation/init(name:priority:_:)``.
  @discardableResult
  public nonisolated func addOperation<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal,
    _ body: @escaping @Sendable () async throws -> Success
  ) -> QueueOperation<Success> {
    submit(name: name, priority: priority, .typed(body), as: QueueOperation<Success>.self)
  }

  /// Adds an operation that runs `body`, a closure that returns nothing and cannot throw, and
  /// returns its handle: the same as the generic `addOperation(name:priority:_:)`, which Swift
  /// picks for every other body.
  ///
  /// This overload exists for speed: the body is kept as it is given, so a closure value of type
  /// `@Sendable () async -> Void` (a stored body, a function) costs no wrapper closure nor
  /// reabstraction thunks per operation, and its end boxes no result. Cost: one allocation
  /// (the handle) and O(1) (O(log n) when priorities mix).
  @discardableResult
  public nonisolated func addOperation(
    name: String? = nil, priority: OperationPriority = .normal,
    _ body: @escaping @Sendable () async -> Void
  ) -> QueueOperation<Void> {
    submit(name: name, priority: priority, .void(body), as: QueueOperation<Void>.self)
  }

  /// Creates the handle and record of a new operation and submits it, in one critical section.
  @inline(__always)
  nonisolated func submit<Success: Sendable>(
    name: String?, priority: OperationPriority, _ work: OperationWork, as type: QueueOperation<Success>.Type
  ) -> QueueOperation<Success> {
    let index = index
    // The handle is created with its record, in the same critical section as its submission
    // (one lock per addOperation); its type is looked up once, out here. An idle queue's worker
    // is started here, not through the effects (see `Scheduler.submitNew`).
    var effects = SchedulerEffects()
    let (operation, spawn) = Engine.scheduler.withLock { scheduler in
      let operation = scheduler.newOperation(name: name, priority: priority, work: work, as: type)
      return (operation, scheduler.submitNew(operation, to: index, now: Engine.now, &effects))
    }
    if let spawn { Engine.start(spawn) } else { effects.perform() }
    return operation
  }

  /// Adds an operation that receives the values of its inputs: it runs once every input
  /// has finished, with their values as arguments, in order.
  ///
  /// If an input fails, this operation never runs and ends `.failed` with a
  /// ``DependencyFailedError`` naming the input and carrying its error; if an input is
  /// cancelled, this operation ends `.cancelled`. Either happens at once, uses no slot, and
  /// propagates to the operations that need this one. An input that was asked to cancel but
  /// returned a value anyway counts as finished. Inputs may belong to any queue, and cannot be
  /// removed with `removeDependency`.
  ///
  /// ```swift
  /// let filtered = queue.addOperation(after: load) { data in try tiltShift(data) }
  /// let both = queue.addOperation(after: load, filtered) { raw, image in (raw.count, image) }
  /// ```
  @discardableResult
  public nonisolated func addOperation<First: Sendable, each More: Sendable, Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal,
    after first: QueueOperation<First>, _ more: repeat QueueOperation<each More>,
    operation body: @escaping @Sendable (First, repeat each More) async throws -> Success
  ) -> QueueOperation<Success> {
    let operation = QueueOperation<Success>(name: name, priority: priority) {
      try await body(first.inputValue(), repeat (each more).inputValue())
    }
    var inputs: [AnyQueueOperation] = [first]
    for input in repeat each more { inputs.append(input) }
    Engine.run { $0.submit(operation, inputs: inputs, to: index, now: Engine.now, &$1) }
    return operation
  }

  /// Adds a prepared operation (created with ``QueueOperation/init(name:priority:_:)``).
  ///
  /// An operation that has already ended without running (cancelled, or an input it required
  /// failed) is accepted and stays as it is.
  ///
  /// - Throws: ``ActorQueueError/alreadyEnqueued`` if it was added to a queue before (this one
  ///   or another); ``ActorQueueError/dependencyCycle`` if an unfinished barrier of this queue,
  ///   which it would wait for, already waits for it (its ``ActorQueueError/cycle`` starts with
  ///   the operation, then the barrier). Nothing changes then. (Foundation raises an exception
  ///   for the first, and hangs for the second.)
  public nonisolated func addOperation(_ operation: AnyQueueOperation) throws {
    try addOperations([operation])
  }

  /// Adds prepared operations: all of them, or none. The batch is added whole, then
  /// scheduled: on an idle queue, the operation that starts first is the batch's highest
  /// priority one, as in Foundation (operations added one by one start as they come: the first
  /// operation added to an idle queue starts at once).
  ///
  /// - Throws: ``ActorQueueError/alreadyEnqueued`` if any of them was added to a queue before,
  ///   or appears twice; ``ActorQueueError/dependencyCycle`` as ``addOperation(_:)``. Nothing is
  ///   enqueued then.
  public nonisolated func addOperations(_ operations: [AnyQueueOperation]) throws {
    try Engine.runThrowing { (scheduler, effects) throws(ActorQueueError) in
      try scheduler.submit(operations, to: index, now: Engine.now, &effects)
    }
  }

  /// Adds prepared operations (all or none) and, if `waitUntilFinished`, suspends until every
  /// one of them has ended. Suspends; no thread blocks. Cancelling the waiting task does
  /// not end the wait nor cancel the operations.
  ///
  /// - Throws: ``ActorQueueError/alreadyEnqueued`` as ``addOperations(_:)``.
  public nonisolated func addOperations(_ operations: [AnyQueueOperation], waitUntilFinished: Bool)
    async throws
  {
    try addOperations(operations)
    guard waitUntilFinished else { return }
    for operation in operations { await operation.waitUntilFinished() }
  }

  // MARK: Cancellation and waiting

  /// Cancels every operation not yet ended: waiting ones end `.cancelled` at once (their
  /// completion handlers run and their waiters wake before this returns), executing ones have
  /// their tasks cancelled. Ended operations are untouched, and so are operations added while
  /// it runs. The queue starts none of them meanwhile.
  ///
  /// Cost: O(n), in slices of at most 1,000 operations per hold of the scheduler's lock, which
  /// every queue shares: other queues' callers take it between slices instead of waiting for the
  /// whole backlog (Foundation's queue holds its own lock per queue).
  public nonisolated func cancelAllOperations() {
    Engine.run { $0.cancelAll(in: index, now: Engine.now, &$1) }
  }

  /// Suspends until the queue has no unfinished operation, including operations added while
  /// waiting. No thread blocks; cancelling the waiting task does not end the wait.
  public nonisolated func waitUntilAllOperationsAreFinished() async {
    let task = currentTaskAddress()
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let waits = Engine.mutate { [index] scheduler in
        let waits = scheduler.addAllFinishedWaiter(continuation, to: index)
        if waits { scheduler.noteAwait(.queue(index), fromTask: task) }
        return waits
      }
      if !waits { continuation.resume() }
    }
  }
}

public import ActorQueue
public import Foundation

// Running legacy `Operation`s unchanged inside an ActorQueue.
//
// How a wrapped operation runs: the handle (a `QueueOperation<Op>`) waits in its ActorQueue
// like any operation — without a slot while the legacy operation's Foundation dependencies are
// unfinished (a gate operation on an internal queue stands for them) — and when it starts, the
// legacy operation's `start()` is called on one of the adapter's own overcommitting threads
// (`Internal/LegacyThreads.swift`; not the Swift cooperative pool, which on Linux also serves
// `OperationQueue`'s threads). The handle is an externally completed operation (its external
// work is the `LegacyRun`): no Swift task runs or waits for it. It is started on the thread of
// the event that gave it its slot (the thread that added it, or the adapter's thread that
// reported the end of the operation before it), holds its slot until Foundation records that
// the operation finished, and the thread that learns it ends the handle. Cancelling the handle
// calls the operation's `cancel()`. See `Internal/LegacyRuntime.swift`.

extension ActorQueue {
  /// Adds a legacy `Operation` to this queue, unchanged, and returns its handle.
  ///
  /// The operation occupies one slot of this queue while it executes and obeys the queue's
  /// limit, suspension, priority (its `queuePriority`, followed while it waits) and
  /// cancellation. Its
  /// `start()` (and so its `main()`) runs on one of the adapter's own threads, never on a
  /// Swift cooperative thread, so a blocking `main()` is fine: it blocks only that thread (the
  /// adapter adds a thread when waiting work sees no progress for 2 ms, up to 256). (A default `OperationQueue` on Linux would run it on Dispatch's
  /// global pool, which the Swift cooperative executor shares: two blocked `main()`s on two
  /// cores stall every Swift task for about a second.) The queue's limit bounds how many such
  /// threads block at once. Any legacy style works: a synchronous
  /// `main()`, an asynchronous `start()` with hand-written `isExecuting`/`isFinished`
  /// notifications, `BlockOperation`, an overridden `cancel()`.
  ///
  /// ```swift
  /// let handle = try queue.addOperation(legacy: ImageFilterOperation(image))
  /// let output = try await handle.value.outputImage
  /// ```
  ///
  /// - The outcome: the handle ends `.finished` with the operation itself as its value, so
  ///   you read its outputs from it; or `.cancelled` (`value` throws `CancellationError`) if
  ///   the operation's `isCancelled` is `true` when it finishes, whoever cancelled it. Legacy
  ///   code that reports a failure by storing an error and cancelling itself should be added
  ///   with ``addOperation(legacy:timeout:error:)``, which ends such a handle `.failed`.
  /// - Cancellation both ways: cancelling the handle (or `cancelAllOperations()`) calls the
  ///   operation's `cancel()`. A handle cancelled while waiting follows `OperationQueue`, the
  ///   adapter's one exception to "a cancelled waiting operation ends at once": the legacy
  ///   operation is cancelled and started at once, outside the queue's slot accounting (it
  ///   takes no slot, even in a suspended queue), so its `start()` sees `isCancelled`, it
  ///   reaches `isFinished`, its `completionBlock` and Foundation dependents run; the handle
  ///   ends `.cancelled` when it has finished; meanwhile it reads `.executing` (with
  ///   `isCancelled`), holding no slot and not counted in the queue's events'
  ///   `executingCount`. So once `waitUntilAllOperationsAreFinished()` or
  ///   the handle's `value` returns, every legacy operation it ran reports `isFinished`. (One
  ///   whose overridden `isReady` is still `false` is not started before it is ready, as in
  ///   `OperationQueue`: its handle ends `.cancelled` at once, and it starts when ready.)
  /// - Foundation dependencies (`operation.dependencies` at this call) and an overridden
  ///   `isReady` keep the handle `.pending`, holding no slot, until the operation is ready, as
  ///   an `OperationQueue` runs other ready operations meanwhile: a chain of legacy operations
  ///   on a queue with limit 1 cannot deadlock, whatever order they are added in, and an
  ///   operation that is not ready does not hold a serial queue's only slot. They are shown in
  ///   the handle's `dependencies` as one operation named "legacy dependencies of …".
  ///   Dependencies added to the legacy operation later are still honoured, but while holding
  ///   the slot. The handle can also take and be given ActorQueue dependencies.
  /// - What legacy code does to the operation while the handle waits reaches the handle:
  ///   `cancel()` ends the handle `.cancelled` (the operation is then started without a slot,
  ///   sees `isCancelled` and finishes, as in `OperationQueue`, even with a dependency still
  ///   unfinished; this breaks a dependency cycle as it does there); a new `queuePriority`
  ///   re-sorts it. Foundation notifies only an operation's own `OperationQueue` of these
  ///   changes, so the adapter polls waiting operations from one thread of its own: a change is
  ///   noticed within about 4 ms while fewer than a few thousand operations wait (later when
  ///   the machine is overloaded; measured figures are in ActorQueue's Performance article).
  ///   The pause grows with the number watched, up to 50 ms, keeping the poller under about 5%
  ///   of one core up to some 20,000 waiting operations; one costs about 1% of a core while
  ///   nothing changes, and when no legacy operation waits the poller sleeps and costs nothing.
  ///   Dependencies finishing are learned at once, without polling. A ready operation added to an unlimited queue that
  ///   is not suspended starts at once and is not watched.
  /// - `OperationQueue.current` is `nil` inside the operation's `start()` and `main()`: no
  ///   `OperationQueue` runs it. Legacy code that uses it to find "its" queue (to add follow-up
  ///   work or call `cancelAllOperations()`) must be handed the queue instead; see Migration.md,
  ///   "OperationQueue.current".
  /// - How the end is learned: through Foundation's own dependency mechanism (a sentinel
  ///   operation that depends on it), which a subclass cannot break by overriding or reassigning
  ///   `completionBlock`. On Apple platforms the sentinel is a `BlockOperation` in an
  ///   `OperationQueue` of its own; on Linux, by default, one that is never enqueued, which is
  ///   cheaper there (the adapter's tests run through both). The operation must send
  ///   `didChangeValue(forKey: "isFinished")` once `isFinished` is `true` (on Linux this
  ///   notification is the only way a state change reaches a queue); signalling it twice is
  ///   harmless.
  ///
  /// Preconditions Foundation's public API cannot check:
  /// - The operation must not be in an `OperationQueue`, nor be added to one or started by
  ///   hand later: Foundation traps when it is started twice or started while in a queue
  ///   ("something is trying to start the receiver simultaneously from more than one thread",
  ///   or "… already in a queue cannot be enqueued"). If legacy code starts it while the
  ///   handle waits, the handle fails with ``OperationAdapterError/alreadyExecuting`` (or
  ///   ``OperationAdapterError/alreadyFinished``) and leaves the operation alone.
  /// - It must finish. One that never signals `isFinished` keeps its slot and its handle
  ///   forever, exactly as it would keep an `OperationQueue` slot; use
  ///   ``addOperation(legacy:timeout:)`` to bound that.
  ///
  /// Cost: about what running it in an `OperationQueue` directly costs (the bench's `adapter`
  /// rows compare them in one run; ActorQueue's Performance article quotes a run): a
  /// `QueueOperation` and a hop to one of the adapter's threads, so that a blocking `main()`
  /// cannot stall Swift tasks; an operation still unfinished when `start()` returns also gets a
  /// sentinel `Operation` (and on Apple platforms an `OperationQueue` to run it). No Swift task
  /// runs or waits for it: it is started on the thread that gave it its slot, and a thread of the
  /// adapter's that runs out of work watches for more for 50 µs before it sleeps, so neither a
  /// stream of operations nor a small limit pays a thread wake-up per operation.
  ///
  /// - Throws: ``OperationAdapterError/alreadyFinished`` or
  ///   ``OperationAdapterError/alreadyExecuting`` if the operation has run or is running;
  ///   ``OperationAdapterError/alreadyAdded`` if an unfinished handle wraps it already.
  ///   Nothing is enqueued then.
  @discardableResult
  public nonisolated func addOperation<Op: Operation>(legacy operation: Op) throws -> QueueOperation<Op> {
    try addOperation(legacy: operation, timeout: nil)
  }

  /// Adds a legacy `Operation`, as ``addOperation(legacy:)``, giving it at most `timeout` to
  /// finish once it has started.
  ///
  /// If the operation has not signalled `isFinished` when `timeout` has passed since the
  /// adapter started it, the adapter calls its `cancel()`, releases the slot and ends the
  /// handle `.failed` with ``OperationAdapterError/timedOut``. The legacy operation is
  /// abandoned: it may still be running, and whatever it does later is ignored. Use this for
  /// legacy code you suspect of forgetting to finish (a missed path in an asynchronous
  /// `start()`). `nil`: no timeout. Cost: one dispatch timer per operation.
  ///
  /// - Throws: as ``addOperation(legacy:)``.
  @discardableResult
  public nonisolated func addOperation<Op: Operation>(
    legacy operation: Op, timeout: Duration?
  ) throws -> QueueOperation<Op> {
    let run = try LegacyRun.prepare(operation, timeout: timeout, failure: nil).get()
    let handle = QueueOperation<Op>(preparing: run, followsChanges: followsChanges)
    try addOperation(handle)
    return handle
  }

  /// Adds a legacy `Operation` that reports failure the way `Operation` code must, having no
  /// failure state: it stores an error and cancels itself. `error` reads where it keeps it
  /// (e.g. `{ $0.error }`), once the operation has finished cancelled; otherwise as
  /// ``addOperation(legacy:timeout:)``.
  ///
  /// ```swift
  /// let handle = try queue.addOperation(legacy: request, error: { $0.error })
  /// do {
  ///   let response = try await handle.value
  /// } catch let error as URLError {
  ///   // the request's own failure, not a CancellationError
  /// }
  /// ```
  ///
  /// How the handle ends, for an operation whose `isCancelled` is `true` when it finishes:
  /// - It cancelled itself while it ran, and `error` returns an error: `.failed` with that
  ///   error (`value` throws it; a dependent that requires it fails with a
  ///   `DependencyFailedError` carrying it).
  /// - The handle was cancelled through ActorQueue (its `cancel()`, `cancelAllOperations()`, a
  ///   dependency it required), or legacy code cancelled the operation before it started:
  ///   `.cancelled`, as always; the legacy error, if `error` returns one, is the handle's
  ///   `thrownError`, where a body's error thrown after its cancellation is.
  /// - `error` returns `nil`: `.cancelled`.
  ///
  /// `error` runs once, after the operation has finished, on a thread of the adapter's, and
  /// holds no lock of the queue's. Cost: the closure, kept until the operation finishes.
  ///
  /// - Throws: as ``addOperation(legacy:)``.
  @discardableResult
  public nonisolated func addOperation<Op: Operation>(
    legacy operation: Op, timeout: Duration? = nil, error failure: @escaping @Sendable (Op) -> (any Error)?
  ) throws -> QueueOperation<Op> {
    let run = try LegacyRun.prepare(
      operation, timeout: timeout, failure: { [operation] in failure(operation) }
    )
    .get()
    let handle = QueueOperation<Op>(preparing: run, followsChanges: followsChanges)
    try addOperation(handle)
    return handle
  }

  /// Adds a legacy `Operation` with traits (a deadline, an execution timeout; see
  /// `OperationTrait`), otherwise as ``addOperation(legacy:timeout:error:)``.
  ///
  /// A deadline or trait timeout does to a legacy operation what it does to any operation, and
  /// waits for it, as Foundation waits for a cancelled operation to finish:
  /// - Not started by then: it is cancelled and started without a slot so that it can see
  ///   `isCancelled` and finish (Foundation's rule, as `cancel()` does); the handle ends
  ///   `.failed` with `OperationTimeoutError` once it has finished.
  /// - Executing: its `cancel()` is called; it keeps its slot until it finishes; the handle
  ///   then ends `.failed` with `OperationTimeoutError` if it finished cancelled (or with the
  ///   error `error` read), `.finished` if it finished without having been cancelled.
  ///
  /// `timeout:` is the other rule, for code that may never finish: once it has passed the
  /// adapter stops waiting, frees the slot and ends the handle with
  /// ``OperationAdapterError/timedOut``, abandoning the operation. Give a legacy operation
  /// deadlines as traits, and `timeout:` only as the bound on a finish that may never come.
  ///
  /// - Throws: as ``addOperation(legacy:)``.
  @discardableResult
  public nonisolated func addOperation<Op: Operation>(
    legacy operation: Op, traits: [OperationTrait], timeout: Duration? = nil,
    error failure: (@Sendable (Op) -> (any Error)?)? = nil
  ) throws -> QueueOperation<Op> {
    var readFailure: (@Sendable () -> (any Error)?)?
    if let failure { readFailure = { [operation] in failure(operation) } }
    let run = try LegacyRun.prepare(operation, timeout: timeout, failure: readFailure).get()
    let handle = QueueOperation<Op>(preparing: run, followsChanges: followsChanges)
    handle.setTraits(traits)
    try addOperation(handle)
    return handle
  }
}

extension ActorQueue {
  /// Adds legacy `Operation`s to this queue as one batch, all or none, and returns their handles
  /// in the same order.
  ///
  /// Each operation behaves as with ``addOperation(legacy:)``. The batch is submitted whole
  /// (through `addOperations(_:)`), so on a queue that cannot start all of them at once the
  /// waiting ones are ordered by `queuePriority` among themselves, whatever their order in the
  /// array: Foundation's `addOperations(_:waitUntilFinished:)` on a serial queue runs four
  /// operations of priorities normal, low, veryHigh, veryLow as veryHigh, normal, low, veryLow.
  /// (Adding them one by one to an idle queue starts the first at once: ActorQueue starts an
  /// operation as soon as it is added to a queue with a free slot, by design, so priority orders
  /// only the operations that wait.)
  ///
  /// ```swift
  /// let handles = try queue.addOperations(legacy: [resize, upload, cleanup])
  /// for handle in handles { _ = try? await handle.value }
  /// ```
  ///
  /// Cost: as many ``addOperation(legacy:)`` calls, with one submission to the queue.
  ///
  /// - Throws: as ``addOperation(legacy:)`` for the first operation that cannot run
  ///   (``OperationAdapterError/alreadyAdded`` also when the array holds an operation twice), or
  ///   as `addOperations(_:)`. Nothing is enqueued then.
  @discardableResult
  public nonisolated func addOperations(legacy operations: [Operation]) throws -> [QueueOperation<Operation>]
  {
    // Prepared first, all of them: a misuse found on the last leaves nothing behind (a dropped
    // run gives up its record of the operation).
    let runs = try operations.map { try LegacyRun.prepare($0, timeout: nil, failure: nil).get() }
    let followsChanges = followsChanges
    let handles = runs.map { QueueOperation<Operation>(preparing: $0, followsChanges: followsChanges) }
    try addOperations(handles)
    return handles
  }

  /// Whether changes legacy code makes to a ready operation added now (its `queuePriority`,
  /// `cancel()`) must be followed while it waits. Not in an unlimited queue: there a ready
  /// operation starts at once, or (suspended) all start together on resume, so priority orders
  /// nothing, and a cancelled one starts, sees `isCancelled` and finishes, as in
  /// `OperationQueue`. (One read of the queue's state; this is on every legacy operation's path.)
  nonisolated var followsChanges: Bool {
    maxConcurrentOperationCount < ActorQueue.defaultMaxConcurrentOperationCount
  }
}

extension QueueOperation where Success: Operation {
  /// A prepared operation that runs the legacy `operation` unchanged, not in any queue yet.
  ///
  /// Give it dependencies or make other operations depend on it like any `QueueOperation`,
  /// then add it with `ActorQueue.addOperation(_:)`. It behaves as described at
  /// ``ActorQueue/addOperation(legacy:)``; its name and priority are the legacy operation's
  /// `name` and `queuePriority` (whose raw values are `OperationPriority`'s).
  ///
  /// Misuse: an initialiser cannot throw here, so if `operation` has already finished, is
  /// executing or is wrapped by another unfinished handle, this operation fails with the
  /// ``OperationAdapterError`` when it runs, without touching the legacy operation. Use
  /// ``ActorQueue/addOperation(legacy:)`` to have the misuse thrown at once.
  public convenience init(legacy operation: Success) {
    self.init(legacy: operation, timeout: nil)
  }

  /// A prepared operation that runs the legacy `operation`, as ``init(legacy:)``, giving it at
  /// most `timeout` to finish once started (see ``ActorQueue/addOperation(legacy:timeout:)``).
  public convenience init(legacy operation: Success, timeout: Duration?) {
    self.init(legacy: operation, timeout: timeout, failure: nil)
  }

  /// A prepared operation that runs the legacy `operation`, as ``init(legacy:timeout:)``, for
  /// legacy code that fails by storing an error and cancelling itself: `error` reads it, and
  /// the handle ends `.failed` with it (see ``ActorQueue/addOperation(legacy:timeout:error:)``).
  public convenience init(
    legacy operation: Success, timeout: Duration? = nil,
    error failure: @escaping @Sendable (Success) -> (any Error)?
  ) {
    self.init(legacy: operation, timeout: timeout, failure: { [operation] in failure(operation) })
  }

  private convenience init(
    legacy operation: Success, timeout: Duration?, failure: (@Sendable () -> (any Error)?)?
  ) {
    switch LegacyRun.prepare(operation, timeout: timeout, failure: failure) {
    case .success(let run):
      self.init(preparing: run, followsChanges: true)
    case .failure(let misuse):
      self.init(name: operation.name, priority: OperationPriority(operation.queuePriority)) {
        throw misuse
      }
    }
  }

  convenience init(preparing run: LegacyRun, followsChanges: Bool) {
    let operation = run.operation
    // The run is the handle's external work (its value is `run.operation`, a `Success`).
    self.init(name: operation.name, priority: OperationPriority(operation.queuePriority), external: run)
    run.gate(self, followsChanges: followsChanges)
  }
}

extension OperationPriority {
  /// The priority with the same raw value as Foundation's (they are equal by design); values
  /// Foundation would not produce map to the nearest lower priority.
  init(_ priority: Operation.QueuePriority) {
    self =
      OperationPriority(rawValue: priority.rawValue)
      ?? OperationPriority.allCases.last { $0.rawValue <= priority.rawValue } ?? .veryLow
  }
}

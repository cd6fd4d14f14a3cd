/// An operation's outcome, type-erased: the body's value, or the error it ended with.
typealias Outcome = Result<any Sendable, any Error>

/// A unit of work and the handle to its outcome, without its result type.
///
/// The counterpart of Foundation's `Operation`, with these differences:
/// - Only a queue starts an operation; there is no `start()` (P9).
/// - A waiting operation that is cancelled ends `.cancelled` at once, without running, and
///   releases its waiters, completion handlers and dependents at once (P2).
/// - Waiting is `await` (``waitUntilFinished()``); no thread blocks (P7).
/// - State is one ``OperationState``, observable in order through ``events`` (P12).
/// - A dependency that would close a cycle is refused (P5).
///
/// Every member is safe to call from any thread or task. Synchronous members take the
/// scheduler's lock briefly (tens of nanoseconds) and never wait for an operation.
///
/// `@unchecked Sendable`: the `let`s are immutable; every `var` below is read and written only
/// while holding `Engine.lock` (the typed result of ``QueueOperation`` likewise).
public class AnyQueueOperation: Hashable, @unchecked Sendable, CustomStringConvertible {
  /// Unique in the process; also the identifier used in ``QueueEvent``s.
  public let id = OperationID()
  /// A name for debugging, events and error messages.
  public let name: String?

  // MARK: State guarded by Engine.lock
  //
  // `@exclusivity(unchecked)`: the lock serialises every access, and no access to one of these
  // fields overlaps another access to the same field, so the runtime's dynamic exclusivity
  // checks can only cost (measured: 10% of a worker's time per operation) and never catch
  // anything here. The static checks still apply.

  @exclusivity(unchecked) var _state: OperationState = .pending
  @exclusivity(unchecked) var priority: OperationPriority
  @exclusivity(unchecked) var cancelRequested = false
  @exclusivity(unchecked) var wasEnqueued = false
  /// The queue while enqueued and unfinished (keeps the queue's core alive, as Foundation's
  /// queue is kept alive by its unfinished operations).
  @exclusivity(unchecked) var queue: QueueCore?
  /// Submission order (global): the tie-break among ready operations of one priority.
  @exclusivity(unchecked) var order: UInt64 = 0
  /// Index in the queue's record of unfinished operations.
  @exclusivity(unchecked) var slot = 0
  /// Set while in the queue's ready set.
  @exclusivity(unchecked) var readyStamp: ReadyQueue<AnyQueueOperation>.Stamp?
  /// Set while executing.
  @exclusivity(unchecked) var worker: Worker?
  @exclusivity(unchecked) var dependencyEdges: [DependencyEdge] = []
  /// Unfinished operations that wait for this one; emptied when it ends.
  @exclusivity(unchecked) var dependentEdges: [DependentEdge] = []
  @exclusivity(unchecked) var unfinishedDependencies = 0
  /// The body, type-erased so the worker's hot path runs no unspecialised generic code. Taken
  /// by the worker that claims the operation; released when the operation ends (P8).
  @exclusivity(unchecked) var body: (@Sendable () async throws -> any Sendable)?
  /// For an operation whose work runs elsewhere and reports its end (``Engine/externalEnded``):
  /// starts that work; called by the worker that claims it, which then moves on at once.
  @exclusivity(unchecked) var externalStart: (@Sendable (@escaping @Sendable (Outcome) -> Void) -> Void)?
  /// For such an operation: how `cancel()` reaches the work while it runs (there is no task).
  @exclusivity(unchecked) var externalCancel: (@Sendable () -> Void)?
  /// The outcome once ended: the body's value, or the error (`CancellationError` when cancelled).
  @exclusivity(unchecked) var outcome: Outcome?
  /// `onCompletion` handlers, bound to the result type by `QueueOperation`.
  @exclusivity(unchecked) var completionHandlers: [@Sendable (Outcome) -> Void] = []
  @exclusivity(unchecked) var waiters: [UnsafeContinuation<Void, Never>] = []
  @exclusivity(unchecked) var subscribers: [EventChannel<OperationState>] = []

  init(name: String?, priority: OperationPriority) {
    self.name = name
    self.priority = priority
  }

  /// Releases the dependency graph iteratively. An operation keeps its dependencies (as
  /// Foundation does), so a chain of 64,000 operations is a linked list 64,000 deep; releasing
  /// its tail must not recurse once per link and overflow the stack. Operations this one holds
  /// the last reference to have their edges moved into a work list first, so each is
  /// deallocated with no edges left. Reading their fields without the lock is safe: holding
  /// the only reference, nobody else can reach them (dependents point back only weakly).
  deinit {
    guard !dependencyEdges.isEmpty else { return }
    var pending = dependencyEdges.map(\.operation)
    dependencyEdges = []
    while var operation = pending.popLast() {
      if isKnownUniquelyReferenced(&operation) {
        pending.append(contentsOf: operation.dependencyEdges.lazy.map(\.operation))
        operation.dependencyEdges = []
      }
    }
  }

  /// The error this operation ended with, if it did not finish. Under the lock.
  var failure: (any Error)? {
    if case .failure(let error) = outcome { return error }
    return nil
  }

  /// Takes the completion handlers and binds them to the outcome. Under the lock.
  func takeCompletion() -> (@Sendable () -> Void)? {
    guard !completionHandlers.isEmpty, let outcome else { return nil }
    let handlers = completionHandlers
    completionHandlers = []
    return {
      for handler in handlers { handler(outcome) }
    }
  }

  // MARK: Public

  /// The order among this queue's ready operations: higher first, then submission order.
  ///
  /// Setting it re-sorts a waiting operation at once (Foundation's may not re-sort, P11).
  /// Cost: O(1), plus O(log n) for the re-sort.
  public var queuePriority: OperationPriority {
    get { Engine.locked { _, _ in priority } }
    set { Engine.locked { state, effects in Engine.setPriority(newValue, of: self, &state, &effects) } }
  }

  /// The current state. A snapshot: it may change as soon as it is read.
  public var state: OperationState { Engine.locked { _, _ in _state } }

  /// Whether the operation may start as soon as a slot is free (state `.ready`).
  ///
  /// Unlike Foundation's `isReady`, it is `false` once the operation has started.
  public var isReady: Bool { state == .ready }

  /// Whether the body is running (state `.executing`).
  public var isExecuting: Bool { state == .executing }

  /// Whether the operation has ended, in any terminal state, as Foundation's `isFinished`.
  public var isFinished: Bool { state.isTerminal }

  /// Whether ``cancel()`` was called (by you, ``ActorQueue/cancelAllOperations()``, or a
  /// cancelled input), or the body threw `CancellationError`. Stays `true` after the end,
  /// whatever the terminal state.
  public var isCancelled: Bool { Engine.locked { _, _ in cancelRequested } }

  /// The operations this one waits for, in the order they were added (typed inputs included).
  /// Like Foundation, ended dependencies stay listed.
  public var dependencies: [AnyQueueOperation] {
    Engine.locked { _, _ in dependencyEdges.map(\.operation) }
  }

  /// Makes this operation wait until `operation` has ended, however it ends (Foundation's
  /// rule). Works across queues and whichever operation is added to a queue first; an
  /// already-ended dependency is satisfied at once.
  ///
  /// - Throws: ``ActorQueueError/dependencyCycle`` if `operation` already waits for this one
  ///   (or is this one); ``ActorQueueError/alreadyStarted`` if this operation has started or
  ///   ended. Either way nothing changes.
  /// - Complexity: O(1) when nothing waits for this operation yet (a graph built in order);
  ///   otherwise the cycle check searches the unfinished operations that wait for this one.
  public func addDependency(_ operation: AnyQueueOperation) throws {
    try addDependency(operation, requiring: .completion)
  }

  /// Makes this operation wait for `operation`, releasing it according to `requirement`.
  ///
  /// With ``DependencyRequirement/success`` this operation runs only if `operation` finishes;
  /// if it fails or is cancelled, this one ends at once (`.failed` with a
  /// ``DependencyFailedError``, or `.cancelled`), using no slot. Adding an existing
  /// dependency again can only make its requirement stricter.
  ///
  /// - Throws: as ``addDependency(_:)``.
  public func addDependency(_ operation: AnyQueueOperation, requiring requirement: DependencyRequirement)
    throws
  {
    let kind: DependencyEdge.Kind = requirement == .success ? .success : .completion
    try Engine.lockedThrowing { (state, effects) throws(ActorQueueError) in
      try Engine.addDependency(operation, to: self, kind: kind, &state, &effects)
    }
  }

  /// Removes an ordering dependency. If nothing else holds this operation, it becomes ready at
  /// once (Foundation on Linux does not re-evaluate readiness here). No effect once this
  /// operation has started, and none on a typed input of ``ActorQueue/addOperation(name:priority:after:_:operation:)``.
  public func removeDependency(_ operation: AnyQueueOperation) {
    Engine.locked { state, effects in
      Engine.removeDependency(operation, from: self, &state, &effects)
    }
  }

  /// Asks the operation to stop.
  ///
  /// - Waiting (not started, in a queue or not): ends `.cancelled` at once; its body never
  ///   runs; its slot is never taken, even in a suspended queue; its completion handlers run
  ///   and its waiters wake before `cancel()` returns (Foundation keeps it queued until its
  ///   turn, P2).
  /// - Executing: cancels the task running its body (`Task.isCancelled` becomes `true`,
  ///   `withTaskCancellationHandler` handlers run, on this thread); it stays `.executing` until
  ///   the body ends: `.cancelled` if it throws `CancellationError`, `.failed` if it throws
  ///   another error, `.finished` if it returns.
  /// - Ended: no effect.
  public func cancel() {
    Engine.locked { state, effects in Engine.cancel(self, &state, &effects) }
  }

  /// Suspends until the operation has ended, in any terminal state.
  ///
  /// Like `Task.value`, cancelling the waiting task does not end the wait nor cancel the
  /// operation; call ``cancel()`` for that. No thread blocks (Foundation's
  /// `waitUntilFinished()` blocks one, P7).
  public func waitUntilFinished() async {
    await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
      let ended = Engine.locked { _, _ in
        if _state.isTerminal { return true }
        waiters.append(continuation)
        return false
      }
      if ended { continuation.resume() }
    }
  }

  /// The operation's states, for one subscriber: the current state first, then each later
  /// change in order; the stream finishes after the terminal state.
  ///
  /// Each access creates a new subscriber (an `AsyncStream` has one consumer). Lossless; costs
  /// about one microsecond per delivered state and nothing when nobody subscribes. Replaces
  /// KVO on `"isExecuting"`/`"isFinished"` (P12).
  public var events: AsyncStream<OperationState> {
    let channel = EventChannel<OperationState>()
    Engine.locked { _, effects in
      _ = channel.push(_state, effects: &effects)
      if _state.isTerminal {
        channel.finish(effects: &effects)
      } else {
        subscribers.append(channel)
      }
    }
    return channel.makeStream()
  }

  /// `name (op#N): state`.
  public var description: String {
    "\(name ?? "operation") (\(id)): \(state)"
  }

  /// Identity: an operation equals only itself.
  public static func == (lhs: AnyQueueOperation, rhs: AnyQueueOperation) -> Bool { lhs === rhs }

  /// Hashes the identity.
  public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// An operation whose body produces a `Success`: the unit of work and the handle to its result.
///
/// Create one with ``ActorQueue/addOperation(name:priority:_:)`` (added at once), or with
/// ``init(name:priority:_:)`` to prepare dependencies first and add it with
/// ``ActorQueue/addOperation(_:)``. Replaces `BlockOperation` plus the hand-written
/// asynchronous `Operation` subclass (P1): the body is an `async` function, and its return is
/// the finish — the terminal state and the completion handlers happen exactly once, by
/// construction.
///
/// Memory: about 300 bytes while waiting, plus what the body captures. The body is released
/// when the operation ends, and handlers right after they run (P8).
public final class QueueOperation<Success: Sendable>: AnyQueueOperation, @unchecked Sendable {
  /// A prepared operation, not in any queue yet (state `.pending`).
  ///
  /// - Parameters:
  ///   - name: for debugging and events.
  ///   - priority: the initial ``AnyQueueOperation/queuePriority``.
  ///   - body: the work. Its return finishes the operation; a thrown `CancellationError`
  ///     cancels it; any other error fails it. It runs in a task of the queue's (see
  ///     ``ActorQueue``), at most once, and only if the operation starts.
  public init(
    name: String? = nil, priority: OperationPriority = .normal,
    _ body: @escaping @Sendable () async throws -> Success
  ) {
    super.init(name: name, priority: priority)
    self.body = { try await body() }
  }

  /// An operation whose work runs outside Swift concurrency (a thread, a callback API) and
  /// reports its end through `complete`, exactly once, from any thread.
  ///
  /// Package-internal, for the OperationAdapter: no task waits while the work runs, so an
  /// operation costs one hop to where its work runs instead of two. It holds its slot from
  /// `start` until `complete`. `start` is called on a task of the queue's and must return
  /// promptly; `cancel` is called, on the cancelling thread, if the operation is cancelled while
  /// its work runs. Later calls of `complete` are ignored.
  package init(
    name: String? = nil, priority: OperationPriority = .normal,
    start: @escaping @Sendable (_ complete: @escaping @Sendable (Result<Success, any Error>) -> Void) -> Void,
    cancel: @escaping @Sendable () -> Void
  ) {
    super.init(name: name, priority: priority)
    self.externalStart = { complete in
      start { result in complete(result.map { $0 as any Sendable }) }
    }
    self.externalCancel = cancel
  }

  /// The body's value, once the operation has ended.
  ///
  /// - Throws: `CancellationError` if the operation was cancelled; the body's error if it
  ///   failed. Like `Task.value`, cancelling the waiting task does not end the wait.
  public var value: Success {
    get async throws { try await result.get() }
  }

  /// The outcome, once the operation has ended: the value, or the error (`CancellationError`
  /// when cancelled). Cancelling the waiting task does not end the wait.
  public var result: Result<Success, any Error> {
    get async {
      await waitUntilFinished()
      let outcome: Outcome? = Engine.locked { _, _ in self.outcome }
      guard let outcome else { preconditionFailure("Internal inconsistency: ended without an outcome") }
      return Self.typed(outcome)
    }
  }

  /// Calls `handler` with the outcome once the operation has ended: exactly once, whether it
  /// finished, failed or was cancelled; at once (on this thread) if it has ended already.
  ///
  /// Handlers run after the scheduler's lock is released, in the order they were added, on the
  /// thread that ended the operation: the queue's task that ran the body, or the caller of
  /// `cancel()` for an operation cancelled while waiting. They run before tasks awaiting
  /// ``value`` resume. Each handler is released after it runs, so capturing the operation
  /// forms no lasting cycle (Foundation's `completionBlock` does, P8).
  public func onCompletion(_ handler: @escaping @Sendable (Result<Success, any Error>) -> Void) {
    let ended: Outcome? = Engine.locked { _, _ in
      if let outcome, _state.isTerminal { return outcome }
      completionHandlers.append { outcome in handler(Self.typed(outcome)) }
      return nil
    }
    if let ended { handler(Self.typed(ended)) }
  }

  /// The outcome with its value cast back to `Success` (the body produced it, so the cast
  /// cannot fail).
  private static func typed(_ outcome: Outcome) -> Result<Success, any Error> {
    outcome.map { $0 as! Success }
  }

  /// The value of a finished input. Called by a dependent's body.
  func inputValue() -> Success {
    let outcome: Outcome? = Engine.locked { _, _ in self.outcome }
    guard case .success(let value) = outcome else {
      preconditionFailure("Internal inconsistency: a dependent ran before its input \(id) finished")
    }
    return value as! Success
  }
}

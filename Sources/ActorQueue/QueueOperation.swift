import Synchronization

/// A unit of work and the handle to its outcome, without its result type.
///
/// The counterpart of Foundation's `Operation`, with these differences:
/// - Only a queue starts an operation; there is no `start()`.
/// - A waiting operation that is cancelled ends `.cancelled` at once, without running, and
///   releases its waiters, completion handlers and dependents at once (Foundation keeps it
///   queued until its turn).
/// - Waiting is `await` (``waitUntilFinished()``); no thread blocks.
/// - State is one ``OperationState``, observable in order through ``events`` (not KVO on
///   string key paths).
/// - A dependency that would close a cycle is refused (Foundation's hangs both operations).
/// - An operation that has ended no longer keeps its dependencies alive (Foundation's does, so
///   two ended operations can keep each other alive forever).
///
/// Every member is safe to call from any thread or task. Synchronous members take the
/// scheduler's lock briefly (tens of nanoseconds) and never wait for an operation.
///
/// A handle: its scheduling state is a record in the scheduler (`Scheduler`), reached only
/// under the scheduler's lock; the handle holds its identity and the index of that record,
/// which it frees when it is deinitialised.
///
/// `@unchecked Sendable`: a non-final class cannot be checked `Sendable`; every stored property
/// is an immutable `let` of a `Sendable` type, and subclasses add none.
public class AnyQueueOperation: Hashable, @unchecked Sendable, CustomStringConvertible {
  /// Unique in the process; also the identifier used in ``QueueEvent``s.
  public let id: OperationID
  /// A name for debugging, events and error messages.
  public let name: String?
  /// This operation's record in the scheduler.
  let recordIndex: Int
  /// Whether the record lives in the process's scheduler (`Engine.scheduler`); `false` only for
  /// handles that tests make for a scheduler value of their own.
  let isInEngine: Bool
  /// Its progress cell, once something reports or observes progress (see `ProgressCell`).
  let progressStorage = LazyReference<ProgressCell>()

  /// A new operation, with its record.
  init(name: String?, priority: OperationPriority, work: OperationWork) {
    let id = OperationID()
    self.id = id
    self.name = name
    isInEngine = true
    recordIndex = Engine.scheduler.withLock {
      $0.createOperation(id: id, name: name, priority: priority, work: work)
    }
  }

  /// A new operation whose record the caller created under the lock (`id` is the record's).
  init(id: OperationID, name: String?, recordIndex: Int, isInEngine: Bool = true) {
    self.id = id
    self.name = name
    self.recordIndex = recordIndex
    self.isInEngine = isInEngine
  }

  /// Frees the record. What it owned (dependencies, an unrun body, the outcome) is released
  /// after unlocking; a chain of dropped prepared operations is released one link at a time
  /// (see `Scheduler.releaseOperation`), so releasing a 100,000-deep graph cannot overflow the
  /// stack.
  deinit {
    guard isInEngine, !recordFreed.load(ordering: .relaxed) else { return }
    if Self.releaseRecord(recordIndex, owner: id) { Engine.drainReleaseBacklog() }
  }

  /// Set under the scheduler's lock when the operation's end freed its record because the
  /// queue held the last reference to this handle; read by `deinit`, which then runs on the
  /// same thread, once the effects that hold that reference are released.
  private let recordFreed = Atomic<Bool>(false)

  /// The record was freed with this handle still referenced only by the caller (see
  /// `Scheduler.endOne`): `deinit` must not free it again.
  func recordWasFreed() {
    recordFreed.store(true, ordering: .relaxed)
  }

  /// Frees the record; what it owned is released when this function returns, outside the lock.
  /// Returns whether the caller must drain the release backlog.
  private static func releaseRecord(_ index: Int, owner: OperationID) -> Bool {
    let released = Engine.scheduler.withLock { $0.releaseOperation(index, owner: owner, now: Engine.now) }
    if var effects = released.effects { effects.perform() }
    return released.drains
  }

  // MARK: Public

  /// The order among this queue's ready operations: higher first, then submission order.
  ///
  /// Setting it re-sorts a waiting operation at once (Foundation's may not re-sort).
  /// Cost: O(1), plus O(log n) for the re-sort.
  public var queuePriority: OperationPriority {
    get { Engine.read { $0.priority(of: recordIndex) } }
    set { Engine.run { $0.changePriority(newValue, of: recordIndex, now: Engine.now, &$1) } }
  }

  /// The current state. A snapshot: it may change as soon as it is read.
  public var state: OperationState { Engine.read { $0.state(of: recordIndex) } }

  /// How the operation ended — its terminal state, the error it ended with (a
  /// ``DependencyFailedError`` for one that never ran because an input failed), its value — or
  /// `nil` while it has not ended. Read without waiting, on a handle of any type. Cost: O(1).
  public var outcome: OperationOutcome? { Engine.read { $0.endedOutcome(of: recordIndex) } }

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
  public var isCancelled: Bool { Engine.read { $0.isCancelRequested(recordIndex) } }

  /// The error the body threw, if it threw — also when the operation ended `.cancelled`
  /// because its cancellation had been requested (a URL session's own "cancelled" error, say:
  /// the operation's ``QueueOperation/value`` throws `CancellationError`, and this keeps what
  /// the body threw). `nil` while it runs, if the body returned or threw `CancellationError`,
  /// and if it never ran. Foundation has no equivalent. Cost: O(1).
  public var thrownError: (any Error)? { Engine.read { $0.thrownError(of: recordIndex) } }

  /// The operations this one waits for, in the order they were added (typed inputs and the
  /// queue's barriers included). Like Foundation, ended dependencies stay listed, and an
  /// unfinished operation keeps its dependencies alive. Unlike Foundation, once this operation
  /// has ended it no longer keeps them alive (so no two operations can keep each other alive):
  /// it lists those that are still alive. Cost: O(dependencies).
  public var dependencies: [AnyQueueOperation] {
    Engine.read { $0.dependencies(of: recordIndex) }
  }

  /// Makes this operation wait until `operation` has ended, however it ends (Foundation's
  /// rule). Works across queues and whichever operation is added to a queue first; an
  /// already-ended dependency is satisfied at once.
  ///
  /// - Throws: ``ActorQueueError/dependencyCycle`` if `operation` already waits for this one
  ///   (or is this one): its ``ActorQueueError/cycle`` names the operations on the cycle, this
  ///   one first, `operation` second, then each that the one before waits for (barriers, and
  ///   the shared work that a handle to coalesced work waits for, included).
  ///   ``ActorQueueError/alreadyStarted`` if this operation has started or ended. Either way
  ///   nothing changes.
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
    try Engine.runThrowing { (scheduler, effects) throws(ActorQueueError) in
      try scheduler.addDependency(
        operation, to: recordIndex, requirement: requirement, now: Engine.now, &effects)
    }
  }

  /// Removes a dependency added with ``addDependency(_:)``. If nothing else holds this
  /// operation, it becomes ready at once (Foundation on Linux does not re-evaluate readiness
  /// here). No effect once this operation has started, none on a typed input of
  /// ``ActorQueue/addOperation(name:priority:after:_:operation:)``, and none on the ordering
  /// behind a barrier of its queue (``ActorQueue/addBarrierBlock(name:_:)``), even when the
  /// barrier was also added explicitly.
  public func removeDependency(_ operation: AnyQueueOperation) {
    Engine.run { $0.removeDependency(operation.recordIndex, from: recordIndex, now: Engine.now, &$1) }
  }

  /// Asks the operation to stop.
  ///
  /// - Waiting (not started, in a queue or not): ends `.cancelled` at once; its body never
  ///   runs; its slot is never taken, even in a suspended queue; its completion handlers run
  ///   and its waiters wake before `cancel()` returns (Foundation keeps it queued until its
  ///   turn).
  /// - Executing: cancels the task running its body (`Task.isCancelled` becomes `true`,
  ///   `withTaskCancellationHandler` handlers run, on this thread); it stays `.executing` until
  ///   the body ends: `.cancelled` if it throws (any error: once cancellation was requested, a
  ///   thrown error is taken as the body giving up; ``thrownError`` keeps it), `.finished` if
  ///   it returns a value anyway.
  /// - Ended: no effect.
  public func cancel() {
    Engine.run { $0.cancel(recordIndex, now: Engine.now, &$1) }
  }

  /// Suspends until the operation has ended, in any terminal state.
  ///
  /// Like `Task.value`, cancelling the waiting task does not end the wait nor cancel the
  /// operation; call ``cancel()`` for that. No thread blocks (Foundation's
  /// `waitUntilFinished()` blocks one).
  ///
  /// The wait escalates: the operation and every unfinished operation it waits for, on any
  /// queue, run at least at the waiting task's priority (see ``effectiveTaskPriority``), and
  /// again if the waiting task is escalated while it waits (Apple's platforms 26 and later; Linux).
  ///
  /// Called from the operation's own body or condition (or, in a group's child, on its group), it
  /// stops the program with ``ActorQueueError/awaitsItself``'s message: nothing could end the wait.
  public func waitUntilFinished() async {
    if let refused = await waitForEnd() { fatalError("ActorQueue: \(refused)") }
  }

  /// Waits for the end, escalating; returns instead, at once, the error of a wait that nothing
  /// could end (``ActorQueueError/awaitsItself``).
  func waitForEnd() async -> ActorQueueError? {
    let priority = Task.currentPriority.rawValue
    if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
      return await withTaskPriorityEscalationHandler {
        await waitForEnd(escalatingTo: priority)
      } onPriorityEscalated: { [recordIndex] _, raised in
        Engine.run { $0.escalate(recordIndex, to: raised.rawValue, now: Engine.now, &$1) }
      }
    } else {
      return await waitForEnd(escalatingTo: priority)
    }
  }

  private func waitForEnd(escalatingTo priority: UInt8) async -> ActorQueueError? {
    let task = currentTaskAddress()
    var refused: ActorQueueError?
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let (waits, error) = Engine.run { scheduler, effects in
        scheduler.beginWait(on: recordIndex, id: id, fromTask: task, timed: false) {
          $0.addWaiter(continuation, to: recordIndex, escalatingTo: priority, now: Engine.now, &effects)
        }
      }
      refused = error
      if !waits { continuation.resume() }
    }
    return refused
  }

  /// The operation's states, for one subscriber: the current state first, then each later
  /// change in order; the stream finishes after the terminal state.
  ///
  /// Each access creates a new subscriber (an `AsyncStream` has one consumer). Lossless; costs
  /// about one microsecond per delivered state and nothing when nobody subscribes. Replaces
  /// KVO on `"isExecuting"`/`"isFinished"`.
  public var events: AsyncStream<OperationState> {
    let channel = EventChannel<OperationState>()
    Engine.run { $0.subscribe(channel, to: recordIndex, &$1) }
    return channel.makeStream()
  }

  /// `name (op#N): state`.
  public var description: String {
    // A handle whose record lives in a scheduler value of a test's own has no state to read here.
    guard isInEngine else { return "\(name ?? "operation") (\(id))" }
    return "\(name ?? "operation") (\(id)): \(state)"
  }

  /// Identity: an operation equals only itself.
  public static func == (lhs: AnyQueueOperation, rhs: AnyQueueOperation) -> Bool { lhs === rhs }

  /// Hashes the identity.
  public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// An operation whose body produces a `Success`: the unit of work and the handle to its result.
///
/// Create one with ``ActorQueue/addOperation(name:priority:_:)->QueueOperation<Success>`` (added at once), or with
/// ``init(name:priority:_:)`` to prepare dependencies first and add it with
/// ``ActorQueue/addOperation(_:)``. Replaces `BlockOperation` plus the hand-written
/// asynchronous `Operation` subclass: the body is an `async` function, and its return is
/// the finish — the terminal state and the completion handlers happen exactly once, by
/// construction.
///
/// Memory: about 300 bytes while waiting, plus what the body captures. The body is released
/// when the operation ends, and handlers right after they run (a `completionBlock` that
/// captures its operation forms a retain cycle).
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
    super.init(name: name, priority: priority, work: .typed(body))
  }

  /// A prepared operation of `work`.
  override init(name: String?, priority: OperationPriority, work: OperationWork) {
    super.init(name: name, priority: priority, work: work)
  }

  /// An operation whose record the caller created under the lock.
  override init(id: OperationID, name: String?, recordIndex: Int, isInEngine: Bool = true) {
    super.init(id: id, name: name, recordIndex: recordIndex, isInEngine: isInEngine)
  }

  /// An operation whose work runs outside Swift concurrency (a thread, a callback API) and
  /// reports its end through `complete`, exactly once, from any thread.
  ///
  /// Package-internal (tests use it; the OperationAdapter uses ``init(name:priority:external:)``):
  /// no task runs it and no task waits while the work runs, so an operation costs one hop to
  /// where its work runs. It holds its slot from `start` until `complete`. `start` is called,
  /// once the scheduler's lock is released, on the thread of the event that gave the operation
  /// its slot (the thread that added it, or the one whose report ended the operation before it;
  /// a worker task of the queue's, in a queue that also runs bodies), and must return promptly;
  /// `cancel` is called, on the cancelling thread, if the operation is cancelled while its work
  /// runs. Later calls of `complete` are ignored.
  ///
  /// With `startsWhenCancelled` (Foundation's rule, for legacy operations): cancelled while
  /// waiting in a queue, the operation is not ended at once; `start` is called at once, outside
  /// the queue's slot accounting (it takes no slot), on the cancelling thread, and the operation
  /// ends when the work reports its end. Without a queue it ends at once, as any operation.
  package convenience init(
    name: String? = nil, priority: OperationPriority = .normal,
    start: @escaping @Sendable (_ complete: @escaping @Sendable (Result<Success, any Error>) -> Void) -> Void,
    cancel: @escaping @Sendable () -> Void, startsWhenCancelled: Bool = false
  ) {
    let work = ClosureExternalWork(
      start: { complete in start { result in complete(result.map { $0 as any Sendable }) } },
      cancel: cancel, startsWhenCancelled: startsWhenCancelled)
    self.init(name: name, priority: priority, external: work)
  }

  /// An operation whose work is `external` (see ``ExternalWork``; the rules of
  /// ``init(name:priority:start:cancel:startsWhenCancelled:)`` apply). The value `external`
  /// reports must be a `Success`.
  package init(name: String? = nil, priority: OperationPriority = .normal, external: any ExternalWork) {
    super.init(name: name, priority: priority, work: .external(external))
  }

  /// The body's value, once the operation has ended.
  ///
  /// - Throws: `CancellationError` if the operation was cancelled (also when its body threw
  ///   after cancellation was requested: see ``AnyQueueOperation/thrownError``); the body's
  ///   error if it failed; ``ActorQueueError/awaitsItself`` at once if awaited from its own body
  ///   or condition (or a group's child awaiting its group). Like `Task.value`, cancelling the
  ///   waiting task does not end the wait.
  public var value: Success {
    get async throws { try await result.get() }
  }

  /// The outcome, once the operation has ended: the value, or the error (`CancellationError`
  /// when cancelled). Cancelling the waiting task does not end the wait. Awaited from its own
  /// body or condition (or a group's child awaiting its group), it is at once
  /// ``ActorQueueError/awaitsItself``: nothing could end that wait.
  public var result: Result<Success, any Error> {
    get async {
      if let refused = await waitForEnd() { return .failure(refused) }
      let outcome = Engine.read { $0.outcome(of: recordIndex) }
      guard let outcome else { preconditionFailure("Internal inconsistency: ended without an outcome") }
      return Self.typed(outcome.value)
    }
  }

  /// Calls `handler` with the outcome once the operation has ended: exactly once, whether it
  /// finished, failed or was cancelled; at once (on this thread) if it has ended already.
  ///
  /// Handlers run after the scheduler's lock is released, in the order they were added, on the
  /// thread that ended the operation: the queue's task that ran the body, or the caller of
  /// `cancel()` for an operation cancelled while waiting. They run before tasks awaiting
  /// ``value`` resume. Each handler is released after it runs, so capturing the operation
  /// forms no lasting cycle (Foundation's `completionBlock` does).
  public func onCompletion(_ handler: @escaping @Sendable (Result<Success, any Error>) -> Void) {
    let ended = Engine.mutate {
      $0.addCompletionHandler({ outcome in handler(Self.typed(outcome)) }, to: recordIndex)
    }
    if let ended { handler(Self.typed(ended.value)) }
  }

  /// The outcome with its value cast back to `Success` (the body produced it, so the cast
  /// cannot fail).
  private static func typed(_ outcome: Outcome) -> Result<Success, any Error> {
    outcome.map { $0 as! Success }
  }

  /// The value of a finished input. Called by a dependent's body.
  func inputValue() -> Success {
    let outcome = Engine.read { $0.outcome(of: recordIndex) }
    guard case .success(let value) = outcome?.value else {
      preconditionFailure("Internal inconsistency: a dependent ran before its input \(id) finished")
    }
    return value as! Success
  }
}

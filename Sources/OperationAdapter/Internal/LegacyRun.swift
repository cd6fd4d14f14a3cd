import ActorQueue
import Dispatch
import Foundation

/// One legacy operation on its way through a ``QueueOperation``: started by the handle's body
/// (which holds the queue's slot), or finished without a slot if the handle ends before it
/// starts.
///
/// States: `idle` until the handle starts it or ends without starting; `starting` while the
/// handle checks the operation; `running` while the legacy operation runs (holding the slot,
/// with no task waiting: the handle is an externally completed operation); `done` once it has
/// its outcome (or refused a misused operation); `abandoned` when the handle ended before it
/// started.
///
/// Not generic over the operation's type: the handle's body downcasts the result instead, which
/// spares a generic-metadata lookup on every access (8% of the adapter's time when it was).
final class LegacyRun: ExternalWork {
  enum Outcome: Sendable {
    case finished
    case timedOut
  }

  private enum State {
    case idle
    case starting
    case running(@Sendable (Result<any Sendable, any Error>) -> Void)
    case done
    case abandoned
  }

  /// Everything that changes, behind one lock (one allocation per run, not one per field).
  private struct Fields {
    var state = State.idle
    /// Whether this run still holds the operation's entry in `LegacyRuntime`'s record.
    var registered = true
    /// The gate keeping the handle `.pending`, until ``releaseGate()`` enqueues it.
    var pendingGate: QueueOperation<Void>?
  }

  let operation: Operation
  private let timeout: Duration?
  /// Where the operation keeps the error it cancelled itself for (see
  /// `ActorQueue.addOperation(legacy:timeout:error:)`); `nil`: a cancelled operation's handle
  /// ends `.cancelled`.
  private let failure: (@Sendable () -> (any Error)?)?
  private let identifier: ObjectIdentifier
  private let fields = LockedValue(Fields())

  private init(operation: Operation, timeout: Duration?, failure: (@Sendable () -> (any Error)?)?) {
    self.operation = operation
    self.timeout = timeout
    self.failure = failure
    self.identifier = ObjectIdentifier(operation)
  }

  deinit { release() }

  /// A run for `operation`, or the misuse that forbids it.
  static func prepare(
    _ operation: Operation, timeout: Duration?, failure: (@Sendable () -> (any Error)?)?
  ) -> Result<LegacyRun, OperationAdapterError> {
    if let misuse = LegacyRuntime.misuse(of: operation) { return .failure(misuse) }
    guard LegacyRuntime.register(operation) else { return .failure(.alreadyAdded) }
    return .success(LegacyRun(operation: operation, timeout: timeout, failure: failure))
  }

  /// Makes `handle` wait, without a slot, until the legacy operation is ready (its Foundation
  /// dependencies have finished and an overridden `isReady` says so), and makes it follow what
  /// legacy code does to the operation meanwhile: a `cancel()` cancels the handle (whose
  /// operation is then started without a slot, and which ends when it has finished), a new
  /// `queuePriority` re-sorts it. (Its owner also calls ``handleEnded()`` when it ends.)
  ///
  /// - Parameter followsChanges: whether to watch the operation while the handle waits even if
  ///   it is ready now. `false` only where the handle cannot wait for long: it is ready and
  ///   added to an unlimited queue that is not suspended.
  func gate(_ handle: AnyQueueOperation, followsChanges: Bool) {
    // A ready operation needs no gate, whatever its dependencies (Foundation's base `isReady`
    // is true only once they have finished; an override that says ready is obeyed by
    // OperationQueue too), and reading `isReady` is cheaper than copying `dependencies`.
    let gated = !operation.isReady
    let unfinished = gated ? operation.dependencies.filter { !$0.isFinished } : []
    if gated {
      let gate = QueueOperation<Void>(
        name: "legacy dependencies of \(handle.name ?? "\(type(of: operation))")",
        priority: handle.queuePriority
      ) {}
      do {
        try handle.addDependency(gate)
      } catch {
        preconditionFailure("Internal inconsistency: a new operation refused a new dependency: \(error)")
      }
      fields.withLock { $0.pendingGate = gate }
    }
    guard gated || followsChanges else { return }
    let waiting = LegacyWaiting(run: self, handle: handle)
    if !unfinished.isEmpty {
      // Dependencies finishing are learned at once from Foundation; the watcher catches the
      // rest (an overridden isReady, cancellation) within a few milliseconds.
      LegacyRuntime.whenFinished(unfinished) { [weak self] in
        guard let self, self.isWaiting, self.operation.isReady else { return }
        self.releaseGate()
      }
    }
    LegacyWatcher.shared.watch(waiting)
  }

  /// Whether the handle has neither started the operation nor ended.
  var isWaiting: Bool {
    fields.withLock { fields in
      if case .idle = fields.state { return true }
      return false
    }
  }

  /// Lets the handle compete for a slot (once; later calls do nothing).
  func releaseGate() {
    let gate = fields.withLock { fields in
      defer { fields.pendingGate = nil }
      return fields.pendingGate
    }
    guard let gate else { return }
    do {
      try LegacyRuntime.gates.addOperation(gate)
    } catch {
      preconditionFailure("Internal inconsistency: a gate was enqueued twice: \(error)")
    }
  }

  /// Whether the handle still waits for its gate.
  var isGated: Bool { fields.withLock { $0.pendingGate != nil } }

  // MARK: The handle's external work

  /// Foundation's rule: a cancelled waiting operation is still started (outside the slot
  /// accounting), sees `isCancelled` and finishes; the handle ends once it has finished.
  var startsWhenCancelled: Bool { true }

  /// The handle was cancelled while the operation runs.
  func cancel() {
    operation.cancel()
  }

  /// The handle ended: see ``handleEnded()``.
  func ended() {
    handleEnded()
  }

  /// Starts the legacy operation for the handle, which holds its slot until `complete` is
  /// called: once Foundation records the operation finished (its value: the operation, or
  /// `CancellationError` if it was cancelled), or the timeout passed. No task waits meanwhile.
  func start(_ complete: @escaping @Sendable (Result<any Sendable, any Error>) -> Void) {
    fields.withLock { fields in
      guard case .idle = fields.state else {
        preconditionFailure("Internal inconsistency: a legacy operation was started twice")
      }
      fields.state = .starting
    }
    // Legacy code may have started the operation since it was wrapped: leave it alone.
    if let misuse = LegacyRuntime.misuse(of: operation) {
      fields.withLock { $0.state = .done }
      return complete(.failure(misuse))
    }
    // Cancelled while waiting, and not ready (an overridden `isReady` that ignores cancellation):
    // an OperationQueue would not start it before it is ready either. The handle ends now, and
    // the operation is started (without a slot) once it is ready, so it still finishes then.
    if operation.isCancelled, !operation.isReady {
      fields.withLock { $0.state = .done }
      complete(.failure(CancellationError()))
      LegacyRuntime.start(operation) { [self] in release() }
      return
    }
    fields.withLock { fields in
      guard case .starting = fields.state else {
        preconditionFailure("Internal inconsistency: a legacy operation was started twice")
      }
      fields.state = .running(complete)
    }
    LegacyRuntime.start(operation) { [self] in
      release()
      signal(.finished)
    }
    if let timeout, let interval = timeout.dispatchInterval {
      DispatchQueue.global().asyncAfter(deadline: .now() + interval) { [weak self] in
        self?.signal(.timedOut)
      }
    }
  }

  /// The first outcome wins; later ones (the operation finishing after its timeout) are ignored.
  private func signal(_ outcome: Outcome) {
    let complete: (@Sendable (Result<any Sendable, any Error>) -> Void)? = fields.withLock { fields in
      guard case .running(let complete) = fields.state else { return nil }
      fields.state = .done
      return complete
    }
    guard let complete else { return }
    switch outcome {
    case .timedOut:
      operation.cancel()
      complete(.failure(OperationAdapterError.timedOut))
    case .finished:
      guard operation.isCancelled else { return complete(.success(operation)) }
      // The scheduler decides between the two: `.failed` with the legacy error, unless the
      // handle was cancelled through the queue (then `.cancelled`, the error kept as
      // `thrownError`).
      complete(.failure(failure?() ?? CancellationError()))
    }
  }

  /// The handle ended. If it never started the operation (an input it required failed; a
  /// cancelled waiting handle starts it through ``start(complete:)``, see
  /// `QueueOperation.init(preparing:followsChanges:)`), Foundation's rule applies: the operation is cancelled and still
  /// started, so it reaches `isFinished` (its `start()` sees `isCancelled`), its
  /// `completionBlock` runs and legacy operations that depend on it are released. No slot is
  /// used.
  func handleEnded() {
    let abandoned = fields.withLock { fields in
      guard case .idle = fields.state else { return false }
      fields.state = .abandoned
      return true
    }
    guard abandoned else { return }
    operation.cancel()
    guard LegacyRuntime.misuse(of: operation) == nil else { return release() }
    LegacyRuntime.start(operation) { [self] in release() }
  }

  /// Gives up the operation's entry in the record of wrapped operations (once).
  private func release() {
    let wasRegistered = fields.withLock { fields in
      defer { fields.registered = false }
      return fields.registered
    }
    if wasRegistered { LegacyRuntime.unregister(identifier) }
  }
}

/// A handle waiting in its queue, as the watcher sees it: follows the legacy operation's
/// cancellation, readiness and priority until the handle starts or ends.
///
/// `@unchecked Sendable`: `handle` is a `weak let` (never reassigned); `lastPriority` is read
/// and written only by the watcher's thread (``LegacyWatcher`` polls each entry from that one
/// thread).
final class LegacyWaiting: LegacyWatched, @unchecked Sendable {
  private let run: LegacyRun
  private weak let handle: AnyQueueOperation?
  private var lastPriority: Operation.QueuePriority

  init(run: LegacyRun, handle: AnyQueueOperation) {
    self.run = run
    self.handle = handle
    self.lastPriority = run.operation.queuePriority
  }

  func poll() -> LegacyPoll {
    guard let handle, run.isWaiting else { return .done }
    let operation = run.operation
    if operation.isCancelled {
      // What OperationQueue does: a cancelled operation is ready (its dependencies no longer
      // count), starts, sees isCancelled and finishes. Cancelling the handle does that without
      // a slot and ends the handle `.cancelled`.
      handle.cancel()
      return .done
    }
    var changed = false
    let priority = operation.queuePriority
    if priority != lastPriority {
      lastPriority = priority
      handle.queuePriority = OperationPriority(priority)
      changed = true
    }
    if run.isGated && operation.isReady {
      run.releaseGate()
      changed = true
    }
    return changed ? .changed : .unchanged
  }
}

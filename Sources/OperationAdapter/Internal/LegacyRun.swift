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
final class LegacyRun: Sendable {
  enum Outcome: Sendable {
    case finished
    case timedOut
  }

  private enum State {
    case idle
    case starting
    case running(@Sendable (Result<Operation, any Error>) -> Void)
    case done
    case abandoned
  }

  let operation: Operation
  private let timeout: Duration?
  private let identifier: ObjectIdentifier
  private let state = LockedValue(State.idle)
  /// Whether this run still holds the operation's entry in `LegacyRuntime`'s record.
  private let registered = LockedValue(true)

  private init(operation: Operation, timeout: Duration?) {
    self.operation = operation
    self.timeout = timeout
    self.identifier = ObjectIdentifier(operation)
  }

  deinit { release() }

  /// A run for `operation`, or the misuse that forbids it.
  static func prepare(_ operation: Operation, timeout: Duration?) -> Result<LegacyRun, OperationAdapterError>
  {
    if let misuse = LegacyRuntime.misuse(of: operation) { return .failure(misuse) }
    guard LegacyRuntime.register(operation) else { return .failure(.alreadyAdded) }
    return .success(LegacyRun(operation: operation, timeout: timeout))
  }

  /// Makes `handle` wait, without a slot, for the operation's unfinished Foundation
  /// dependencies. (Its owner also calls ``handleEnded()`` when it ends.)
  func gate(_ handle: AnyQueueOperation) {
    let unfinished = operation.dependencies.filter { !$0.isFinished }
    guard !unfinished.isEmpty else { return }
    let gate = QueueOperation<Void>(
      name: "legacy dependencies of \(handle.name ?? "\(type(of: operation))")",
      priority: handle.queuePriority
    ) {}
    do {
      try handle.addDependency(gate)
    } catch {
      preconditionFailure("Internal inconsistency: a new operation refused a new dependency: \(error)")
    }
    LegacyRuntime.whenFinished(unfinished) {
      do {
        try LegacyRuntime.gates.addOperation(gate)
      } catch {
        preconditionFailure("Internal inconsistency: a gate was enqueued twice: \(error)")
      }
    }
  }

  /// Starts the legacy operation for the handle, which holds its slot until `complete` is
  /// called: once Foundation records the operation finished (its value: the operation, or
  /// `CancellationError` if it was cancelled), or the timeout passed. No task waits meanwhile.
  func start(complete: @escaping @Sendable (Result<Operation, any Error>) -> Void) {
    state.withLock { state in
      guard case .idle = state else {
        preconditionFailure("Internal inconsistency: a legacy operation was started twice")
      }
      state = .starting
    }
    // Legacy code may have started the operation since it was wrapped: leave it alone.
    if let misuse = LegacyRuntime.misuse(of: operation) {
      state.withLock { $0 = .done }
      return complete(.failure(misuse))
    }
    state.withLock { state in
      guard case .starting = state else {
        preconditionFailure("Internal inconsistency: a legacy operation was started twice")
      }
      state = .running(complete)
    }
    let operation = self.operation
    LegacyRuntime.whenFinished([operation]) { [self] in
      release()
      signal(.finished)
    }
    LegacyRuntime.start(operation)
    if let timeout, let interval = timeout.dispatchInterval {
      DispatchQueue.global().asyncAfter(deadline: .now() + interval) { [weak self] in
        self?.signal(.timedOut)
      }
    }
  }

  /// The first outcome wins; later ones (the operation finishing after its timeout) are ignored.
  private func signal(_ outcome: Outcome) {
    let complete: (@Sendable (Result<Operation, any Error>) -> Void)? = state.withLock { state in
      guard case .running(let complete) = state else { return nil }
      state = .done
      return complete
    }
    guard let complete else { return }
    switch outcome {
    case .timedOut:
      operation.cancel()
      complete(.failure(OperationAdapterError.timedOut))
    case .finished:
      complete(operation.isCancelled ? .failure(CancellationError()) : .success(operation))
    }
  }

  /// The handle ended. If it never started the operation (cancelled while waiting, or an input
  /// it required failed), Foundation's rule applies: the operation is cancelled and still
  /// started, so it reaches `isFinished` (its `start()` sees `isCancelled`), its
  /// `completionBlock` runs and legacy operations that depend on it are released. No slot is
  /// used.
  func handleEnded() {
    let abandoned = state.withLock { state in
      guard case .idle = state else { return false }
      state = .abandoned
      return true
    }
    guard abandoned else { return }
    operation.cancel()
    guard LegacyRuntime.misuse(of: operation) == nil else { return release() }
    LegacyRuntime.whenFinished([operation]) { [self] in release() }
    LegacyRuntime.start(operation)
  }

  /// Gives up the operation's entry in the record of wrapped operations (once).
  private func release() {
    let wasRegistered = registered.withLock { registered in
      defer { registered = false }
      return registered
    }
    if wasRegistered { LegacyRuntime.unregister(identifier) }
  }
}

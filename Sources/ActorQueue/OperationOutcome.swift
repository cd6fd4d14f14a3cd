/// How an operation ended, read without waiting: ``AnyQueueOperation/outcome``.
///
/// A struct, not an enum, so that it can grow without breaking your `switch`es: switch on
/// ``state``, whose three terminal cases are all an operation can end in.
///
/// ```swift
/// for operation in operations {
///   guard let outcome = operation.outcome else { continue }  // still running
///   if outcome.state == .failed { print(operation.name ?? "", outcome.error!) }
/// }
/// ```
///
/// Foundation has no equivalent: an `Operation` ends finished, with at most `isCancelled` set.
public struct OperationOutcome: Sendable, CustomStringConvertible {
  /// `.finished`, `.failed` or `.cancelled`.
  public let state: OperationState
  /// The error the operation ended with; `nil` when it finished. `CancellationError` when it was
  /// cancelled; a ``DependencyFailedError`` when it never ran because an input it required
  /// failed; otherwise what its body threw (or its external work reported). What a body threw
  /// after its cancellation was requested is ``AnyQueueOperation/thrownError``.
  public let error: (any Error)?
  /// The body's value, type-erased, when it finished (`()` for a body that returns nothing);
  /// `nil` otherwise. A ``QueueOperation``'s typed value is its ``QueueOperation/value``, which
  /// returns at once once the operation has ended.
  public let value: (any Sendable)?

  init(state: OperationState, outcome: Result<any Sendable, any Error>) {
    self.state = state
    switch outcome {
    case .success(let value):
      self.value = value
      self.error = nil
    case .failure(let error):
      self.value = nil
      self.error = error
    }
  }

  /// The state, and the error if there is one: `"failed: Broken()"`.
  public var description: String {
    if let error { return "\(state): \(error)" }
    return "\(state)"
  }
}

import ActorQueue

/// The error `operation` ended with, as the type the test expects; nil if it returned a value or
/// threw something else.
func thrownError<Failure: Error>(
  _ type: Failure.Type, by operation: QueueOperation<some Sendable>
) async -> Failure? {
  do {
    _ = try await operation.value
    return nil
  } catch {
    return error as? Failure
  }
}

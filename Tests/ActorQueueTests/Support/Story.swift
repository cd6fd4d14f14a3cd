import ActorQueueTesting

@testable import ActorQueue

/// What the queue told about `operation`, in order: its states and details, a retry as
/// "retry after N at M ms" and a condition's "not yet" as "NAME not yet until M ms".
func story(of operation: AnyQueueOperation, in recorder: QueueRecorder) -> [String] {
  recorder.events.compactMap { event in
    guard event.operationID == operation.id else { return nil }
    switch event.kind {
    case .operation(_, _, let state): return "\(state)"
    case .detail(_, _, let detail):
      if let attempt = detail.retryAttempt, let at = detail.retryAt {
        return "retry after \(attempt) at \(at.nanoseconds / 1_000_000) ms"
      }
      if let name = detail.conditionName, let until = detail.conditionUntil {
        return "\(name) not yet until \(until.nanoseconds / 1_000_000) ms"
      }
      return "\(detail)"
    default: return nil
    }
  }
}

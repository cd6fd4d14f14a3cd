/// Where an operation is in its life.
///
/// Foundation spreads this over the KVO properties `isReady`, `isExecuting`, `isFinished`
/// and `isCancelled`; here it is one value, delivered in order through
/// ``AnyQueueOperation/events`` and ``ActorQueue/events``.
///
/// An operation is `.pending` before it is in a queue, while a dependency is unfinished, and
/// while it is held; `.ready` when it may start as soon as a slot is free (also in a suspended
/// queue); `.executing` while its body runs. It then reaches exactly one of the terminal states
/// `.finished`, `.failed` or `.cancelled`, exactly once, and only once no body code of the
/// operation runs any more (an operation cancelled while waiting: at once).
public enum OperationState: Sendable, Hashable {
  /// Waiting for its dependencies, for a queue, or held.
  case pending
  /// May start as soon as its queue has a free slot and is not suspended.
  case ready
  /// It holds one of the queue's slots (and its keys, if it takes any): its conditions are being
  /// evaluated, or its body is running. One exception, from the OperationAdapter: a legacy `Operation` cancelled while it waited is started without a slot
  /// so that it can finish (Foundation's rule), and is `.executing` until it has.
  case executing
  /// Started, then paused; holds no slot.
  case paused
  /// Terminal: the body returned a value.
  case finished
  /// Terminal: the body threw an error other than `CancellationError`, or an input it
  /// required failed.
  case failed
  /// Terminal: cancelled before it started, or its body threw `CancellationError`.
  case cancelled

  /// Whether this is one of the three terminal states (`finished`, `failed`, `cancelled`).
  public var isTerminal: Bool {
    switch self {
    case .finished, .failed, .cancelled: true
    case .pending, .ready, .executing, .paused: false
    }
  }
}

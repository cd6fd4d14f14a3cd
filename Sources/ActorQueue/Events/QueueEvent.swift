/// One transition of a queue or of one of its operations, as seen by ``ActorQueue/events``.
///
/// Each event carries a ``sequence`` number taken, under the scheduler's lock, at the moment of
/// the transition. Numbers are unique and increasing across every queue of the process, so
/// events from several queues merge into the one order in which things happened, even when a
/// subscriber receives them late. ``executingCount`` and ``maxConcurrentOperationCount`` are the
/// queue's at that same moment: an invariant checker can verify the limit from events alone.
///
/// Foundation offers KVO on string key paths instead (`"isFinished"`, `"operationCount"`).
public struct QueueEvent: Sendable, CustomStringConvertible {
  /// What happened.
  public enum Kind: Sendable, Hashable {
    /// An operation entered `state`.
    case operation(id: OperationID, name: String?, state: OperationState)
    /// `isSuspended` became `true`.
    case suspended
    /// `isSuspended` became `false`.
    case resumed
    /// `maxConcurrentOperationCount` changed to this value.
    case limitChanged(Int)
    /// A bounded subscriber's buffer was full: this many events were dropped here, in their
    /// place. Lossless subscribers never receive it.
    case eventsDropped(count: Int)
    /// Something happened to an operation that its state does not say (its deadline passed, its
    /// body timed out); see ``OperationDetail``. New details are new values of that struct, so
    /// this is the last case this enum gains.
    case detail(id: OperationID, name: String?, detail: OperationDetail)
  }

  /// The global order of the transition (for `eventsDropped`: that of the last dropped event).
  public let sequence: UInt64
  /// What happened.
  public let kind: Kind
  /// Operations holding a slot of this queue at that moment (after the transition): at most
  /// the limit. A legacy `Operation` cancelled while it waited, which the OperationAdapter runs
  /// without a slot so that it can finish, is `.executing` but not counted here.
  public let executingCount: Int
  /// The queue's limit at that moment.
  public let maxConcurrentOperationCount: Int
  /// The queue's name.
  public let queueName: String?

  /// How a subscriber buffers events it has not consumed yet.
  public enum BufferingPolicy: Sendable, Hashable {
    /// Keeps every event until consumed (tests, diagnostics). Memory grows while the
    /// subscriber falls behind.
    case lossless
    /// Keeps the newest `capacity` events; older ones are replaced by one
    /// ``Kind/eventsDropped(count:)`` event. Never slows the queue, never grows beyond
    /// `capacity` (at least 1).
    case bufferingNewest(Int)
  }

  /// The state this event moved an operation to, if it is an operation event.
  public var operationState: OperationState? {
    if case .operation(_, _, let state) = kind { return state }
    return nil
  }

  /// The operation this event is about, if it is an operation event or a detail.
  public var operationID: OperationID? {
    switch kind {
    case .operation(let id, _, _), .detail(let id, _, _): id
    case .suspended, .resumed, .limitChanged, .eventsDropped: nil
    }
  }

  /// `#sequence kind (executing/limit)`.
  public var description: String {
    let limit = maxConcurrentOperationCount == .max ? "∞" : String(maxConcurrentOperationCount)
    let what: String
    switch kind {
    case .operation(let id, let name, let state):
      what = "\(name ?? id.description) \(state)"
    case .suspended: what = "suspended"
    case .resumed: what = "resumed"
    case .limitChanged(let limit): what = "limit \(limit)"
    case .eventsDropped(let count): what = "\(count) events dropped"
    case .detail(let id, let name, let detail): what = "\(name ?? id.description) \(detail)"
    }
    return "#\(sequence) \(what) (\(executingCount)/\(limit))"
  }

  static func dropped(count: Int, last: QueueEvent) -> QueueEvent {
    QueueEvent(
      sequence: last.sequence, kind: .eventsDropped(count: count), executingCount: last.executingCount,
      maxConcurrentOperationCount: last.maxConcurrentOperationCount, queueName: last.queueName)
  }
}

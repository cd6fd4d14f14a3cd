/// Why an operation of a queue is not running: one entry of ``ActorQueue/waitReport()``.
///
/// What a user needs the day something is stuck: every operation of the queue that has not
/// started, or whose body is paused, with what it waits for. `OperationQueue` has no equivalent:
/// there, a stuck operation is found by reading `isReady`, `dependencies` and `isSuspended` by
/// hand, and nothing says which dependency on which queue holds it.
public struct OperationWaitReport: Sendable, Hashable, CustomStringConvertible {
  /// The operation.
  public let id: OperationID
  /// Its name, if it was given one.
  public let name: String?
  /// Its state when the report was made: `.pending`, `.ready` or `.paused` (`.pending` while
  /// its submitter waits for ``Reason/capacity``).
  public let state: OperationState
  /// Its priority when the report was made.
  public let priority: OperationPriority
  /// What it waits for, all of it: each must pass before it runs. Never empty. A ``Reason/deadline(_:)``
  /// says when it fails if it is still waiting.
  public let waitingFor: [Reason]

  init(
    id: OperationID, name: String?, state: OperationState, priority: OperationPriority,
    waitingFor: [Reason]
  ) {
    self.id = id
    self.name = name
    self.state = state
    self.priority = priority
    self.waitingFor = waitingFor
  }

  /// `op#12 "import" pending: dependency op#9, deadline at 30.0s (system)`.
  public var description: String {
    let label = name.map { " \"\($0)\"" } ?? ""
    return "\(id)\(label) \(state): " + waitingFor.map(\.description).joined(separator: ", ")
  }

  /// One thing an operation waits for. A struct with static members, not an enum, so that new
  /// reasons (later features add some) never break a `switch`: compare with `==`
  /// (`report.waitingFor.contains(.dependency(fetch.id))`) or read ``kind``.
  public struct Reason: Sendable, Hashable, CustomStringConvertible {
    /// What kind of reason this is, without its operation or instant.
    public let kind: Kind
    /// The operation waited for: the dependency of ``dependency(_:)``, the holder of
    /// ``key(_:heldBy:)``; `nil` for the others.
    public let operation: OperationID?
    /// The instant of ``retry(at:)``, ``deadline(_:)``, ``permits(until:)`` and
    /// ``condition(_:until:)``; `nil` for the others.
    public let instant: QueueDeadline?
    /// The key of ``key(_:heldBy:)``; `nil` for the others.
    public let key: ExclusivityKey?
    /// The condition's name for ``condition(_:until:)``; `nil` for the others.
    public let conditionName: String?

    init(
      kind: Kind, operation: OperationID? = nil, instant: QueueDeadline? = nil, key: ExclusivityKey? = nil,
      conditionName: String? = nil
    ) {
      self.kind = kind
      self.operation = operation
      self.instant = instant
      self.key = key
      self.conditionName = conditionName
    }

    /// It waits for this dependency to end (on any queue; a legacy operation's Foundation
    /// dependencies and `isReady` show as one operation named "legacy dependencies of …").
    public static func dependency(_ id: OperationID) -> Reason { Reason(kind: .dependency, operation: id) }
    /// It is ready and waits for a slot: the queue runs as many operations as its limit allows,
    /// or those ahead of it by priority and submission order take the free slots. Also an
    /// operation paused to make room after the limit was lowered (`.paused`, not held).
    public static let slot = Reason(kind: .slot)
    /// It waits for an exclusivity key (``OperationTrait/exclusive(_:in:)-(ExclusivityKey...,_)``) that `holder` has
    /// (runs with, or is paused holding), or reserves after waiting long: it has left the ready
    /// set and holds no slot until every one of its keys is free. A ready operation whose queue
    /// cannot start anything now (full, or suspended) lists its taken keys beside ``slot`` (or
    /// ``suspended``): it leaves the ready set when its queue could start it.
    public static func key(_ key: ExclusivityKey, heldBy holder: OperationID) -> Reason {
      Reason(kind: .key, operation: holder, key: key)
    }
    /// Its queue is suspended (``ActorQueue/isSuspended``): nothing of it starts until resumed.
    /// A ready operation of a suspended queue lists this (and any key taken from it), not ``slot``.
    public static let suspended = Reason(kind: .suspended)
    /// It is held by ``AnyQueueOperation/pause()`` until ``AnyQueueOperation/resume()``.
    public static let paused = Reason(kind: .paused)
    /// An attempt failed and its retry policy runs it again at this instant, when it competes
    /// for a slot again (``OperationTrait/retry(_:)``).
    public static func retry(at instant: QueueDeadline) -> Reason { Reason(kind: .retry, instant: instant) }
    /// Not something it waits for, but when the waiting ends: at this instant it fails with an
    /// ``OperationTimeoutError`` if it has not ended (``OperationTrait/deadline(_:)``).
    public static func deadline(_ instant: QueueDeadline) -> Reason {
      Reason(kind: .deadline, instant: instant)
    }
    /// It is its queue's next operation to start and waits for permits of the queue's
    /// ``ActorQueue/ActorQueue/rateLimiters``, which its cost (``OperationTrait/cost(_:)``)
    /// conforms to at `instant`, the earliest its queue's limiters can grant it: holding no slot
    /// and no task, as the operations behind it (which list ``slot``). A better-ranked head of
    /// another queue that shares a limiter takes the permits first.
    public static func permits(until instant: QueueDeadline) -> Reason {
      Reason(kind: .permits, instant: instant)
    }

    /// Its condition `name` answered ``ConditionResult/notYet(retryAfter:)``: it holds no slot
    /// until `instant`, then competes for one again and its conditions are evaluated again
    /// (``OperationTrait/condition(_:)``).
    public static func condition(_ name: String, until instant: QueueDeadline) -> Reason {
      Reason(kind: .condition, instant: instant, conditionName: name)
    }
    /// Its queue is full (``ActorQueue/capacity``) and its submitter waits in
    /// ``ActorQueue/addOperationWaitingForCapacity(name:priority:traits:_:)->QueueOperation<Success>``: it is not in the queue
    /// yet, holds nothing, and is added, first come first served, once an operation of the queue
    /// ends (or the capacity rises). Listed after the queue's operations, in the order they are served.
    public static let capacity = Reason(kind: .capacity)
    /// `dependency op#9`, `slot`, `suspended`, `paused`, `capacity`, `retry at 1.5s (manual #3)`,
    /// `deadline at 30.0s (system)`, `key "db" held by op#12`, `permits until 0.2s (manual #1)`,
    /// `condition "online" until 5.0s (manual #1)`.
    public var description: String {
      switch kind {
      case .dependency: "dependency \(operation.map(String.init(describing:)) ?? "?")"
      case .retry: "retry at \(instant.map(String.init(describing:)) ?? "?")"
      case .deadline: "deadline at \(instant.map(String.init(describing:)) ?? "?")"
      case .permits: "permits until \(instant.map(String.init(describing:)) ?? "?")"
      case .condition:
        "condition \"\(conditionName ?? "?")\" until \(instant.map(String.init(describing:)) ?? "?")"
      case .key:
        "key \(key.map(String.init(describing:)) ?? "?") held by \(operation.map(String.init(describing:)) ?? "?")"
      default: kind.description
      }
    }

    /// The kind of a ``Reason``: a struct with static members, so new kinds never break a `switch`.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
      let rawValue: UInt8

      /// ``Reason/dependency(_:)``.
      public static let dependency = Kind(rawValue: 0)
      /// ``Reason/slot``.
      public static let slot = Kind(rawValue: 1)
      /// ``Reason/suspended``.
      public static let suspended = Kind(rawValue: 2)
      /// ``Reason/paused``.
      public static let paused = Kind(rawValue: 3)
      /// ``Reason/retry(at:)``.
      public static let retry = Kind(rawValue: 4)
      /// ``Reason/deadline(_:)``.
      public static let deadline = Kind(rawValue: 5)
      /// ``Reason/key(_:heldBy:)``.
      public static let key = Kind(rawValue: 6)
      /// ``Reason/permits(until:)``.
      public static let permits = Kind(rawValue: 7)
      /// ``Reason/condition(_:until:)``.
      public static let condition = Kind(rawValue: 8)
      /// ``Reason/capacity``.
      public static let capacity = Kind(rawValue: 9)

      /// `dependency`, `slot`, `suspended`, `paused`, `retry`, `deadline`, `key`, `permits`,
      /// `condition` or `capacity`.
      public var description: String {
        [
          "dependency", "slot", "suspended", "paused", "retry", "deadline", "key", "permits", "condition",
          "capacity",
        ][Int(rawValue)]
      }
    }
  }
}

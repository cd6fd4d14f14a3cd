/// Why something happened to an operation that its ``OperationState`` does not say: the payload
/// of ``QueueEvent/Kind/detail(id:name:detail:)``.
///
/// States stay few (an operation waiting for any reason is `.pending`); the reasons travel here.
/// A struct with static members, not an enum, so that new details never break a `switch`:
/// match one with `case .detail(_, _, .deadlineExpired):`, or a retry with
/// `case .detail(_, _, let detail) where detail.retryAttempt != nil:`.
public struct OperationDetail: Sendable, Hashable, CustomStringConvertible {
  let rawValue: UInt8
  /// For ``retryScheduled(attempt:at:)``: the attempt that failed and the instant of the next.
  private let attempt: Int
  private let instant: QueueDeadline?
  /// For ``conditionNotYet(_:until:)``: the condition's name.
  private let name: String?

  init(rawValue: UInt8, attempt: Int = 0, instant: QueueDeadline? = nil, name: String? = nil) {
    self.rawValue = rawValue
    self.attempt = attempt
    self.instant = instant
    self.name = name
  }

  /// The operation's deadline passed: it ends at once if it had not started, otherwise its task
  /// is cancelled and it ends when its body returns.
  public static let deadlineExpired = OperationDetail(rawValue: 0)
  /// Its body ran longer than its execution timeout: its task is cancelled, and it ends when the
  /// body returns.
  public static let timedOut = OperationDetail(rawValue: 1)

  /// Attempt `attempt` (counting from 1) failed and the operation's retry policy runs it again
  /// at `at`, on its queue's clock: it is `.pending` until then (`at` is now for a retry with no
  /// delay), and competes for a slot again after.
  public static func retryScheduled(attempt: Int, at: QueueDeadline) -> OperationDetail {
    OperationDetail(rawValue: 2, attempt: attempt, instant: at)
  }

  /// For ``retryScheduled(attempt:at:)``, the attempt that failed; `nil` for other details.
  public var retryAttempt: Int? { rawValue == 2 ? attempt : nil }

  /// For ``retryScheduled(attempt:at:)``, the instant the next attempt may start.
  public var retryAt: QueueDeadline? { rawValue == 2 ? instant : nil }

  /// Its condition named `name` answered ``ConditionResult/notYet(retryAfter:)``: it is `.pending`,
  /// holding no slot, and competes for a slot again at `until`, on its queue's clock, when its
  /// conditions are evaluated again.
  public static func conditionNotYet(_ name: String, until: QueueDeadline) -> OperationDetail {
    OperationDetail(rawValue: 3, instant: until, name: name)
  }

  /// For ``conditionNotYet(_:until:)``, the condition's name; `nil` for other details.
  public var conditionName: String? { rawValue == 3 ? name : nil }

  /// For ``conditionNotYet(_:until:)``, the instant it competes for a slot again.
  public var conditionUntil: QueueDeadline? { rawValue == 3 ? instant : nil }

  /// `deadline expired`, `timed out`, `retry 2 at 1.5s (manual #3)` (after attempt 1 failed),
  /// `condition "online" not yet, again at 5.0s (manual #3)`.
  public var description: String {
    switch rawValue {
    case 0: "deadline expired"
    case 1: "timed out"
    case 3: "condition \"\(name ?? "?")\" not yet, again at \(instant.map(String.init(describing:)) ?? "now")"
    default: "retry \(attempt + 1) at \(instant.map(String.init(describing:)) ?? "now")"
    }
  }
}

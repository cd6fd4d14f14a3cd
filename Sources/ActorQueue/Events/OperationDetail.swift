/// Why something happened to an operation that its ``OperationState`` does not say: the payload
/// of ``QueueEvent/Kind/detail(id:name:detail:)``.
///
/// States stay few (an operation waiting for any reason is `.pending`); the reasons travel here.
/// A struct with static members, not an enum, so that new details never break a `switch`:
/// match one with `case .detail(_, _, .deadlineExpired):`.
public struct OperationDetail: Sendable, Hashable, CustomStringConvertible {
  let rawValue: UInt8

  /// The operation's deadline passed: it ends at once if it had not started, otherwise its task
  /// is cancelled and it ends when its body returns.
  public static let deadlineExpired = OperationDetail(rawValue: 0)
  /// Its body ran longer than its execution timeout: its task is cancelled, and it ends when the
  /// body returns.
  public static let timedOut = OperationDetail(rawValue: 1)

  /// `deadline expired`, `timed out`.
  public var description: String {
    switch rawValue {
    case 0: "deadline expired"
    default: "timed out"
    }
  }
}

/// The relative order in which a queue starts its ready operations.
///
/// The raw values are `Operation.QueuePriority`'s, so a migrated value keeps its meaning.
/// Priority orders only operations of the same queue that are ready; it never overrides a
/// dependency, and it is not a `TaskPriority` (see ``ActorQueue/taskPriority`` for that).
/// Unlike Foundation, changing ``AnyQueueOperation/queuePriority`` of a waiting operation
/// re-sorts it at once.
public enum OperationPriority: Int, Sendable, Comparable, CaseIterable {
  /// Started after every other priority.
  case veryLow = -8
  /// Started after `normal`, `high` and `veryHigh`.
  case low = -4
  /// The default.
  case normal = 0
  /// Started before `normal`, `low` and `veryLow`.
  case high = 4
  /// Started before every other priority.
  case veryHigh = 8

  /// Orders priorities by their raw value: `veryLow < low < normal < high < veryHigh`.
  public static func < (lhs: OperationPriority, rhs: OperationPriority) -> Bool {
    lhs.rawValue < rhs.rawValue
  }

  /// 0 for `veryLow` … 4 for `veryHigh`: an index into per-priority storage.
  @inline(__always)
  var rank: Int { (rawValue + 8) >> 2 }
}

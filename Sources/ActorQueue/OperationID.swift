import Synchronization

/// A process-wide unique identifier of an operation, stable for its whole life.
///
/// Use it to correlate ``QueueEvent``s with the operation they describe.
public struct OperationID: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The raw number; identifiers are handed out in increasing order of creation.
  public let rawValue: UInt64

  private static let counter = Atomic<UInt64>(0)

  init() {
    rawValue = Self.counter.add(1, ordering: .relaxed).newValue
  }

  /// The identifier with this raw value (one handed out before).
  init(rawValue: UInt64) {
    self.rawValue = rawValue
  }

  /// Orders identifiers by creation.
  public static func < (lhs: OperationID, rhs: OperationID) -> Bool {
    lhs.rawValue < rhs.rawValue
  }

  /// `op#N`.
  public var description: String { "op#\(rawValue)" }
}

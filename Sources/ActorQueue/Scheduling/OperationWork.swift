/// An operation's outcome, type-erased: the body's value, or the error it ended with.
typealias Outcome = Result<any Sendable, any Error>

/// An outcome as one reference: created outside the lock (by the body's typed wrapper, once the
/// body returned), moved and released as one pointer. A body that returned `()` needs no box
/// (a null reference: nothing allocated, and nothing to count, since retaining or releasing it
/// writes no memory); every operation cancelled before its body returned shares one box.
/// (One box shared by every `()` outcome would make every worker write its reference count, a
/// cache line moving between the cores for each operation.)
struct OutcomeBox: Sendable {
  /// `nil`: the body returned `()`.
  private let box: Box?

  private final class Box: Sendable {
    let value: Outcome
    init(_ value: Outcome) { self.value = value }
  }

  init(_ value: Outcome) {
    box = Box(value)
  }

  private init(void: ()) {
    box = nil
  }

  var value: Outcome { box?.value ?? .success(()) }

  /// Whether this is a `()` outcome, which holds no box.
  var holdsNoBox: Bool { box == nil }

  /// Whether both are the same outcome: the same box, or both `()` (for tests).
  func isSame(as other: OutcomeBox) -> Bool { box === other.box }

  /// The outcome of every operation cancelled before its body returned: one instance, so
  /// cancelling 100,000 waiting operations allocates nothing per operation.
  static let cancelled = OutcomeBox(.failure(CancellationError()))

  /// The outcome of a body that returned `()`: no box.
  static var void: OutcomeBox { OutcomeBox(void: ()) }

  /// The outcome of a body that returned `value`.
  @inline(__always)
  static func success<Success: Sendable>(_ value: Success) -> OutcomeBox {
    if Success.self == Void.self { return void }
    return OutcomeBox(.success(value))
  }
}

/// The body of an operation, type-erased so the worker's hot path runs no unspecialised
/// generic code.
enum OperationBody: Sendable {
  /// A body that returns `()` and cannot throw, kept as it was given: no wrapper closure to
  /// allocate, no reabstraction thunks between the worker and the body, and nothing to box when
  /// it returns.
  case void(@Sendable () async -> Void)
  /// Any other body, wrapped to return its value already boxed as the outcome (see
  /// ``OperationWork/typed(_:)``).
  case boxing(@Sendable () async throws -> OutcomeBox)
}

/// What an operation runs when it starts.
enum OperationWork: Sendable {
  /// A body returning `Success`, run by a worker task of its queue; its value is boxed by the
  /// typed wrapper, where `Success` is known (a body returning `()` shares one box).
  @inline(__always)
  static func typed<Success: Sendable>(_ body: @escaping @Sendable () async throws -> Success)
    -> OperationWork
  {
    .body(.boxing { OutcomeBox.success(try await body()) })
  }

  /// A body returning `()` that cannot throw, run by a worker task of its queue as it is.
  @inline(__always)
  static func void(_ body: @escaping @Sendable () async -> Void) -> OperationWork {
    .body(.void(body))
  }

  /// A body, run by a worker task of its queue.
  case body(OperationBody)
  /// Work that runs elsewhere (a thread, a callback API) and reports its end.
  case external(any ExternalWork)
  /// None of its own: a caller's handle to coalesced work (``OperationRecord/leader``), which it
  /// follows.
  case follower
}

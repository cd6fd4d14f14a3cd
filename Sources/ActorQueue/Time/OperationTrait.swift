/// An option that configures one operation: a deadline, a timeout, a retry policy, exclusivity
/// keys, a cost in rate-limit permits, a readiness condition, tags (more kinds join this type later without new overloads). Passed as `traits:` to ``ActorQueue/addOperation(name:priority:traits:_:)->QueueOperation<Success>``
/// and ``QueueOperation/init(name:priority:traits:_:)``.
///
/// ```swift
/// let report = queue.addOperation(traits: [.deadline(in: .seconds(30)), .timeout(.seconds(5))]) {
///   try await render()
/// }
/// ```
///
/// An operation given no traits keeps the fastest paths and pays nothing for them. With several
/// deadlines the earliest applies; with several timeouts the shortest.
public struct OperationTrait: Sendable, CustomStringConvertible {
  /// Durations are kept as given (for `description`) and in whole nanoseconds, converted once
  /// here rather than for each operation that uses the trait.
  enum Kind: Sendable {
    case deadline(QueueDeadline)
    case deadlineIn(Duration, nanoseconds: Int64)
    case timeout(Duration, nanoseconds: Int64)
    case retry(RetryPolicy)
    case exclusive(ExclusiveRequest)
    case cost(Int64)
    /// Boxed: an existential inline would make every trait 40 bytes and its copies outlined.
    case condition(ConditionBox)
    /// The tags as given (for `description`), and their interned numbers without repeats,
    /// worked out once here rather than for each operation that uses the trait.
    case tags([OperationTag], ids: [UInt64])
    case progressWeight(Int)
  }

  let kind: Kind

  /// Ends the operation with ``OperationTimeoutError/Kind-swift.struct/deadline`` if it has not
  /// ended by `deadline`, an instant of its queue's clock (a deadline of another clock is refused
  /// when the operation is added, with a precondition failure).
  ///
  /// Not started by then (waiting for a dependency or a slot, held by `pause()`): it ends
  /// `.failed` at once and never runs, holding no slot. Executing: its task is cancelled, and it
  /// ends when its body returns: `.failed` with the timeout error if the body throws (its own
  /// error stays in ``AnyQueueOperation/thrownError``), `.finished` if it returns a value anyway.
  /// Whichever comes first, `cancel()` or the deadline, decides: cancelled first, it ends
  /// `.cancelled`. Not passed to dependents.
  public static func deadline(_ deadline: QueueDeadline) -> OperationTrait {
    OperationTrait(kind: .deadline(deadline))
  }

  /// ``deadline(_:)`` at `duration` after the operation is added to its queue, on the queue's
  /// clock. A duration of zero or less ends it as soon as it is added; one too long to represent
  /// in 64-bit nanoseconds (about 292 years) is a deadline that never comes.
  public static func deadline(in duration: Duration) -> OperationTrait {
    OperationTrait(kind: .deadlineIn(duration, nanoseconds: duration.wholeNanoseconds))
  }

  /// Ends the operation with ``OperationTimeoutError/Kind-swift.struct/executionTimeout`` if its
  /// body runs longer than `duration`, counted from the body's first line (time spent waiting
  /// for a dependency, a slot, its conditions or its task to be scheduled does not count). What
  /// happens then is what ``deadline(_:)`` does to an executing operation. A duration too long to
  /// represent in 64-bit nanoseconds (about 292 years) never passes. `duration` must be positive
  /// (below, it stops the program with a message, in every build configuration): to stop an
  /// operation now, call `cancel()`.
  public static func timeout(_ duration: Duration) -> OperationTrait {
    guard duration > .zero else {
      fatalError(
        "ActorQueue: .timeout(\(duration)) must be positive; to stop an operation now, call cancel(), "
          + "and for an instant, use .deadline(_:)")
    }
    return OperationTrait(kind: .timeout(duration, nanoseconds: max(1, duration.wholeNanoseconds)))
  }

  /// Runs the operation again after a failed attempt, as `policy` says: see ``RetryPolicy``.
  /// Between attempts the operation is ``OperationState/pending`` and holds no slot and no task;
  /// each attempt competes for a slot with the operation's original submission order. Given
  /// twice, the last policy applies. An operation of legacy work (`Operation` through the
  /// adapter, or other externally completed work) cannot run twice: a retry is refused with a
  /// precondition message. For coalesced work, the call that creates the shared work gives its
  /// policy; the policies of later callers do not apply.
  public static func retry(_ policy: RetryPolicy) -> OperationTrait {
    OperationTrait(kind: .retry(policy))
  }

  /// How much this operation counts in its group's progress (``AnyQueueOperation/progress`` of an
  /// ``OperationGroup``'s operation): its fraction, times `weight`, over the sum of its siblings'
  /// weights. 1 when not given; 0 leaves it out. Outside a group it changes nothing. A negative
  /// weight stops the program with a message. Given twice, the last applies.
  ///
  /// **Foundation:** `Progress.addChild(_:withPendingUnitCount:)`.
  public static func progressWeight(_ weight: Int) -> OperationTrait {
    if weight < 0 {
      fatalError(
        "ActorQueue: .progressWeight(\(weight)) must be 0 or more; 0 leaves the operation out of its group's progress"
      )
    }
    return OperationTrait(kind: .progressWeight(weight))
  }

  /// `deadline 12.5s (system)`, `deadline in 2.0 seconds`, `timeout 0.5 seconds`.
  public var description: String {
    switch kind {
    case .deadline(let deadline): "deadline \(deadline)"
    case .deadlineIn(let duration, _): "deadline in \(duration)"
    case .timeout(let duration, _): "timeout \(duration)"
    case .retry(let policy): "retry \(policy)"
    case .exclusive(let request):
      "exclusive \(request.keys.map(\.description).joined(separator: ", "))"
        + (request.domain.map { " in \($0)" } ?? "")
    case .cost(let permits): "cost \(permits)"
    case .condition(let box): "condition \"\(box.condition.name)\""
    case .tags(let tags, _): "tags \(tags.map(\.description).joined(separator: ", "))"
    case .progressWeight(let weight): "progress weight \(weight)"
    }
  }
}

/// The error an operation ends with when its deadline passes or its body runs past its timeout
/// (`.failed`, not `.cancelled`: a `catch is CancellationError` that ignores cancellations does
/// not swallow timeouts).
///
/// Dependents that require the operation's success end with a ``DependencyFailedError`` that
/// carries it.
public struct OperationTimeoutError: Error, Sendable, Hashable, CustomStringConvertible {
  /// Which limit passed. A struct, not an enum, so that new kinds never break a `switch`.
  public struct Kind: Sendable, Hashable, CustomStringConvertible {
    let rawValue: UInt8

    /// The operation's ``OperationTrait/deadline(_:)`` passed.
    public static let deadline = Kind(rawValue: 0)
    /// Its body ran longer than its ``OperationTrait/timeout(_:)``.
    public static let executionTimeout = Kind(rawValue: 1)

    /// `deadline` or `executionTimeout`.
    public var description: String { rawValue == 0 ? "deadline" : "executionTimeout" }
  }

  /// Which limit passed.
  public let kind: Kind
  /// The operation that timed out.
  public let operationID: OperationID
  /// Its name, if it has one.
  public let operationName: String?
  /// Whether its body had started when the limit passed (otherwise it never ran).
  public let hadStarted: Bool

  /// `deadline passed for fetch (op#12) before it started`.
  public var description: String {
    let what = kind == .deadline ? "deadline passed" : "execution timeout passed"
    let name = operationName.map { "\($0) (\(operationID))" } ?? operationID.description
    return "\(what) for \(name) \(hadStarted ? "while it executed" : "before it started")"
  }
}

/// A check that must pass before an operation's body runs: PSOperations' `OperationCondition`,
/// ProcedureKit's `Condition`. Given to an operation with ``OperationTrait/condition(_:)``.
///
/// ```swift
/// struct SignedIn: OperationCondition {
///   let session: Session
///   func evaluate(for operation: AnyQueueOperation) async -> ConditionResult {
///     await session.isSignedIn ? .satisfied : .failed(SignInRequired())
///   }
/// }
/// queue.addOperation(traits: [.condition(SignedIn(session: session))]) { try await sync() }
/// ```
///
/// An operation's conditions are evaluated by its worker **after** it was given its slot (and
/// its exclusivity keys and rate-limit permits), **before** its body, in the order given; the
/// first answer that is not ``ConditionResult/satisfied`` decides. So nothing can start in
/// between the check and the body (the check-then-start races of ProcedureKit's issue 760 and
/// PR 681 cannot happen), and the operation is ``OperationState/executing`` while they run: a
/// slow condition holds a slot. With ``OperationTrait/retry(_:)``, they are evaluated again
/// before each attempt.
public protocol OperationCondition: Sendable {
  /// Names the condition in ``ConditionFailedError``, events and ``ActorQueue/waitReport()``.
  /// Default: the type's name.
  var name: String { get }

  /// An operation that must end before `operation` is evaluated (PSOperations'
  /// `dependencyForOperation`), or `nil` (the default). Asked once, when `operation` is created
  /// with its traits, outside the scheduler's lock. It is added to `operation`'s queue with it,
  /// unless it is in a queue already, and `operation` waits for it to end, however it ends.
  func dependency(for operation: AnyQueueOperation) -> AnyQueueOperation?

  /// Whether `operation`'s body may run now. Runs in `operation`'s worker task, which is
  /// cancelled if `operation` is (`Task.isCancelled` tells); whatever it answers then, the
  /// operation ends `.cancelled` and its body never runs. ``ActorQueue/ActorQueue/current`` is
  /// its queue; ``ActorQueue/ActorQueue/checkpoint()`` pauses nothing here (an operation pauses
  /// only in its body).
  func evaluate(for operation: AnyQueueOperation) async -> ConditionResult
}

extension OperationCondition {
  /// The type's name.
  public var name: String { String(describing: Self.self) }

  /// No dependency.
  public func dependency(for operation: AnyQueueOperation) -> AnyQueueOperation? { nil }
}

/// A condition's answer. A struct with static members, not an enum, so that new answers never
/// break a `switch`.
public struct ConditionResult: Sendable, CustomStringConvertible {
  enum Kind: Sendable {
    case satisfied
    case skip
    case failed(any Error)
    /// Nanoseconds until the next evaluation.
    case notYet(Duration, nanoseconds: Int64)
  }

  let kind: Kind

  /// The next condition is evaluated; after the last, the body runs.
  public static let satisfied = ConditionResult(kind: .satisfied)

  /// The operation ends ``OperationState/cancelled`` without running its body, with
  /// ``AnyQueueOperation/isCancelled`` true (ProcedureKit's `false`): its dependents see a
  /// cancellation.
  public static let skip = ConditionResult(kind: .skip)

  /// The operation ends ``OperationState/failed`` with a ``ConditionFailedError`` that names the
  /// condition and carries `error`, without running its body; dependents that require its
  /// success fail with it. A retry policy does not retry it: the body never ran.
  public static func failed(_ error: any Error) -> ConditionResult {
    ConditionResult(kind: .failed(error))
  }

  /// Ask again after `delay`, on the queue's clock: the operation returns to
  /// ``OperationState/pending`` holding no slot, no key and no task, then competes for a slot
  /// again with its original submission order, and its conditions are all evaluated again.
  /// Meanwhile `cancel()` ends it at once and a deadline still applies. A `delay` of zero or less
  /// asks again as soon as it gets a slot.
  public static func notYet(retryAfter delay: Duration) -> ConditionResult {
    ConditionResult(kind: .notYet(delay, nanoseconds: max(0, delay.wholeNanoseconds)))
  }

  /// `satisfied`, `skip`, `failed(…)`, `not yet, again after 1.0 seconds`.
  public var description: String {
    switch kind {
    case .satisfied: "satisfied"
    case .skip: "skip"
    case .failed(let error): "failed(\(error))"
    case .notYet(let delay, _): "not yet, again after \(delay)"
    }
  }
}

/// The error of an operation whose condition answered ``ConditionResult/failed(_:)``: its body
/// never ran.
public struct ConditionFailedError: Error, Sendable, CustomStringConvertible {
  /// The condition's ``OperationCondition/name``.
  public let conditionName: String
  /// The error the condition gave.
  public let underlyingError: any Error

  /// Public so that tests and adapters can build the error they expect.
  public init(conditionName: String, underlyingError: any Error) {
    self.conditionName = conditionName
    self.underlyingError = underlyingError
  }

  /// `condition "SignedIn" failed: SignInRequired()`.
  public var description: String { "condition \"\(conditionName)\" failed: \(underlyingError)" }
}

extension OperationTrait {
  /// Evaluates `condition` before the body runs (see ``OperationCondition``). Several conditions
  /// are evaluated in the order given. Refused, with a precondition message, on legacy work
  /// (an `Operation` through the adapter) and on coalesced work.
  ///
  /// Cost: an operation with conditions is created and added in two steps of the scheduler's
  /// lock, with ``OperationCondition/dependency(for:)`` asked in between, and its start takes
  /// the lock once more, after the conditions answered.
  public static func condition(_ condition: some OperationCondition) -> OperationTrait {
    OperationTrait(kind: .condition(ConditionBox(condition)))
  }

  /// A condition written as a closure: `.condition("online") { _ in await network.isUp ? .satisfied : .notYet(retryAfter: .seconds(5)) }`.
  public static func condition(
    _ name: String, _ evaluate: @escaping @Sendable (AnyQueueOperation) async -> ConditionResult
  ) -> OperationTrait {
    OperationTrait(kind: .condition(ConditionBox(ClosureCondition(name: name, body: evaluate))))
  }
}

/// A trait's condition, as one reference.
final class ConditionBox: Sendable {
  let condition: any OperationCondition

  init(_ condition: any OperationCondition) {
    self.condition = condition
  }
}

/// The condition of ``OperationTrait/condition(_:_:)``.
struct ClosureCondition: OperationCondition {
  let name: String
  let body: @Sendable (AnyQueueOperation) async -> ConditionResult

  func evaluate(for operation: AnyQueueOperation) async -> ConditionResult {
    await body(operation)
  }
}

/// What a worker's evaluation of an operation's conditions answered: `nil` when every one was
/// satisfied.
struct ConditionAnswer: Sendable {
  /// The deciding condition's name.
  let name: String
  let result: ConditionResult

  /// Evaluates `conditions` in order for `operation`; the first answer that is not satisfied
  /// decides. Runs the user's code: never under the lock.
  static func evaluate(_ conditions: [any OperationCondition], for operation: AnyQueueOperation) async
    -> ConditionAnswer?
  {
    for condition in conditions {
      let result = await condition.evaluate(for: operation)
      if case .satisfied = result.kind { continue }
      return ConditionAnswer(name: condition.name, result: result)
    }
    return nil
  }
}

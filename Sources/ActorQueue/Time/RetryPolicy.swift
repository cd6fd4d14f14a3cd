/// When and how often an operation that failed runs again: ``OperationTrait/retry(_:)``.
///
/// A retried operation keeps its identity: the same handle, the same ``OperationID``, its
/// place in its queue's submission order. Between attempts it is ``OperationState/pending`` and
/// holds no slot and no task, so a long backoff never keeps other work waiting. Its final
/// outcome is its last attempt's: the last error as the body threw it (`catch URLError` keeps
/// working), or the value of the attempt that succeeded.
///
/// Cancellation always stops a retry and is never retried: ``AnyQueueOperation/cancel()``,
/// the queue's `cancelAllOperations()`, and a body that throws `CancellationError` end the
/// operation ``OperationState/cancelled`` without consulting the policy. A deadline stops it
/// too: a backoff that would end after the operation's deadline is not waited for (the
/// operation fails with its last error), and a deadline that passes during a backoff fails it
/// with ``OperationTimeoutError``.
///
/// The policy's decision (its predicate, its custom closure, its jitter's generator) runs on the
/// worker that ran the failed attempt, never under the scheduler's lock. Cost: one more pass
/// through the scheduler's lock per failed attempt that is retried; an operation without a
/// retry pays nothing.
///
/// **Foundation:** `Operation` cannot run twice, so an `OperationQueue` user makes a new
/// operation per attempt (ProcedureKit's `RetryProcedure`) or loops inside one, holding its
/// slot through the delay. Here the same operation runs again, as it was submitted.
public struct RetryPolicy: Sendable, CustomStringConvertible {
  final class Storage: Sendable {
    let maxAttempts: Int
    let backoff: Backoff
    let jitter: Jitter
    let retryIf: (@Sendable (any Error) -> Bool)?
    let decide: (@Sendable (RetryContext) -> RetryDecision)?

    init(
      maxAttempts: Int, backoff: Backoff, jitter: Jitter, retryIf: (@Sendable (any Error) -> Bool)?,
      decide: (@Sendable (RetryContext) -> RetryDecision)?
    ) {
      self.maxAttempts = maxAttempts
      self.backoff = backoff
      self.jitter = jitter
      self.retryIf = retryIf
      self.decide = decide
    }
  }

  /// One reference: a policy made once and given to many operations is shared, not copied.
  let storage: Storage

  /// At most `maxAttempts` attempts in all (the first run counts), waiting `backoff` (with
  /// `jitter`) between them, while `retryIf` (if given) says the error is worth another attempt.
  ///
  /// The last attempt's error ends the operation without consulting `retryIf`. `maxAttempts`
  /// must be at least 1 (below, it stops the program with a message, in every build
  /// configuration); 1 never retries. Without `retryIf` and a generator of the caller's, the next
  /// attempt is decided in the same step that ends the failed one (nothing of the caller's runs,
  /// so no second pass through the lock).
  public static func attempts(
    _ maxAttempts: Int, backoff: Backoff = .exponential(), jitter: Jitter = .full,
    retryIf: (@Sendable (any Error) -> Bool)? = nil
  ) -> RetryPolicy {
    checkAttempts(maxAttempts, in: ".attempts(\(maxAttempts))")
    return RetryPolicy(
      storage: Storage(
        maxAttempts: maxAttempts, backoff: backoff, jitter: jitter, retryIf: retryIf, decide: nil))
  }

  /// At most `maxAttempts` attempts in all; after each failed attempt but the last, `decide`
  /// says whether to run again and after how long (no jitter is added to what it returns).
  /// `maxAttempts` must be at least 1, as for ``attempts(_:backoff:jitter:retryIf:)``.
  public static func custom(
    maxAttempts: Int, _ decide: @escaping @Sendable (RetryContext) -> RetryDecision
  ) -> RetryPolicy {
    checkAttempts(maxAttempts, in: ".custom(maxAttempts: \(maxAttempts))")
    return RetryPolicy(
      storage: Storage(
        maxAttempts: maxAttempts, backoff: .constant(.zero), jitter: .none, retryIf: nil, decide: decide))
  }

  private static func checkAttempts(_ maxAttempts: Int, in call: String) {
    guard maxAttempts >= 1 else {
      fatalError(
        "ActorQueue: RetryPolicy\(call): the number of attempts counts the first run, so it must be at least 1; "
          + "to run an operation once, leave out .retry")
    }
  }

  /// The most attempts an operation makes, its first run included.
  public var maxAttempts: Int { storage.maxAttempts }

  /// `3 attempts, exponential 100 ms to 30 s, full jitter`, or `custom, 5 attempts`.
  public var description: String {
    if storage.decide != nil { return "custom, \(storage.maxAttempts) attempts" }
    return "\(storage.maxAttempts) attempts, \(storage.backoff), \(storage.jitter)"
  }

  /// Whether a custom policy keeps its earlier errors for ``RetryContext/previousErrors``, and
  /// the first start for ``RetryContext/elapsed``.
  var keepsErrors: Bool { storage.decide != nil }

  /// Whether deciding runs nothing of the caller's (no predicate, no custom decision, no
  /// generator): then the scheduler decides in the step that ends the attempt.
  var decidesAlone: Bool {
    storage.decide == nil && storage.retryIf == nil && storage.jitter.generator == nil
  }

  /// The delay after failed attempt `attempt` of a policy that ``decidesAlone``, drawing any
  /// jitter from `random` (the scheduler's own generator).
  func delay(afterAttempt attempt: Int, previousDelay: Int64, random: inout some RandomNumberGenerator)
    -> Int64
  {
    storage.backoff.delay(
      afterAttempt: attempt, previous: previousDelay, jitter: storage.jitter, random: &random)
  }

  /// The delay before the next attempt, in nanoseconds, or `nil` to stop: the user's code
  /// (predicate, custom decision, generator), run outside the scheduler's lock.
  func delay(after context: RetryContext, previousDelay: Int64) -> Int64? {
    if let decide = storage.decide {
      return decide(context).delay.map(\.wholeNanoseconds)
    }
    if let retryIf = storage.retryIf, !retryIf(context.error) { return nil }
    var random = SystemRandomNumberGenerator()
    return storage.backoff.delay(
      afterAttempt: context.attempt, previous: previousDelay, jitter: storage.jitter, random: &random)
  }
}

/// How the delay between attempts grows. Every computation saturates at the maximum in 64-bit
/// nanoseconds: 10,000 failures never overflow or trap (SwiftQueue's uncapped `pow(2, n)` is
/// the failure this rules out).
public struct Backoff: Sendable, CustomStringConvertible {
  enum Kind: UInt8, Sendable {
    case constant, linear, exponential, decorrelated
  }

  let kind: Kind
  /// Nanoseconds: the first delay (the base, for decorrelated).
  let initial: Int64
  /// Nanoseconds added per attempt (linear), or the factor (exponential).
  let step: Int64
  let maximum: Int64

  /// The same delay after every attempt. A `delay` below zero stops the program with a message,
  /// in every build configuration (use `.zero` to retry at once); one too long to represent in
  /// 64-bit nanoseconds (about 292 years) is a wait that never ends, until the operation is
  /// cancelled or its deadline passes.
  public static func constant(_ delay: Duration) -> Backoff {
    let nanoseconds = checked(delay, "constant(\(delay))")
    return Backoff(kind: .constant, initial: nanoseconds, step: 0, maximum: nanoseconds)
  }

  /// `initial`, then `increment` more after each attempt, never above `maximum`. A duration
  /// below zero, or a `maximum` below `initial`, stops the program with a message, in every
  /// build configuration.
  public static func linear(initial: Duration, increment: Duration, maximum: Duration) -> Backoff {
    let call = "linear(initial: \(initial), increment: \(increment), maximum: \(maximum))"
    let (low, high) = checkedRange(initial, maximum, call)
    return Backoff(kind: .linear, initial: low, step: checked(increment, call), maximum: high)
  }

  /// `initial`, multiplied by `factor` after each attempt, never above `maximum`. A `factor`
  /// below 1, a duration below zero, or a `maximum` below `initial` stops the program with a
  /// message, in every build configuration.
  public static func exponential(
    initial: Duration = .milliseconds(100), factor: Int = 2, maximum: Duration = .seconds(30)
  ) -> Backoff {
    let call = "exponential(initial: \(initial), factor: \(factor), maximum: \(maximum))"
    guard factor >= 1 else {
      fatalError("ActorQueue: Backoff.\(call): the factor must be at least 1 (1 keeps the delay constant)")
    }
    let (low, high) = checkedRange(initial, maximum, call)
    return Backoff(kind: .exponential, initial: low, step: Int64(factor), maximum: high)
  }

  /// AWS's "decorrelated jitter": each delay is drawn between `base` and three times the
  /// previous one, never above `maximum`. It is random by itself, so the policy's jitter is not
  /// added; the jitter's generator, if it has one, draws it (seeded tests stay reproducible). A
  /// duration below zero, or a `maximum` below `base`, stops the program with a message, in
  /// every build configuration.
  public static func decorrelated(base: Duration, maximum: Duration) -> Backoff {
    let (low, high) = checkedRange(base, maximum, "decorrelated(base: \(base), maximum: \(maximum))")
    return Backoff(kind: .decorrelated, initial: low, step: 0, maximum: high)
  }

  /// `exponential 0.1 seconds x2 to 30.0 seconds`.
  public var description: String {
    switch kind {
    case .constant: "constant \(Duration.nanoseconds(initial))"
    case .linear:
      "linear \(Duration.nanoseconds(initial)) +\(Duration.nanoseconds(step)) to \(Duration.nanoseconds(maximum))"
    case .exponential:
      "exponential \(Duration.nanoseconds(initial)) x\(step) to \(Duration.nanoseconds(maximum))"
    case .decorrelated: "decorrelated \(Duration.nanoseconds(initial)) to \(Duration.nanoseconds(maximum))"
    }
  }

  /// The delay after failed attempt `attempt` (1-based), before jitter; `previous` is the last
  /// delay waited (decorrelated draws from it).
  func delay(afterAttempt attempt: Int, previous: Int64, jitter: Jitter) -> Int64 {
    var random = SystemRandomNumberGenerator()
    return delay(afterAttempt: attempt, previous: previous, jitter: jitter, random: &random)
  }

  /// ``delay(afterAttempt:previous:jitter:)``, drawing from `random` unless the jitter has a
  /// generator of its own.
  func delay(
    afterAttempt attempt: Int, previous: Int64, jitter: Jitter, random: inout some RandomNumberGenerator
  ) -> Int64 {
    switch kind {
    case .constant:
      return jitter.apply(to: initial, random: &random)
    case .linear:
      let (added, overflow) = step.multipliedReportingOverflow(by: Int64(clamping: attempt - 1))
      return jitter.apply(
        to: overflow ? maximum : min(maximum, SaturatingTime.adding(initial, added)), random: &random)
    case .exponential where step == 1:
      return jitter.apply(to: initial, random: &random)
    case .exponential:
      // At most 63 doublings reach any maximum: the loop ends early, whatever the attempt.
      var delay = initial
      var remaining = attempt - 1
      while remaining > 0, delay < maximum {
        let (product, overflow) = delay.multipliedReportingOverflow(by: step)
        delay = overflow ? maximum : product
        remaining -= 1
      }
      return jitter.apply(to: min(delay, maximum), random: &random)
    case .decorrelated:
      let upper = min(
        maximum, max(initial, SaturatingTime.adding(previous, SaturatingTime.adding(previous, previous))))
      return jitter.draw(in: initial...upper, random: &random)
    }
  }

  private static func checked(_ duration: Duration, _ call: String) -> Int64 {
    guard duration >= .zero else {
      fatalError("ActorQueue: Backoff.\(call): a delay cannot be negative; use .zero to retry at once")
    }
    return duration.wholeNanoseconds
  }

  private static func checkedRange(_ initial: Duration, _ maximum: Duration, _ call: String) -> (Int64, Int64)
  {
    let low = checked(initial, call)
    let high = checked(maximum, call)
    guard high >= low else {
      fatalError(
        "ActorQueue: Backoff.\(call): the maximum is below the first delay; raise the maximum or lower the first delay"
      )
    }
    return (low, high)
  }
}

/// Randomness added to each backoff delay, so that many clients that failed together do not
/// retry together.
public struct Jitter: Sendable, CustomStringConvertible {
  enum Kind: UInt8, Sendable {
    case none, full, equal
  }

  let kind: Kind
  let generator: Generator?

  /// A generator the caller gave, shared by every operation of the policy: behind a lock, since
  /// drawing changes its state (the lock is held for one draw, and runs only the generator).
  final class Generator: Sendable {
    private let state: LockedValue<any RandomNumberGenerator & Sendable>

    init(_ generator: some RandomNumberGenerator & Sendable) {
      state = LockedValue(generator)
    }

    func draw(in range: ClosedRange<Int64>) -> Int64 {
      state.withLock { generator in Int64.random(in: range, using: &generator) }
    }
  }

  /// The delay as computed.
  public static let none = Jitter(kind: .none, generator: nil)
  /// A delay drawn evenly between zero and the computed one (AWS's "full jitter"): the widest
  /// spread, the default.
  public static let full = Jitter(kind: .full, generator: nil)
  /// Half the computed delay, plus a draw between zero and the other half: never less than half.
  public static let equal = Jitter(kind: .equal, generator: nil)

  /// ``full``, drawn from `generator` (a seeded generator makes the delays reproducible).
  public static func full(using generator: some RandomNumberGenerator & Sendable) -> Jitter {
    Jitter(kind: .full, generator: Generator(generator))
  }

  /// ``equal``, drawn from `generator`.
  public static func equal(using generator: some RandomNumberGenerator & Sendable) -> Jitter {
    Jitter(kind: .equal, generator: Generator(generator))
  }

  /// `full jitter`.
  public var description: String {
    switch kind {
    case .none: "no jitter"
    case .full: "full jitter"
    case .equal: "equal jitter"
    }
  }

  func apply(to delay: Int64, random: inout some RandomNumberGenerator) -> Int64 {
    switch kind {
    case .none: delay
    case .full: draw(in: 0...delay, random: &random)
    case .equal: delay / 2 + draw(in: 0...(delay - delay / 2), random: &random)
    }
  }

  /// A closed range: a zero-width one (`0...0`) is valid and draws its one value. From the
  /// jitter's own generator if it has one, else from `random`.
  func draw(in range: ClosedRange<Int64>, random: inout some RandomNumberGenerator) -> Int64 {
    if range.lowerBound == range.upperBound { return range.lowerBound }
    if let generator { return generator.draw(in: range) }
    return Int64.random(in: range, using: &random)
  }
}

/// What a custom retry policy decides from: the attempt that just failed.
public struct RetryContext: Sendable {
  /// The attempt that failed, counting from 1.
  public let attempt: Int
  /// Its error (an ``OperationTimeoutError`` if its execution timeout passed).
  public let error: any Error
  /// The errors of the attempts before it, oldest first, at most the last 8.
  public let previousErrors: [any Error]
  /// Time since the first attempt started, on the queue's clock.
  public let elapsed: Duration
  /// Time left until the operation's deadline, if it has one.
  public let timeUntilDeadline: Duration?
}

/// A custom retry policy's answer.
public struct RetryDecision: Sendable, Hashable, CustomStringConvertible {
  let delay: Duration?

  /// Run the operation again once `delay` has passed on its queue's clock (`.zero`: as soon as
  /// it wins a slot again, by its original submission order). A `delay` below zero counts as
  /// `.zero`, as ``ConditionResult/notYet(retryAfter:)`` does: a policy's arithmetic that goes
  /// negative retries at once rather than stopping the program from a worker. One too long to
  /// represent in 64-bit nanoseconds (about 292 years) is a wait that never ends, until the
  /// operation is cancelled or its deadline passes.
  public static func retry(after delay: Duration) -> RetryDecision {
    RetryDecision(delay: max(delay, .zero))
  }

  /// End the operation with the error of the attempt that failed.
  public static let stop = RetryDecision(delay: nil)

  /// `retry after 2.0 seconds`, `stop`.
  public var description: String { delay.map { "retry after \($0)" } ?? "stop" }
}

/// The attempt a body runs: ``ActorQueue/currentAttempt``. A struct, so that it can tell more
/// later without breaking callers.
public struct RetryAttempt: Sendable, Hashable {
  /// Counting from 1.
  public let number: Int
}

extension ActorQueue {
  /// The attempt the calling task runs, in the body of an operation with
  /// ``OperationTrait/retry(_:)``; `nil` elsewhere. As ``checkpoint()``, it reads the calling
  /// task, which must be the body's own (not a child task or a task it created): no reference to
  /// the operation is needed. Cost: one atomic load while no retried attempt runs in the process;
  /// otherwise a lookup in the short list of workers running one (never the scheduler's lock).
  public static var currentAttempt: RetryAttempt? {
    Engine.attempts.attemptOfCurrentTask()
  }
}

extension AnyQueueOperation {
  /// How many times the operation's body has started: with ``OperationTrait/retry(_:)``, its
  /// attempts so far (kept after it ends); without, 0 before its body starts and 1 after. A
  /// claim whose conditions are still being evaluated, or that ended or deferred the operation,
  /// started no body. For a caller's handle to coalesced work, the shared work's. O(1), under the
  /// scheduler's lock.
  ///
  /// **Foundation:** no counterpart; an `Operation` runs once.
  public var attemptCount: Int {
    Engine.read { [recordIndex] in $0.attemptCount(of: recordIndex) }
  }
}

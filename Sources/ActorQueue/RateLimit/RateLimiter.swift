/// Limits how fast operations start: a token bucket or a sliding window, on a ``QueueClock``,
/// shared by the queues that list it in their ``ActorQueue/ActorQueue/rateLimiters``.
///
/// A start costs permits (``OperationTrait/cost(_:)``, 1 by default): a first start and every
/// retry attempt; a paused body given its slot again costs nothing. A queue's head that has too
/// few waits, holding no slot and no task, and nothing behind it starts first (strict order); a
/// timer armed for the instant its permits conform starts it (no polling). A limiter shared by
/// several queues grants in the rank order of their heads (priority, then submission order), as
/// arbitration does for ``ExclusivityKey``s. ``penalize(for:)`` answers a server's Retry-After.
///
/// `OperationQueue` has no rate limit: apps put a hand-written token bucket in front of
/// `addOperation`, which polls, ignores the queue's limit and priorities, and on a wall clock
/// jumps with it. See <doc:RateLimits>.
///
/// Cost: its state is one instant (token bucket) or a ring of its capacity's instants (sliding
/// window), kept in the scheduler; a queue with limiters decides its starts by arbitration, as a
/// queue with keys does: one pass over such queues per decision.
public final class RateLimiter: Sendable, CustomStringConvertible {
  /// Its record in the scheduler (`Scheduler.limiterStates`).
  let slot: Int
  /// The clock it counts time on: the clock of every queue that lists it.
  public let clock: QueueClock
  /// The most one start may cost (its burst, or its window's capacity).
  let capacity: Int
  private let summary: String

  private init(_ schedule: PermitSchedule, clock: QueueClock, summary: String) {
    self.clock = clock
    capacity = Int(schedule.capacity)
    self.summary = summary
    slot = Engine.mutate { $0.createLimiter(schedule, clock: clock.id) }
  }

  deinit {
    let slot = slot
    Engine.mutate { $0.freeLimiter(slot) }
  }

  /// A token bucket: `permits` per `interval`, at most `burst` at once (GCRA: one instant, in
  /// integer nanoseconds). In any stretch of time `t`, starts cost at most
  /// `burst + t · permits / interval` permits. `permits`, `interval` and `burst` must be positive
  /// (refused with a message, in every build configuration).
  public static func tokenBucket(
    permits: Int, per interval: Duration, burst: Int, clock: QueueClock = .system
  ) -> RateLimiter {
    let schedule = PermitSchedule(
      .tokenBucket(permits: Int64(permits), interval: interval.wholeNanoseconds, burst: Int64(burst)))
    return RateLimiter(
      schedule, clock: clock, summary: "token bucket \(permits) per \(interval), burst \(burst)")
  }

  /// A sliding window: starts cost at most `maxStarts` permits in any window of length `window`
  /// (a ring of `maxStarts` instants). Both must be positive (refused with a message).
  public static func slidingWindow(maxStarts: Int, per window: Duration, clock: QueueClock = .system)
    -> RateLimiter
  {
    let schedule = PermitSchedule(.slidingWindow(capacity: Int64(maxStarts), length: window.wholeNanoseconds))
    return RateLimiter(schedule, clock: clock, summary: "sliding window \(maxStarts) per \(window)")
  }

  /// Lets nothing start through this limiter before `deadline` (a server's Retry-After); a later
  /// penalty extends it, an earlier one changes nothing. `deadline` must be of this limiter's
  /// clock (refused with a message).
  public func penalize(until deadline: QueueDeadline) {
    guard deadline.clock == clock else {
      fatalError(
        "ActorQueue: \(self) was penalized until an instant of the \(deadline.clock) clock, but it counts time "
          + "on the \(clock) clock; make the instant with that clock's deadline(in:), or use penalize(for:)")
    }
    let slot = slot
    Engine.run { $0.penalize(slot, until: deadline.nanoseconds, now: Engine.now, &$1) }
  }

  /// ``penalize(until:)`` `duration` from now on this limiter's clock.
  public func penalize(for duration: Duration) {
    penalize(until: clock.deadline(in: duration))
  }

  /// The permits a start could take now (none during a penalty). Cost: one short hold of the
  /// scheduler's lock.
  public var availablePermits: Int {
    let slot = slot
    let clock = clock.id
    return Engine.read { Int($0.availablePermits(of: slot, now: $0.instant(of: clock, now: Engine.now))) }
  }

  /// `token bucket 10 per 1.0 seconds, burst 5`.
  public var description: String { summary }
}

/// The error an operation ends with when its cost is more than one of its queue's limiters can
/// ever grant (more than its burst or its window's capacity): at once when it is added, or when
/// the queue's limiters change while it waits.
public struct RateLimitError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The operation.
  public let operationID: OperationID
  /// Its name, if it was given one.
  public let operationName: String?
  /// What one start of it costs.
  public let cost: Int
  /// The most the limiter grants at once.
  public let capacity: Int

  /// `fetch (op#3) costs 5 permits, more than its queue's limiter grants at once (3)`.
  public var description: String {
    let name = operationName.map { "\($0) (\(operationID))" } ?? operationID.description
    return "\(name) costs \(cost) permits, more than its queue's limiter grants at once (\(capacity))"
  }
}

extension OperationTrait {
  /// What one start of the operation costs in its queue's rate limiters' permits (1 without this
  /// trait; 0 starts without taking any). `permits` must not be negative (refused with a message). Given
  /// twice, the last applies.
  public static func cost(_ permits: Int) -> OperationTrait {
    guard permits >= 0 else {
      fatalError("ActorQueue: .cost(\(permits)) must not be negative; .cost(0) takes no permits")
    }
    return OperationTrait(kind: .cost(Int64(permits)))
  }
}

extension ActorQueue {
  /// The rate limiters this queue's starts go through, all of them (a start takes its cost from
  /// each). Live: set it at any time; shared: several queues may list one limiter. Each must be
  /// of this queue's ``clock`` (refused with a message). Cost: one short hold of the scheduler's lock.
  public nonisolated var rateLimiters: [RateLimiter] {
    get {
      let queue = index
      return Engine.read { $0.rateLimiters(of: queue) }
    }
    set {
      for limiter in newValue where limiter.clock != clock {
        fatalError(
          "ActorQueue: \(limiter) counts time on the \(limiter.clock) clock, but queue "
            + "\(name.map { "\"\($0)\"" } ?? "") runs on the \(clock) clock; make the limiter with the queue's clock"
        )
      }
      let queue = index
      Engine.run {
        $0.setRateLimiters(newValue.map(\.slot), keeping: newValue, of: queue, now: Engine.now, &$1)
      }
    }
  }
}

/// The arithmetic of one rate limiter on its clock, in integer nanoseconds: the earliest instant
/// at which a start of a given cost conforms, and what a start consumes. A value, with no clock
/// of its own: the scheduler passes "now" in, as it does to every decision that depends on time,
/// and arms a timer at the instant it computes (no polling).
///
/// - A token bucket is GCRA: one theoretical arrival time (TAT), moved by `cost · interval /
///   permits` per start, O(1). No floating point: TAT is kept as whole nanoseconds plus a
///   remainder in units of `1/permits` ns, so starts that queue up lose nothing to rounding (3 a
///   second after a burst: 333,333,334, 666,666,667, then exactly 1,000,000,000 ns). A start
///   waits only for the nanosecond its instant rounds up to.
/// - A sliding window keeps the instants of its last `capacity` permits (a ring, oldest first):
///   a start of cost `c` conforms once the `c`-th oldest of them has left the window, O(cost).
///
/// A penalty (`penalize(until:)`, a server's Retry-After) lets nothing conform before its end.
struct PermitSchedule: Sendable, Equatable {
  enum Rule: Sendable, Equatable {
    /// `permits` per `interval` nanoseconds, at most `burst` at once: in any closed interval
    /// `[a, b]`, starts cost at most `burst + (b − a) · permits / interval` permits.
    case tokenBucket(permits: Int64, interval: Int64, burst: Int64)
    /// At most `capacity` permits in any window of `length` nanoseconds: a start at `s` counts
    /// in the window ending at `t` while `t − length < s ≤ t`.
    case slidingWindow(capacity: Int64, length: Int64)
  }

  let rule: Rule
  /// Token bucket: TAT is `tatWhole + tatPart / permits` ns, with `0 ≤ tatPart < permits`.
  /// `Int64.min` before the first start (every permit available).
  private var tatWhole = Int64.min
  private var tatPart: Int64 = 0
  /// Sliding window: the instants of the last `capacity` permits, oldest at `oldest`
  /// (`Int64.min` where fewer were started).
  private var ring: [Int64] = []
  private var oldest = 0
  /// Nothing conforms before this instant.
  private(set) var penaltyEnd = Int64.min

  /// A schedule with every permit available. Refused with a message, in every build
  /// configuration, unless it has at least one permit, a positive interval or window, a burst of
  /// at least one, and a burst whose duration (`burst · interval`) fits in about 146 years of
  /// nanoseconds.
  init(_ rule: Rule) {
    switch rule {
    case .tokenBucket(let permits, let interval, let burst):
      guard permits >= 1 else {
        fatalError("ActorQueue: a rate limiter needs at least 1 permit per interval, not \(permits)")
      }
      guard interval > 0 else {
        fatalError("ActorQueue: a rate limiter's interval must be positive, not \(interval) ns")
      }
      guard burst >= 1 else {
        fatalError("ActorQueue: a rate limiter's burst must be at least 1, not \(burst)")
      }
      let (span, overflow) = burst.multipliedReportingOverflow(by: interval)
      guard !overflow && span <= Int64.max / 4 else {
        fatalError(
          "ActorQueue: a rate limiter's burst times its interval (\(burst) × \(interval) ns) is too long")
      }
    case .slidingWindow(let capacity, let length):
      guard capacity >= 1 else {
        fatalError("ActorQueue: a sliding window needs at least 1 start per window, not \(capacity)")
      }
      guard length > 0 else {
        fatalError("ActorQueue: a sliding window's length must be positive, not \(length) ns")
      }
      guard length <= Int64.max / 4 else {
        fatalError("ActorQueue: a sliding window's length (\(length) ns) is too long")
      }
      ring = Array(repeating: Int64.min, count: Int(capacity))
    }
    self.rule = rule
  }

  /// The most a single start may cost: the burst, or the window's capacity. A start that costs
  /// more can never conform.
  var capacity: Int64 {
    switch rule {
    case .tokenBucket(_, _, let burst): burst
    case .slidingWindow(let capacity, _): capacity
    }
  }

  /// The earliest instant at or after `now` at which a start costing `cost` (1 through
  /// ``capacity``) conforms.
  func conformingInstant(cost: Int64, now: Int64) -> Int64 {
    precondition(
      cost >= 1 && cost <= capacity, "Internal inconsistency: a start costing \(cost) of \(capacity)")
    let earliest: Int64
    switch rule {
    case .tokenBucket(let permits, let interval, let burst):
      // Conforms at t when max(TAT, t) + cost·T ≤ t + burst·T (T = interval / permits), that is
      // from t = TAT − (burst − cost)·T, rounded up to a whole nanosecond.
      if isIdle(at: now) {
        earliest = now
      } else {
        let ahead = (tatWhole - now) * permits + tatPart  // (TAT − now) in 1/permits ns
        earliest = now + max(0, Self.ceilingDivide(ahead - (burst - cost) * interval, by: permits))
      }
    case .slidingWindow(_, let length):
      let cth = ring[(oldest + Int(cost) - 1) % ring.count]
      earliest = cth == Int64.min ? now : max(now, cth + length)
    }
    return max(earliest, penaltyEnd)
  }

  /// Records a start costing `cost` at `now`, which must conform there.
  mutating func consume(cost: Int64, at now: Int64) {
    precondition(
      conformingInstant(cost: cost, now: now) <= now,
      "Internal inconsistency: a start costing \(cost) at \(now) ns does not conform")
    record(cost: cost, at: now)
  }

  /// ``consume(cost:at:)`` for a start whose conformance was checked at `now` in the same step
  /// (checked again in debug builds only: it is on every start of a queue that gates its own).
  mutating func consumeChecked(cost: Int64, at now: Int64) {
    assert(
      conformingInstant(cost: cost, now: now) <= now,
      "Internal inconsistency: a start costing \(cost) at \(now) ns does not conform")
    record(cost: cost, at: now)
  }

  /// Takes a start costing `cost` (1 through ``capacity``) at `now` if it conforms there;
  /// otherwise takes nothing and returns the instant from which it conforms.
  // Inlined: the common case, a bucket with its whole burst available, needs no call.
  @inline(__always)
  mutating func take(cost: Int64, at now: Int64) -> Int64? {
    if case .tokenBucket(let permits, let interval, _) = rule, isIdle(at: now), now >= penaltyEnd {
      recordFromIdle(cost: cost, at: now, permits: permits, interval: interval)
      return nil
    }
    return takeAfterChecking(cost: cost, at: now)
  }

  @inline(never)
  private mutating func takeAfterChecking(cost: Int64, at now: Int64) -> Int64? {
    let earliest = conformingInstant(cost: cost, now: now)
    guard earliest <= now else { return earliest }
    record(cost: cost, at: now)
    return nil
  }

  private mutating func record(cost: Int64, at now: Int64) {
    switch rule {
    case .tokenBucket(let permits, let interval, _):
      if isIdle(at: now) {
        recordFromIdle(cost: cost, at: now, permits: permits, interval: interval)
        return
      }
      let part = tatPart + cost * interval
      tatWhole += part / permits
      tatPart = part % permits
    case .slidingWindow:
      for _ in 0..<cost {
        ring[oldest] = now
        oldest = oldest + 1 == ring.count ? 0 : oldest + 1
      }
    }
  }

  /// Token bucket, idle at `now`: a start costing `cost` moves TAT from `now`.
  @inline(__always)
  private mutating func recordFromIdle(cost: Int64, at now: Int64, permits: Int64, interval: Int64) {
    let part = cost * interval
    tatWhole = now + part / permits
    tatPart = part % permits
  }

  /// The permits a start could take at `now` (none during a penalty).
  func available(at now: Int64) -> Int64 {
    guard now >= penaltyEnd else { return 0 }
    switch rule {
    case .tokenBucket(let permits, let interval, let burst):
      if isIdle(at: now) { return burst }
      let ahead = (tatWhole - now) * permits + tatPart
      // k more conform while (TAT − now) + k·T ≤ burst·T.
      return max(0, (burst * interval - ahead) / interval)
    case .slidingWindow(_, let length):
      // The ring is in start order from `oldest`: count, by bisection, those out of the window.
      var low = 0
      var high = ring.count
      while low < high {
        let middle = (low + high) / 2
        let instant = ring[(oldest + middle) % ring.count]
        if instant == Int64.min || instant + length <= now { low = middle + 1 } else { high = middle }
      }
      return Int64(low)
    }
  }

  /// Lets nothing conform before `end` (a later penalty extends it; an earlier one changes
  /// nothing). What accrues meanwhile is capped as usual: at most the burst at `end`.
  mutating func penalize(until end: Int64) {
    penaltyEnd = max(penaltyEnd, end)
  }

  /// Token bucket: TAT is at or before `now`, so the whole burst is available.
  private func isIdle(at now: Int64) -> Bool {
    tatWhole < now || (tatWhole == now && tatPart == 0)
  }

  /// ⌈`numerator` / `denominator`⌉ for a positive denominator.
  private static func ceilingDivide(_ numerator: Int64, by denominator: Int64) -> Int64 {
    let quotient = numerator / denominator
    return numerator % denominator > 0 ? quotient + 1 : quotient
  }
}

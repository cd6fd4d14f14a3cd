import Testing

@testable import ActorQueue

/// The rate limiters' arithmetic (beyond.md §1.6), on instants given by the test: the exact
/// start instants of the acceptance scenarios, and seeded random arrivals checked against the
/// definitions by brute force (the bound on every interval, and that no earlier instant would
/// have conformed).
@Suite("Rate limits: the permit arithmetic")
struct PermitScheduleTests {
  private static let second: Int64 = 1_000_000_000

  /// Starts `count` operations of `cost` as early as the schedule lets them, from `t0`, one
  /// after another (each waits for the one before, as a queue's head does).
  private static func greedyStarts(
    _ schedule: inout PermitSchedule, count: Int, cost: Int64 = 1, from t0: Int64
  ) -> [Int64] {
    var now = t0
    var starts: [Int64] = []
    for _ in 0..<count {
      now = schedule.conformingInstant(cost: cost, now: now)
      schedule.consume(cost: cost, at: now)
      starts.append(now)
    }
    return starts
  }

  @Test("A token bucket of 10/s with burst 5: 5 start at t0, then one every 100 ms exactly")
  func tokenBucketScenario() {
    var schedule = PermitSchedule(.tokenBucket(permits: 10, interval: Self.second, burst: 5))
    let t0: Int64 = 7 * Self.second
    let starts = Self.greedyStarts(&schedule, count: 20, from: t0)
    #expect(Array(starts.prefix(5)) == Array(repeating: t0, count: 5))
    #expect(Array(starts.dropFirst(5)) == (1...15).map { t0 + Int64($0) * Self.second / 10 })
    // At every instant t after t0, starts ≤ 5 + 10·t.
    for (index, start) in starts.enumerated() {
      #expect(Int64(index + 1) * Self.second <= 5 * Self.second + 10 * (start - t0))
    }
  }

  @Test(
    "An interval that is no whole number of nanoseconds per permit: starts as early as every interval allows")
  func exactThirds() {
    // Burst 3 at 3/s: after the burst, start k at ⌈(k − 2) · 10⁹ / 3⌉ ns: the remainder is kept
    // while starts queue up, so no rounding accumulates over 3,000 of them.
    var queued = PermitSchedule(.tokenBucket(permits: 3, interval: Self.second, burst: 3))
    let starts = Self.greedyStarts(&queued, count: 3_003, from: 0)
    #expect(Array(starts.prefix(3)) == [0, 0, 0])
    for k in 3..<starts.count {
      #expect(starts[k] == (Int64(k - 2) * Self.second + 2) / 3, "start \(k)")
    }
    #expect(starts[3_002] == 1_000 * Self.second)
    // Burst 1: any two starts must be a whole third of a second apart, so in whole nanoseconds
    // each waits ⌈10⁹ / 3⌉ after the one before (333,333,334), and no earlier instant conforms.
    var single = PermitSchedule(.tokenBucket(permits: 3, interval: Self.second, burst: 1))
    let spaced = Self.greedyStarts(&single, count: 100, from: 0)
    #expect(zip(spaced, spaced.dropFirst()).allSatisfy { $1 - $0 == 333_333_334 })
  }

  @Test("A sliding window of 10 per second and 25 operations: 10 at t0, 10 at t0 + 1 s, 5 at t0 + 2 s")
  func slidingWindowScenario() {
    var schedule = PermitSchedule(.slidingWindow(capacity: 10, length: Self.second))
    let t0: Int64 = 3 * Self.second + 123
    let starts = Self.greedyStarts(&schedule, count: 25, from: t0)
    #expect(
      starts == [Int64](repeating: t0, count: 10) + [Int64](repeating: t0 + Self.second, count: 10)
        + [Int64](repeating: t0 + 2 * Self.second, count: 5))
  }

  @Test("A start of cost 3 with 2 permits available conforms when the third arrives")
  func costlyStart() {
    var bucket = PermitSchedule(.tokenBucket(permits: 10, interval: Self.second, burst: 5))
    bucket.consume(cost: 3, at: 0)
    #expect(bucket.available(at: 0) == 2)
    #expect(bucket.conformingInstant(cost: 3, now: 0) == Self.second / 10)
    #expect(bucket.available(at: Self.second / 10 - 1) == 2)
    #expect(bucket.available(at: Self.second / 10) == 3)
    var window = PermitSchedule(.slidingWindow(capacity: 5, length: Self.second))
    window.consume(cost: 2, at: 0)
    window.consume(cost: 1, at: 10)
    #expect(window.available(at: 10) == 2)
    // Three more need the two started at 0 ns out of the window (1 s); five, the one at 10 ns too.
    #expect(window.conformingInstant(cost: 2, now: 10) == 10)
    #expect(window.conformingInstant(cost: 3, now: 10) == Self.second)
    #expect(window.conformingInstant(cost: 5, now: 10) == Self.second + 10)
    #expect(window.available(at: Self.second) == 4)
  }

  @Test("A penalty lets nothing conform before its end; the burst is capped as usual after it")
  func penalty() {
    var bucket = PermitSchedule(.tokenBucket(permits: 100, interval: Self.second, burst: 10))
    bucket.penalize(until: 30 * Self.second)
    bucket.penalize(until: 5 * Self.second)  // an earlier end changes nothing
    #expect(bucket.available(at: 29 * Self.second) == 0)
    #expect(bucket.conformingInstant(cost: 1, now: 0) == 30 * Self.second)
    #expect(bucket.available(at: 30 * Self.second) == 10)
    let starts = Self.greedyStarts(&bucket, count: 12, from: 0)
    #expect(Array(starts.prefix(10)) == Array(repeating: 30 * Self.second, count: 10))
    #expect(starts[10] == 30 * Self.second + Self.second / 100)
    var window = PermitSchedule(.slidingWindow(capacity: 2, length: Self.second))
    window.penalize(until: 4 * Self.second)
    #expect(window.conformingInstant(cost: 2, now: Self.second) == 4 * Self.second)
  }

  @Test(
    "Random arrivals: a token bucket never exceeds burst + rate·(b − a) on any interval, and grants at the first instant that conforms"
  )
  func tokenBucketAgainstItsDefinition() {
    var random = SplitMix64(seed: 0x6C69_6D69_7465_72)
    for _ in 0..<200 {
      let permits = Int64(random.next() % 7 + 1)
      let interval = Int64(random.next() % 50 + 1) * 1_000
      let burst = Int64(random.next() % 6 + 1)
      var schedule = PermitSchedule(.tokenBucket(permits: permits, interval: interval, burst: burst))
      var starts: [(at: Int64, cost: Int64)] = []
      var now: Int64 = Int64(random.next() % 1_000)
      for _ in 0..<40 {
        now += Int64(random.next() % UInt64(2 * interval / permits + 1))
        if random.next() % 10 == 0 {
          schedule.penalize(until: now + Int64(random.next() % UInt64(interval)))
        }
        let cost = Int64(random.next() % UInt64(burst)) + 1
        let at = schedule.conformingInstant(cost: cost, now: now)
        #expect(at >= now && at >= schedule.penaltyEnd)
        // Conforms: every interval [a, at] stays within the bound with this start.
        #expect(Self.bucketExcess(starts, adding: cost, at: at, permits, interval, burst) == nil)
        // And no earlier instant would have (outside a penalty).
        if at > now, at - 1 >= schedule.penaltyEnd {
          #expect(Self.bucketExcess(starts, adding: cost, at: at - 1, permits, interval, burst) != nil)
        }
        schedule.consume(cost: cost, at: at)
        starts.append((at, cost))
        now = at
        #expect(schedule.available(at: now) == Self.bucketRoom(starts, at: now, permits, interval, burst))
      }
    }
  }

  @Test(
    "Random arrivals: a sliding window never holds more than its capacity, and grants at the first instant that conforms"
  )
  func slidingWindowAgainstItsDefinition() {
    var random = SplitMix64(seed: 0x7769_6E64_6F77)
    for _ in 0..<200 {
      let capacity = Int64(random.next() % 6 + 1)
      let length = Int64(random.next() % 50 + 1) * 1_000
      var schedule = PermitSchedule(.slidingWindow(capacity: capacity, length: length))
      var starts: [(at: Int64, cost: Int64)] = []
      var now: Int64 = Int64(random.next() % 1_000)
      for _ in 0..<40 {
        now += Int64(random.next() % UInt64(length / capacity + 1))
        let cost = Int64(random.next() % UInt64(capacity)) + 1
        let at = schedule.conformingInstant(cost: cost, now: now)
        #expect(at >= now)
        #expect(Self.inWindow(starts, endingAt: at, length) + cost <= capacity)
        if at > now { #expect(Self.inWindow(starts, endingAt: at - 1, length) + cost > capacity) }
        schedule.consume(cost: cost, at: at)
        starts.append((at, cost))
        now = at
        #expect(schedule.available(at: now) == capacity - Self.inWindow(starts, endingAt: now, length))
      }
    }
  }

  @Test("Bad rules are refused with a message, in release builds too")
  func badRules() async {
    await #expect(processExitsWith: .failure) {
      _ = PermitSchedule(.tokenBucket(permits: 0, interval: 1, burst: 1))
    }
    await #expect(processExitsWith: .failure) {
      _ = PermitSchedule(.tokenBucket(permits: 1, interval: 0, burst: 1))
    }
    await #expect(processExitsWith: .failure) {
      _ = PermitSchedule(.tokenBucket(permits: 1, interval: Int64.max / 2, burst: 3))
    }
    await #expect(processExitsWith: .failure) {
      _ = PermitSchedule(.slidingWindow(capacity: 0, length: 1))
    }
  }

  // MARK: The definitions, by brute force

  /// Permits started in the closed interval [a, b] must be at most burst + (b − a)·permits /
  /// interval for every a; returns an `a` where adding `cost` at `b` breaks that, if any.
  private static func bucketExcess(
    _ starts: [(at: Int64, cost: Int64)], adding cost: Int64, at b: Int64, _ permits: Int64,
    _ interval: Int64,
    _ burst: Int64
  ) -> Int64? {
    for a in starts.map(\.at) + [b] where a <= b {
      let taken = starts.filter { $0.at >= a && $0.at <= b }.reduce(cost) { $0 + $1.cost }
      // taken ≤ burst + (b − a)·permits/interval, in integers.
      if (taken - burst) * interval > (b - a) * permits { return a }
    }
    return nil
  }

  /// The most a start at `now` could cost without breaking the bound.
  private static func bucketRoom(
    _ starts: [(at: Int64, cost: Int64)], at now: Int64, _ permits: Int64, _ interval: Int64, _ burst: Int64
  ) -> Int64 {
    var room: Int64 = 0
    while room < burst, bucketExcess(starts, adding: room + 1, at: now, permits, interval, burst) == nil {
      room += 1
    }
    return room
  }

  /// Permits started in the window ending at `t`: at `s` with `t − length < s ≤ t`.
  private static func inWindow(_ starts: [(at: Int64, cost: Int64)], endingAt t: Int64, _ length: Int64)
    -> Int64
  {
    starts.filter { $0.at > t - length && $0.at <= t }.reduce(0) { $0 + $1.cost }
  }
}

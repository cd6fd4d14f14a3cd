import ActorQueue
import Dispatch
import Foundation
import Synchronization

/// Rate limits on the system clock (issue 31): a token bucket of 100 starts a second with a burst
/// of 10, and a backlog of exactly what it may start in `seconds` (10 + 100 · seconds ops, all
/// added at t0). The i-th start (from 0) may happen from t0 + max(0, i − 9) · 10 ms, its
/// eligible instant; each body stamps when it starts.
/// - ActorQueue: an unlimited queue whose `rateLimiters` is that bucket; its timer starts each
///   head at its instant.
/// - Task per op, the reference for lateness: one task that sleeps until each eligible instant
///   (`Task.sleep(until:tolerance: .zero)`), then stamps: the best a timer does here.
/// - OperationQueue: what apps write, a token bucket refilled from the elapsed time and polled
///   every 15 ms (Nuke's shortest poll), feeding `addOperation`.
/// Per run: lateness after eligibility (p50, p99) of the starts past the burst; and, for the
/// goals, the share of the permitted starts used by t0 + seconds and whether any start came
/// before the bucket allowed it (measured at the bodies' starts).
enum RateScenario {
  static let variant = "100/s, burst 10"
  static let perSecond = 100
  static let burst = 10
  static let pollInterval = Duration.milliseconds(15)

  /// What one run of one system measured, for the goals.
  struct Usage: Sendable {
    /// Starts stamped by t0 + seconds / the starts the bucket permits by then.
    var used: Double
    /// The least, over the starts, of (10 + 100 · t) / (starts by t): below 1, a start came
    /// early.
    var bound: Double
  }

  /// This repeat's runs, by system (read by `checkGoals`, then cleared).
  static let usage = Mutex<[System: [Usage]]>([:])

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    usage.withLock { $0 = [:] }
    let seconds = sizes.rateSeconds
    let count = burst + perSecond * seconds
    let samples = runInterleaved(
      "rate \(variant) for \(seconds) s (\(count) ops)",
      [
        Contender(system: .operationQueue) { measure(.operationQueue, seconds: seconds, polling(count)) },
        Contender(system: .actorQueue) { measure(.actorQueue, seconds: seconds, limited(count)) },
        Contender(system: .taskPerOp) { measure(.taskPerOp, seconds: seconds, sleeping(count)) },
      ], metrics: 2, options: options)
    return makeRows(
      scenario: "rate", variant: variant, metrics: ["p50", "p99"], n: count, ops: nil,
      kinds: [.latency, .latency], samples: samples, runs: options.runs,
      note: "rate: lateness after each start's eligible instant under a token bucket of 100/s, burst 10, "
        + "system clock; task per op: one task sleeping until each instant (tolerance zero); "
        + "OperationQueue: a bucket polled every 15 ms feeding addOperation")
  }

  /// The i-th start's eligible instant after `origin`.
  static func eligible(_ index: Int, after origin: Instant) -> Instant {
    origin + .milliseconds(10) * max(0, index - (burst - 1))
  }

  /// Runs `start` (which starts `count` ops from `origin` and returns once each has stamped its
  /// start), then reduces the stamps to [p50, p99] of the lateness past the burst, and records
  /// the usage for the goals.
  private static func measure(
    _ system: System, seconds: Int, _ start: (_ origin: Instant, _ stamps: Stamps) -> Void
  ) -> [Double] {
    let count = burst + perSecond * seconds
    let stamps = Stamps(count)
    let origin = now()
    start(origin, stamps)
    let starts = stamps.sorted()
    var lateness: [Double] = []
    var bound = Double.infinity
    for (index, stamp) in starts.enumerated() {
      if index >= burst { lateness.append((stamp - eligible(index, after: origin)).seconds) }
      let allowed = Double(burst) + Double(perSecond) * (stamp - origin).seconds
      bound = min(bound, allowed / Double(index + 1))
    }
    let end = origin + .seconds(seconds)
    let used = Double(starts.filter { $0 <= end }.count) / Double(count)
    usage.withLock { $0[system, default: []].append(Usage(used: used, bound: bound)) }
    lateness.sort()
    return [
      Statistics.percentile(0.5, ofSorted: lateness), Statistics.percentile(0.99, ofSorted: lateness),
    ]
  }

  /// ActorQueue: every op added at once to an unlimited queue behind the bucket.
  private static func limited(_ count: Int) -> (Instant, Stamps) -> Void {
    { _, stamps in
      let queue = ActorQueue(name: "rate")
      queue.rateLimiters = [.tokenBucket(permits: perSecond, per: .seconds(1), burst: burst)]
      for _ in 0..<count { queue.addOperation { stamps.stamp() } }
      stamps.waitForAll()
    }
  }

  /// The reference: one task sleeping until each eligible instant in turn.
  private static func sleeping(_ count: Int) -> (Instant, Stamps) -> Void {
    { origin, stamps in
      Task.detached {
        for index in 0..<count {
          try? await Task.sleep(until: eligible(index, after: origin), tolerance: .zero, clock: .continuous)
          stamps.stamp()
        }
      }
      stamps.waitForAll()
    }
  }

  /// What apps write: a bucket refilled from the time elapsed, polled every 15 ms on a thread,
  /// each poll adding as many waiting ops to the queue as it has tokens for.
  private static func polling(_ count: Int) -> (Instant, Stamps) -> Void {
    { origin, stamps in
      let queue = OperationQueue()
      var tokens = Double(burst)
      var refilled = origin
      var added = 0
      while added < count {
        let current = now()
        tokens = min(Double(burst), tokens + (current - refilled).seconds * Double(perSecond))
        refilled = current
        while tokens >= 1, added < count {
          tokens -= 1
          added += 1
          queue.addOperation { stamps.stamp() }
        }
        if added < count { Thread.sleep(forTimeInterval: pollInterval.seconds) }
      }
      stamps.waitForAll()
    }
  }

  /// Start instants, stamped by the bodies; `waitForAll` returns once `count` are in.
  final class Stamps: Sendable {
    private let instants: Mutex<[Instant]>
    private let done = DispatchSemaphore(value: 0)
    private let count: Int

    init(_ count: Int) {
      self.count = count
      var reserved: [Instant] = []
      reserved.reserveCapacity(count)
      instants = Mutex(reserved)
    }

    func stamp() {
      let instant = now()
      let complete = instants.withLock { instants -> Bool in
        instants.append(instant)
        return instants.count == count
      }
      if complete { done.signal() }
    }

    func waitForAll() { done.wait(for: "the last of \(count) rate-limited starts", atMost: Bounds.trial) }

    func sorted() -> [Instant] { instants.withLock { $0 }.sorted() }
  }
}

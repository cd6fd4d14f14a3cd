import ActorQueue
import Foundation

/// `bench --count WORKLOAD N`: runs one ActorQueue workload N times and exits, for
/// `Scripts/instructions.sh`, which runs it under callgrind at two sizes and divides the
/// difference by the difference of N: what a process start, the calibration and the pool's first
/// threads cost cancels out, and what is left is the cost per operation.
enum CountedWorkload: String, CaseIterable, Sendable {
  /// The bench's `independent max 4, trivial` row: one task adds N trivial operations to a
  /// queue of limit 4, then awaits them all.
  case independentMax4 = "independent-max4"
  /// N starts of an idle queue, each after the caches were flushed (what a request arriving
  /// every few milliseconds meets): one trivial operation added and awaited at a time.
  case idleStart = "idle-start"
  /// `idle-start` without the queue: the same flushes and waits, to subtract from it.
  case idleBaseline = "idle-baseline"
  /// `independent-max4` with a deadline on each operation that never fires (an hour away): what
  /// a time trait costs (`CountTimed.swift`).
  case deadlineMax4 = "deadline-max4"
  /// `independent-max4` with each operation failing its first attempt and retried at once: what
  /// a retry costs (the bench's `retry` row).
  case retryMax4 = "retry-max4"
  /// `retry-max4`'s operations succeeding at once, with the trait.
  case retryTraitMax4 = "retry-trait-max4"
  /// `retry-max4`'s operations succeeding at once, without the trait.
  case throwingMax4 = "throwing-max4"
  /// Trivial ops at limit 4, each holding a key none of the others running beside it holds (the
  /// bench's `exclusive` row; 1,024 keys in turn, interned at every size, so the difference of
  /// two sizes leaves out what interning costs).
  case exclusiveDistinctMax4 = "exclusive-distinct-max4"
  /// `exclusive-distinct-max4`'s reference: the same ops without keys (the bench row's).
  case noKeysMax4 = "no-keys-max4"
  /// Trivial ops all holding one key on an unlimited queue.
  case exclusiveOneKey = "exclusive-one-key"
  /// `exclusive-one-key`'s reference: the same ops without keys on a serial queue.
  case serialMax1 = "serial-max1"
  /// `exclusive-one-key` added to a suspended queue, then resumed: the worker's chain from one
  /// end to the next start, with no adding task beside it.
  case exclusiveOneKeyChain = "exclusive-one-key-chain"
  /// `serial-max1` added to a suspended queue, then resumed.
  case serialMax1Chain = "serial-max1-chain"
  /// `independent-max4` through a rate limiter that never throttles (a token bucket of 10⁹ a
  /// second, burst 10⁶): what a limiter costs a start that has its permits.
  case rateLimitedMax4 = "rate-limited-max4"
  /// One group whose build adds N trivial children at limit 4, awaited (the bench's `group` row;
  /// `independent-max4` is its reference).
  case groupMax4 = "group-max4"
  /// `independent-max4` with a condition on each operation that is satisfied at once: what a
  /// condition costs (its evaluation on the worker and the extra hold of the lock).
  case conditionMax4 = "condition-max4"
  /// `cancelOperations(tagged:)` for 100 tagged ops among N waiting, ten times (a new 100 each
  /// time): for callgrind with `--toggle-collect` on the call (Scripts/instructions.sh), not for
  /// the difference of two sizes.
  case cancelTagged = "cancel-tagged"
  /// `independent-max4` with a tag on each operation: what a tag costs.
  case taggedMax4 = "tagged-max4"
  /// One operation whose body makes N progress reports: what a report costs.
  case progressReport = "progress-report"

  /// Runs the workload `n` times.
  func run(_ n: Int) {
    switch self {
    case .independentMax4:
      _ = Independent.actorQueue(n: n, limit: 4)
    case .deadlineMax4:
      TimedCount.deadlineMax4(n)
    case .conditionMax4:
      TimedCount.conditionMax4(n)
    case .retryMax4:
      _ = Retry.actorQueue(n: n, failures: 1)
    case .retryTraitMax4:
      _ = Retry.actorQueue(n: n, failures: 0)
    case .throwingMax4:
      _ = Retry.actorQueue(n: n, failures: 0, trait: false)
    case .exclusiveDistinctMax4:
      let traits = (0..<1024).map { [OperationTrait.exclusive(ExclusivityKey("count-key-\($0)"))] }
      _ = Exclusive.actorQueue(n: n, limit: 4, traits: traits)
    case .exclusiveOneKey:
      _ = Exclusive.actorQueue(
        n: n, limit: ActorQueue.defaultMaxConcurrentOperationCount, traits: [[.exclusive("count-one-key")]])
    case .noKeysMax4:
      _ = Exclusive.actorQueue(n: n, limit: 4, traits: nil)
    case .serialMax1:
      _ = Exclusive.actorQueue(n: n, limit: 1, traits: nil)
    case .exclusiveOneKeyChain:
      _ = Exclusive.actorQueue(
        n: n, limit: ActorQueue.defaultMaxConcurrentOperationCount, traits: [[.exclusive("count-one-key")]],
        suspended: true)
    case .serialMax1Chain:
      _ = Exclusive.actorQueue(n: n, limit: 1, traits: nil, suspended: true)
    case .groupMax4:
      _ = GroupScenario.actorQueue(n: n)
    case .taggedMax4:
      TagScenario.taggedMax4(n)
    case .progressReport:
      ProgressReports.count(n)
    case .cancelTagged:
      let (queue, _) = TagScenario.waiting(among: n, tag: "count-tag")
      queue.cancelOperations(tagged: "count-tag")
      for _ in 0..<10 {
        for _ in 0..<TagScenario.tagged { queue.addOperation(traits: [.tags("count-tag")]) {} }
        queue.cancelOperations(tagged: "count-tag")
      }
      queue.cancelAllOperations()
    case .rateLimitedMax4:
      let limiter = RateLimiter.tokenBucket(permits: 1_000_000_000, per: .seconds(1), burst: 1_000_000)
      _ = Independent.actorQueue(n: n, limit: 4, limiters: [limiter])
    case .idleStart, .idleBaseline:
      let queue = ActorQueue(name: "idle", maxConcurrentOperationCount: 4)
      let ran = DispatchSemaphore(value: 0)
      var flusher = CacheFlusher()
      for _ in 0..<n {
        flusher.flush()
        if self == .idleStart {
          queue.addOperation { ran.signal() }
        } else {
          ran.signal()
        }
        ran.wait(for: "the start of an op on an idle queue")
        // A queue fed now and then: its worker does not linger, and the next start is idle.
        Thread.sleep(forTimeInterval: 0.002)
      }
    }
  }
}

/// Evicts the caches by writing a buffer four times the last level that Scripts/instructions.sh
/// simulates (8 MiB).
struct CacheFlusher {
  private var buffer = [UInt8](repeating: 0, count: 32 << 20)
  private var round: UInt8 = 0

  mutating func flush() {
    round &+= 1
    let value = round
    buffer.withUnsafeMutableBufferPointer { bytes in
      for offset in stride(from: 0, to: bytes.count, by: 64) { bytes[offset] = value }
    }
  }
}

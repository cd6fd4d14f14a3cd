import Synchronization

/// What each op's body does in the independent scenarios. Every body also increments a
/// shared counter (checked afterwards), in every system.
enum BodyKind: String, CaseIterable, Sendable {
  /// Nothing but the counter: the raw cost of the machinery per op.
  case trivial
  /// A fixed arithmetic loop, calibrated once per process to about 2 µs of CPU: short work,
  /// where the machinery's cost is still a large share.
  case spin = "2 µs CPU"
  /// One `await Task.yield()`: a body that suspends once (OperationQueue's synchronous bodies
  /// cannot, so it has no row there).
  case yield
}

/// The body of one kind, ready to hand to each system: the same work, and the loop's length
/// fixed for the whole process.
struct Workload: Sendable {
  let kind: BodyKind
  /// Iterations of `spin(_:)` in a `.spin` body.
  let iterations: Int

  /// A synchronous body for OperationQueue; `nil` for a body that must suspend.
  func synchronous(_ counter: Counter) -> (@Sendable () -> Void)? {
    switch kind {
    case .trivial: return { counter.increment() }
    case .spin:
      let iterations = iterations
      return {
        consume(spin(iterations))
        counter.increment()
      }
    case .yield: return nil
    }
  }

  /// The same body for the systems built on Swift concurrency.
  func asynchronous(_ counter: Counter) -> @Sendable () async -> Void {
    switch kind {
    case .trivial: return { counter.increment() }
    case .spin:
      let iterations = iterations
      return {
        consume(spin(iterations))
        counter.increment()
      }
    case .yield:
      return {
        await Task.yield()
        counter.increment()
      }
    }
  }
}

/// xorshift64 from `seed` (made odd, so never 0), `iterations` times: a dependent chain the
/// optimizer cannot shorten. A pure function: a caller that repeats it must vary `seed`, or the
/// optimizer may call it once.
@inline(never)
func spin(_ iterations: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> UInt64 {
  var x = seed | 1
  for _ in 0..<iterations {
    x ^= x << 13
    x ^= x >> 7
    x ^= x << 17
  }
  return x
}

/// Keeps a result alive (xorshift never reaches 0 from a non-zero seed).
@inline(__always)
func consume(_ value: UInt64) {
  if value == 0 { preconditionFailure("Internal inconsistency: xorshift reached 0") }
}

enum Calibration {
  /// The target length of a `.spin` body.
  static let target = 2e-6

  /// The iterations of `spin(_:)` that take about `target` on this machine: the fastest of
  /// several timed trials (other work on the machine only makes a trial slower).
  static func spinIterations() -> (iterations: Int, secondsPerIteration: Double) {
    let probe = 2_000
    var best = Double.infinity
    for _ in 0..<15 {
      let start = now()
      var folded: UInt64 = 0
      for seed in 1...100 { folded ^= spin(probe, seed: UInt64(seed)) }
      consume(folded | 1)
      best = min(best, secondsSince(start) / Double(100 * probe))
    }
    return (max(1, Int((target / best).rounded())), best)
  }
}

/// Hands out op indices 0, 1, 2, … to the lower bound's reused tasks.
final class Tickets: Sendable {
  private let next = Atomic<Int>(0)
  /// The next index (may exceed the number of ops: then there is none left).
  @inline(__always) func take() -> Int { next.wrappingAdd(1, ordering: .relaxed).oldValue }
}

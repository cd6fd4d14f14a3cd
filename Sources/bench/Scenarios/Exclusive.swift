import ActorQueue
import Foundation

/// Exclusivity by key (issue 30), N trivial ops:
/// - "distinct keys, max 4": ActorQueue's ops each hold a key of their own at limit 4; its task
///   per op row is the same ops with no key: what taking a key costs when nothing contends.
///   OperationQueue runs the same ops plainly (it has no keys).
/// - "one key, unlimited": ActorQueue's ops all hold one key on an unlimited queue; its task per
///   op row is the same ops on a serial queue: what one-at-a-time by key costs against
///   one-at-a-time by limit. OperationQueue runs them on a serial queue, as its users do.
enum Exclusive {
  static let distinctVariant = "distinct keys, max 4"
  static let oneKeyVariant = "one key, unlimited"

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let n = sizes.exclusive
    // Interned once, before any timing (as an app makes its keys once).
    let distinct = (0..<n).map { [OperationTrait.exclusive(ExclusivityKey("bench-key-\($0)"))] }
    let distinctSamples = runInterleaved(
      "exclusive \(distinctVariant) n=\(n)",
      [
        Contender(system: .operationQueue) { [operationQueue(n: n, limit: 4)] },
        Contender(system: .actorQueue) { [actorQueue(n: n, limit: 4, traits: distinct)] },
        Contender(system: .taskPerOp) { [actorQueue(n: n, limit: 4, traits: nil)] },
      ], metrics: 1, options: options)
    let oneKey = [OperationTrait.exclusive("bench-one-key")]
    let oneKeySamples = runInterleaved(
      "exclusive \(oneKeyVariant) n=\(n)",
      [
        Contender(system: .operationQueue) { [operationQueue(n: n, limit: 1)] },
        Contender(system: .actorQueue) {
          [actorQueue(n: n, limit: ActorQueue.defaultMaxConcurrentOperationCount, traits: [oneKey])]
        },
        Contender(system: .taskPerOp) { [actorQueue(n: n, limit: 1, traits: nil)] },
      ], metrics: 1, options: options)
    return makeRows(
      scenario: "exclusive", variant: distinctVariant, metrics: ["time"], n: n, ops: n,
      samples: distinctSamples, runs: options.runs,
      note:
        "exclusive, distinct keys: each op holds a key of its own at limit 4; task per op: ActorQueue's same "
        + "ops without keys; OperationQueue: the same ops, plainly")
      + makeRows(
        scenario: "exclusive", variant: oneKeyVariant, metrics: ["time"], n: n, ops: n,
        samples: oneKeySamples,
        runs: options.runs,
        note:
          "exclusive, one key: every op holds the same key on an unlimited queue; task per op: ActorQueue's "
          + "same ops on a serial queue; OperationQueue: a serial queue")
  }

  /// `n` trivial ops at `limit`, op `i` with `traits[i % traits.count]` (no traits: `nil`).
  static func actorQueue(n: Int, limit: Int, traits: [[OperationTrait]]?) -> Double {
    blocking {
      let counter = Counter()
      let queue = ActorQueue(maxConcurrentOperationCount: limit)
      let body: @Sendable () -> Void = { counter.increment() }
      let start = now()
      if let traits {
        for index in 0..<n { queue.addOperation(traits: traits[index % traits.count], body) }
      } else {
        for _ in 0..<n { queue.addOperation(body) }
      }
      await queue.waitUntilAllOperationsAreFinished()
      let elapsed = secondsSince(start)
      verify(counter.count == n, "ActorQueue ran \(counter.count) of \(n) ops")
      return elapsed
    }
  }

  static func operationQueue(n: Int, limit: Int) -> Double {
    let counter = Counter()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = limit
    let start = now()
    for _ in 0..<n { queue.addOperation { counter.increment() } }
    queue.waitUntilAllOperationsAreFinished()
    let elapsed = secondsSince(start)
    verify(counter.count == n, "OperationQueue ran \(counter.count) of \(n) ops")
    return elapsed
  }
}

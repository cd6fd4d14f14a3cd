import ActorQueue
import Foundation

/// Exclusivity by key (issue 30), N trivial ops:
/// - "distinct keys, max 4": ActorQueue's ops each hold a key of their own at limit 4; its task
///   per op row is the same ops with no key: what taking a key costs when nothing contends.
///   OperationQueue runs the same ops plainly (it has no keys).
/// - "one key, unlimited": ActorQueue's ops all hold one key on an unlimited queue; its task per
///   op row is the same ops on a serial queue: what one-at-a-time by key costs against
///   one-at-a-time by limit. OperationQueue runs them on a serial queue, as its users do.
/// - "1,000 keys, 3 queues": each op holds one of 1,000 keys, drawn at random (seeded), in a
///   domain the three queues (limit 4 each) share; each body checks that no other op on its key
///   runs beside it. Task per op: ActorQueue's same ops without keys. OperationQueue: the
///   pattern apps use, each op depending on the last op of its key (PSOperations'
///   `ExclusivityController`).
enum Exclusive {
  static let distinctVariant = "distinct keys, max 4"
  static let oneKeyVariant = "one key, unlimited"
  static let contendedVariant = "1,000 keys, 3 queues"
  static let contendedKeys = 1_000

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
    let m = sizes.exclusiveContended
    let draws = keyDraws(m)
    let contendedSamples = runInterleaved(
      "exclusive \(contendedVariant) n=\(m)",
      [
        Contender(system: .operationQueue) { [operationQueueByLastOfKey(draws)] },
        Contender(system: .actorQueue) { [contended(draws, keys: true)] },
        Contender(system: .taskPerOp) { [contended(draws, keys: false)] },
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
      + makeRows(
        scenario: "exclusive", variant: contendedVariant, metrics: ["time"], n: m, ops: m,
        samples: contendedSamples, runs: options.runs,
        note:
          "exclusive, 1,000 keys: ops on 3 queues of limit 4, each on a random key of a shared domain, at most one "
          + "running per key (checked); task per op: the same ops without keys; OperationQueue: each op depends "
          + "on the last op of its key")
  }

  /// The key of each op of the contended variant: the same draws for every system and run.
  static func keyDraws(_ n: Int) -> [Int] {
    var state: UInt64 = 0x2545_F491_4F6C_DD1D
    return (0..<n).map { _ in
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      return Int(state % UInt64(contendedKeys))
    }
  }

  /// Op `i` runs on queue `i % 3`, on key `draws[i]` (or none): returns the time to run them all,
  /// after checking that, with keys, no two ops on one key ran together.
  static func contended(_ draws: [Int], keys: Bool) -> Double {
    blocking {
      let checker = PerKeyChecker(keys: contendedKeys)
      let domain = ExclusivityDomain()
      let traits = (0..<contendedKeys).map {
        [OperationTrait.exclusive(ExclusivityKey("bench-contended-\($0)"), in: domain)]
      }
      let queues = (0..<3).map { ActorQueue(name: "contended-\($0)", maxConcurrentOperationCount: 4) }
      let start = now()
      for (index, key) in draws.enumerated() {
        let body: @Sendable () -> Void = { checker.run(key) }
        queues[index % 3].addOperation(traits: keys ? traits[key] : [], body)
      }
      for queue in queues { await queue.waitUntilAllOperationsAreFinished() }
      let elapsed = secondsSince(start)
      verify(checker.ran == draws.count, "ActorQueue ran \(checker.ran) of \(draws.count) ops")
      if keys {
        verify(checker.overlaps == 0, "ActorQueue ran \(checker.overlaps) ops beside another on their key")
      }
      return elapsed
    }
  }

  /// OperationQueue's way: each op depends on the last op added on its key, across three queues.
  static func operationQueueByLastOfKey(_ draws: [Int]) -> Double {
    let checker = PerKeyChecker(keys: contendedKeys)
    let queues = (0..<3).map { _ in
      let queue = OperationQueue()
      queue.maxConcurrentOperationCount = 4
      return queue
    }
    var last = [Operation?](repeating: nil, count: contendedKeys)
    let start = now()
    for (index, key) in draws.enumerated() {
      let operation = BlockOperation { checker.run(key) }
      if let previous = last[key] { operation.addDependency(previous) }
      last[key] = operation
      queues[index % 3].addOperation(operation)
    }
    for queue in queues { queue.waitUntilAllOperationsAreFinished() }
    let elapsed = secondsSince(start)
    verify(checker.ran == draws.count, "OperationQueue ran \(checker.ran) of \(draws.count) ops")
    verify(checker.overlaps == 0, "OperationQueue ran \(checker.overlaps) ops beside another on their key")
    return elapsed
  }

  /// `n` trivial ops at `limit`, op `i` with `traits[i % traits.count]` (no traits: `nil`).
  /// `suspended`: the operations are added to a suspended queue, which is then resumed, so that
  /// the worker's chain runs with no adder beside it (the chain-only count workloads).
  static func actorQueue(n: Int, limit: Int, traits: [[OperationTrait]]?, suspended: Bool = false) -> Double {
    blocking {
      let counter = Counter()
      let queue = ActorQueue(maxConcurrentOperationCount: limit)
      queue.isSuspended = suspended
      // Async, as the add takes it: a synchronous closure would be converted per add, and the
      // compiler hoists that conversion out of one loop but not the other.
      let body: @Sendable () async -> Void = { counter.increment() }
      let start = now()
      if let traits {
        for index in 0..<n { queue.addOperation(traits: traits[index % traits.count], body) }
      } else {
        for _ in 0..<n { queue.addOperation(body) }
      }
      queue.isSuspended = false
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

/// Counts the ops run and those that found another op of their key running.
final class PerKeyChecker: Sendable {
  private let running: [Counter]
  private let counted = Counter()
  private let overlapping = Counter()

  init(keys: Int) { running = (0..<keys).map { _ in Counter() } }

  /// The body of an op on `key`.
  func run(_ key: Int) {
    if running[key].enter() != 1 { overlapping.increment() }
    counted.increment()
    running[key].leave()
  }

  var ran: Int { counted.count }
  var overlaps: Int { overlapping.count }
}

import ActorQueue
import Foundation
import OperationAdapter

/// Legacy `Operation`s through OperationAdapter, against the same operations on an
/// OperationQueue directly (issue 4): N trivial `BlockOperation`s, all added, then waited for.
///
/// Unlimited: the adapter's own cost per operation, which is mostly two thread hops (to the
/// operation's own thread, which keeps a blocking `main()` off the cooperative pool, and back).
/// Max 2: the round trip dominates, as each slot waits for both hops.
enum AdapterScenario {
  static let variants: [(name: String, limit: Int?)] = [("unlimited", nil), ("max 2", 2)]

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    var rows: [Row] = []
    let n = sizes.adapter
    for variant in variants {
      let limit = variant.limit
      let samples = runInterleaved(
        "adapter \(variant.name) n=\(n)",
        [
          Contender(system: .operationQueue) { [operationQueue(n: n, limit: limit)] },
          Contender(system: .adapter) { [adapter(n: n, limit: limit)] },
        ], metrics: 1, options: options)
      rows += makeRows(
        scenario: "adapter", variant: variant.name, metrics: ["time"], n: n, ops: n, samples: samples,
        runs: options.runs,
        note: "adapter: N trivial BlockOperations via queue.addOperation(legacy:) vs OperationQueue directly")
    }
    return rows
  }

  static func operationQueue(n: Int, limit: Int?) -> Double {
    let counter = Counter()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = limit ?? OperationQueue.defaultMaxConcurrentOperationCount
    let operations = (0..<n).map { _ in BlockOperation { counter.increment() } }
    let start = now()
    for operation in operations { queue.addOperation(operation) }
    queue.waitUntilAllOperationsAreFinished()
    let elapsed = secondsSince(start)
    verify(counter.count == n, "OperationQueue ran \(counter.count) of \(n) BlockOperations")
    return elapsed
  }

  static func adapter(n: Int, limit: Int?) -> Double {
    blocking {
      let counter = Counter()
      let queue = ActorQueue(
        maxConcurrentOperationCount: limit ?? ActorQueue.defaultMaxConcurrentOperationCount)
      let operations = (0..<n).map { _ in BlockOperation { counter.increment() } }
      let start = now()
      for operation in operations {
        do {
          try queue.addOperation(legacy: operation)
        } catch {
          preconditionFailure("bench: a fresh BlockOperation was refused by the adapter: \(error)")
        }
      }
      await queue.waitUntilAllOperationsAreFinished()
      let elapsed = secondsSince(start)
      verify(counter.count == n, "the adapter ran \(counter.count) of \(n) BlockOperations")
      return elapsed
    }
  }
}

import ActorQueue
import Foundation

/// Groups (issue 32): one group of N trivial children at limit 4 against the same operations on a
/// plain queue of limit 4 and a wait for all of them (its task per op row). OperationQueue builds
/// a group as its users do: an operation that adds the children to a queue of its own and blocks
/// its thread until they end.
enum GroupScenario {
  static let variant = "10,000 children, max 4"

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let n = sizes.group
    let samples = runInterleaved(
      "group \(variant) n=\(n)",
      [
        Contender(system: .operationQueue) { [operationQueue(n: n)] },
        Contender(system: .actorQueue) { [actorQueue(n: n)] },
        // The same operations on a plain queue of limit 4, and a wait: the independent row's.
        Contender(system: .taskPerOp) { [Independent.actorQueue(n: n, limit: 4)] },
      ], metrics: 1, options: options)
    return makeRows(
      scenario: "group", variant: variant, metrics: ["time"], n: n, ops: n, samples: samples,
      runs: options.runs,
      note:
        "group: one group of N trivial children at limit 4, awaited; its task per op row is the same ops on a "
        + "plain queue of limit 4 and waitUntilAllOperationsAreFinished; OperationQueue: an operation that adds "
        + "them to a queue of its own and waits")
  }

  /// A group whose build adds `n` trivial children, awaited.
  static func actorQueue(n: Int) -> Double {
    blocking {
      let counter = Counter()
      let queue = ActorQueue()
      let body = Workload.trivial.asynchronous(counter)
      let start = now()
      let group = queue.addOperationGroup(maxConcurrentOperationCount: 4) { group in
        for _ in 0..<n { group.queue.addOperation(body) }
      }
      await group.waitUntilFinished()
      let elapsed = secondsSince(start)
      verify(
        group.state == .finished && counter.count == n, "the group ran \(counter.count) of \(n) children")
      return elapsed
    }
  }

  static func operationQueue(n: Int) -> Double {
    let counter = Counter()
    let queue = OperationQueue()
    let start = now()
    let group = BlockOperation {
      let children = OperationQueue()
      children.maxConcurrentOperationCount = 4
      for _ in 0..<n { children.addOperation { counter.increment() } }
      children.waitUntilAllOperationsAreFinished()
    }
    queue.addOperation(group)
    queue.waitUntilAllOperationsAreFinished()
    let elapsed = secondsSince(start)
    verify(counter.count == n, "OperationQueue ran \(counter.count) of \(n) children")
    return elapsed
  }
}

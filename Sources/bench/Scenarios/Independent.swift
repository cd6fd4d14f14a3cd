import ActorQueue
import Foundation

/// N trivial ops with no dependencies, submitted one by one, then waited for: the raw cost of
/// the machinery per op. Each body increments a shared counter (checked afterwards), the same
/// in every system.
///
/// Where submission happens: OperationQueue from the driver thread (its users are synchronous
/// code, and its wait blocks a thread); ActorQueue and the floor from a task on the pool (their
/// users are async code). The clock covers submitting every op and waiting for the last one.
enum Independent {
  static let variants: [(name: String, limit: Int?)] = [("unlimited", nil), ("max 4", 4), ("serial", 1)]

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    var rows: [Row] = []
    let n = sizes.independent
    for variant in variants {
      let limit = variant.limit
      let samples = runInterleaved(
        "independent \(variant.name) n=\(n)",
        [
          Contender(system: .operationQueue) { [operationQueue(n: n, limit: limit)] },
          Contender(system: .actorQueue) { [actorQueue(n: n, limit: limit)] },
          Contender(system: .floor) { [floor(n: n, limit: limit)] },
        ], metrics: 1, options: options)
      rows += makeRows(
        scenario: "independent", variant: variant.name, metrics: ["time"], n: n, ops: n, samples: samples,
        runs: options.runs)
    }
    return rows
  }

  static func operationQueue(n: Int, limit: Int?) -> Double {
    let counter = Counter()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = limit ?? OperationQueue.defaultMaxConcurrentOperationCount
    let start = now()
    for _ in 0..<n { queue.addOperation { counter.increment() } }
    queue.waitUntilAllOperationsAreFinished()
    let elapsed = secondsSince(start)
    verify(counter.count == n, "OperationQueue ran \(counter.count) of \(n) ops")
    return elapsed
  }

  static func actorQueue(n: Int, limit: Int?) -> Double {
    blocking {
      let counter = Counter()
      let queue = ActorQueue(
        maxConcurrentOperationCount: limit ?? ActorQueue.defaultMaxConcurrentOperationCount)
      let start = now()
      for _ in 0..<n { queue.addOperation { counter.increment() } }
      await queue.waitUntilAllOperationsAreFinished()
      let elapsed = secondsSince(start)
      verify(counter.count == n, "ActorQueue ran \(counter.count) of \(n) ops")
      return elapsed
    }
  }

  /// The floor: a bare TaskGroup. Unlimited: a discarding group, one child task per op (the
  /// cheapest structured form). Limited: a sliding window of `limit` child tasks, the next
  /// added as soon as one ends.
  static func floor(n: Int, limit: Int?) -> Double {
    blocking {
      let counter = Counter()
      let start = now()
      if let limit {
        await withTaskGroup(of: Void.self) { group in
          var inFlight = 0
          for _ in 0..<n {
            if inFlight == limit {
              await group.next()
              inFlight -= 1
            }
            group.addTask { counter.increment() }
            inFlight += 1
          }
          await group.waitForAll()
        }
      } else {
        await withDiscardingTaskGroup { group in
          for _ in 0..<n { group.addTask { counter.increment() } }
        }
      }
      let elapsed = secondsSince(start)
      verify(counter.count == n, "the floor ran \(counter.count) of \(n) ops")
      return elapsed
    }
  }
}

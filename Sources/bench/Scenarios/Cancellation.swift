import ActorQueue
import Foundation

/// Cancelling N waiting ops: add them to a suspended queue (not timed), then time
/// `cancelAllOperations()` until every op is terminal and the queue is empty.
///
/// OperationQueue keeps a cancelled op queued until its turn: in a suspended queue its
/// ops never end, so the OperationQueue run must also resume the queue and wait; that is the
/// price its users pay. ActorQueue ends waiting ops at once, even suspended. No task-per-op baseline: a
/// TaskGroup has no waiting, unstarted child to cancel.
enum Cancellation {
  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let n = sizes.cancel
    let samples = runInterleaved(
      "cancel n=\(n)",
      [
        Contender(system: .operationQueue) { [operationQueue(n)] },
        Contender(system: .actorQueue) { [actorQueue(n)] },
      ], metrics: 1, options: options)
    return makeRows(
      scenario: "cancel", metrics: ["time"], n: n, ops: n, samples: samples, runs: options.runs,
      note:
        "cancel: from cancelAllOperations() until all ops are terminal (OperationQueue ends its cancelled waiting ops only once it is resumed)"
    )
  }

  static func operationQueue(_ n: Int) -> Double {
    let counter = Counter()
    let queue = OperationQueue()
    queue.isSuspended = true
    for _ in 0..<n { queue.addOperation { counter.increment() } }
    let start = now()
    queue.cancelAllOperations()
    queue.isSuspended = false
    queue.waitUntilAllOperationsAreFinished()
    let elapsed = secondsSince(start)
    verify(counter.count == 0 && queue.operationCount == 0, "OperationQueue ran a cancelled op")
    return elapsed
  }

  static func actorQueue(_ n: Int) -> Double {
    blocking {
      let counter = Counter()
      let queue = ActorQueue()
      queue.isSuspended = true
      for _ in 0..<n { queue.addOperation { counter.increment() } }
      let start = now()
      queue.cancelAllOperations()
      await queue.waitUntilAllOperationsAreFinished()
      let elapsed = secondsSince(start)
      verify(counter.count == 0 && queue.operationCount == 0, "ActorQueue ran a cancelled op")
      return elapsed
    }
  }
}

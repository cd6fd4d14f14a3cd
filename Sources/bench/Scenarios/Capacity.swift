import ActorQueue
import Foundation

/// Bounded capacity (issue 33): N trivial ops at limit 4 added with
/// `addOperationWaitingForCapacity` on a queue whose capacity always has space, against the same
/// ops added with `addOperation` (its task per op row): the waiting add must cost at most 1.2x the
/// synchronous one. OperationQueue: the idiom it replaces, a semaphore waited on before each
/// `addOperation` and signalled by each op.
enum CapacityScenario {
  static let variant = "waiting add, space free, max 4"

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let n = sizes.independent
    let samples = runInterleaved(
      "capacity \(variant) n=\(n)",
      [
        Contender(system: .operationQueue) { [operationQueue(n: n)] },
        Contender(system: .actorQueue) { [actorQueue(n: n)] },
        // The same ops added with the synchronous add: the independent row's.
        Contender(system: .taskPerOp) { [Independent.actorQueue(n: n, limit: 4)] },
      ], metrics: 1, options: options)
    return makeRows(
      scenario: "capacity", variant: variant, metrics: ["time"], n: n, ops: n, samples: samples,
      runs: options.runs,
      note:
        "capacity: N trivial ops at limit 4 added with addOperationWaitingForCapacity, the capacity never reached; "
        + "its task per op row is the same ops added with addOperation; OperationQueue: a semaphore waited on "
        + "before each addOperation")
  }

  static func actorQueue(n: Int) -> Double {
    blocking {
      let counter = Counter()
      let body = Workload.trivial.asynchronous(counter)
      let queue = ActorQueue(maxConcurrentOperationCount: 4)
      queue.capacity = n
      let start = now()
      do {
        for _ in 0..<n { try await queue.addOperationWaitingForCapacity(body) }
      } catch {
        fatalError("bench: a waiting add in a task nobody cancels threw \(error)")
      }
      await queue.waitUntilAllOperationsAreFinished()
      let elapsed = secondsSince(start)
      verify(counter.count == n, "ActorQueue ran \(counter.count) of \(n) ops added waiting for capacity")
      return elapsed
    }
  }

  static func operationQueue(n: Int) -> Double {
    let counter = Counter()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 4
    let slots = DispatchSemaphore(value: n)
    let start = now()
    for _ in 0..<n {
      slots.wait(for: "a free slot under the semaphore")
      queue.addOperation {
        counter.increment()
        slots.signal()
      }
    }
    queue.waitUntilAllOperationsAreFinished()
    let elapsed = secondsSince(start)
    verify(counter.count == n, "OperationQueue ran \(counter.count) of \(n) ops behind a semaphore")
    return elapsed
  }
}

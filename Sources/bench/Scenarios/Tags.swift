import ActorQueue
import Foundation

/// Cancel by tag (issue 33): `cancelOperations(tagged:)` on 100 tagged ops among N waiting in a
/// suspended queue, timed alone (the call returns once the waiting ones have ended), against the
/// same call among 1,000 (its task per op row): it must cost what it cancels, not the queue.
/// OperationQueue has no tags: its users walk `operations` and cancel those whose name matches.
enum TagScenario {
  static let variant = "100 tagged among 100,000 waiting"
  /// How many of the waiting ops carry the tag.
  static let tagged = 100

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let n = sizes.taggedAmong
    let samples = runInterleaved(
      "tags \(variant) n=\(n)",
      [
        Contender(system: .operationQueue) { [operationQueue(among: n)] },
        Contender(system: .actorQueue) { [actorQueue(among: n)] },
        // The same call among 1,000 waiting ops.
        Contender(system: .taskPerOp) { [actorQueue(among: 1_000)] },
      ], metrics: 1, options: options)
    return makeRows(
      scenario: "tags", variant: variant, metrics: ["time"], n: n, ops: tagged, samples: samples,
      runs: options.runs,
      note:
        "tags: the time of cancelOperations(tagged:) for 100 tagged ops among N waiting in a suspended queue; "
        + "its task per op row is the same call among 1,000; OperationQueue: a walk over operations that "
        + "cancels those whose name matches")
  }

  /// A suspended queue of `among` trivial ops, `tagged` of them tagged, spread evenly.
  static func waiting(among: Int, tag: OperationTag) -> (ActorQueue, [QueueOperation<Void>]) {
    let queue = ActorQueue(name: "tags")
    queue.isSuspended = true
    let every = among / tagged
    var marked: [QueueOperation<Void>] = []
    for index in 0..<among {
      if index % every == 0 {
        marked.append(queue.addOperation(traits: [.tags(tag)]) {})
      } else {
        queue.addOperation {}
      }
    }
    return (queue, marked)
  }

  static func actorQueue(among: Int) -> Double {
    let (queue, marked) = waiting(among: among, tag: "bench-tag")
    let start = now()
    queue.cancelOperations(tagged: "bench-tag")
    let elapsed = secondsSince(start)
    verify(
      marked.allSatisfy { $0.state == .cancelled } && queue.operationCount == among - tagged,
      "cancelOperations(tagged:) left a tagged op or cancelled an untagged one")
    queue.cancelAllOperations()
    return elapsed
  }

  /// `independent-max4` with one tag on each op, never cancelled: what a tag costs an op
  /// (`bench --count tagged-max4`).
  static func taggedMax4(_ n: Int) {
    blocking {
      let counter = Counter()
      let body = Workload.trivial.asynchronous(counter)
      let queue = ActorQueue(maxConcurrentOperationCount: 4)
      // Made once, as an app keeps its tags: each `OperationTag(name)` interns its name.
      let traits: [OperationTrait] = [.tags("count-tag")]
      for _ in 0..<n { queue.addOperation(traits: traits, body) }
      await queue.waitUntilAllOperationsAreFinished()
      verify(counter.count == n, "ActorQueue ran \(counter.count) of \(n) tagged ops")
    }
  }

  static func operationQueue(among: Int) -> Double {
    let queue = OperationQueue()
    queue.isSuspended = true
    let every = among / tagged
    for index in 0..<among {
      let operation = BlockOperation {}
      if index % every == 0 { operation.name = "bench-tag" }
      queue.addOperation(operation)
    }
    let start = now()
    var cancelled = 0
    for operation in queue.operations where operation.name == "bench-tag" {
      operation.cancel()
      cancelled += 1
    }
    let elapsed = secondsSince(start)
    verify(cancelled == tagged, "the walk cancelled \(cancelled) of \(tagged)")
    queue.cancelAllOperations()
    queue.isSuspended = false
    queue.waitUntilAllOperationsAreFinished()
    return elapsed
  }
}

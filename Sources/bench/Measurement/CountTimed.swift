import ActorQueue

/// The counted workloads that need time traits, in a file of their own: `Scripts/instructions.sh`
/// replaces it with a stub when it measures a commit from before them.
enum TimedCount {
  /// `independent-max4`, each operation with a deadline an hour away.
  static func deadlineMax4(_ n: Int) {
    blocking {
      let counter = Counter()
      let body = Workload.trivial.asynchronous(counter)
      let queue = ActorQueue(maxConcurrentOperationCount: 4)
      let traits: [OperationTrait] = [.deadline(in: .seconds(3_600))]
      for _ in 0..<n { queue.addOperation(traits: traits, body) }
      await queue.waitUntilAllOperationsAreFinished()
      verify(counter.count == n, "ActorQueue ran \(counter.count) of \(n) ops with deadlines")
    }
  }

  /// `independent-max4`, each operation with a condition satisfied at once.
  static func conditionMax4(_ n: Int) {
    blocking {
      let counter = Counter()
      let body = Workload.trivial.asynchronous(counter)
      let queue = ActorQueue(maxConcurrentOperationCount: 4)
      let traits: [OperationTrait] = [.condition("always") { _ in .satisfied }]
      for _ in 0..<n { queue.addOperation(traits: traits, body) }
      await queue.waitUntilAllOperationsAreFinished()
      verify(counter.count == n, "ActorQueue ran \(counter.count) of \(n) ops with conditions")
    }
  }
}

import ActorQueue
import TestSupport
import Testing

/// Linear scheduling (P10): issue 3, point 8. Structural tests, no timing: long graphs built in
/// order complete, in order, and the deep paths (a cycle check over the whole chain, a failure
/// propagating down the whole chain) use no recursion that a long chain could exhaust. The
/// costs themselves are measured by the bench, not here.
@Suite("Dependency scaling")
struct DependencyScalingTests {
  static let length = 20_000

  @Test("A typed chain of 20,000 operations built in order completes, each step after the previous one")
  func longTypedChainCompletes() async throws {
    let queue = ActorQueue(name: "chain")
    var steps = [queue.addOperation(name: "step0") { 0 }]
    steps.reserveCapacity(Self.length)
    for index in 1..<Self.length {
      steps.append(queue.addOperation(name: "step\(index)", after: steps[index - 1]) { $0 + 1 })
    }
    #expect(try await steps[Self.length - 1].value == Self.length - 1)
    await queue.waitUntilAllOperationsAreFinished()
    #expect(queue.operationCount == 0)
  }

  @Test("An ordering chain of 20,000 built in order runs in order; closing it into a cycle is refused")
  func longOrderingChainRunsInOrderAndRefusesCycle() async throws {
    let queue = ActorQueue(name: "chain", maxConcurrentOperationCount: 4)
    queue.isSuspended = true
    let trace = Recorder<Int>()
    var operations: [QueueOperation<Void>] = []
    operations.reserveCapacity(Self.length)
    for index in 0..<Self.length {
      let operation = QueueOperation<Void>(name: "step\(index)") { trace.append(index) }
      // Each new operation has no dependents yet: the cycle check is O(1) here.
      if let previous = operations.last { try operation.addDependency(previous) }
      try queue.addOperation(operation)
      operations.append(operation)
    }
    #expect(queue.operationCount == Self.length)
    #expect(operations[0].state == .ready)
    #expect(operations[1].state == .pending)

    // Closing the chain searches all of it, once, without recursion.
    #expect(throws: ActorQueueError.dependencyCycle) {
      try operations[0].addDependency(operations[Self.length - 1])
    }
    #expect(operations[0].dependencies.isEmpty)
    #expect(operations[0].state == .ready)

    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(trace.snapshot == Array(0..<Self.length))
    #expect(operations.allSatisfy { $0.state == .finished })
  }

  @Test("A failure at the head of a 20,000-step typed chain ends every step at once, without running any")
  func longChainFailurePropagatesAtOnce() async throws {
    let queue = ActorQueue(name: "chain")
    let ran = RunFlag()
    let release = Gate()
    let head = queue.addOperation(name: "head") { () async throws -> Int in
      await release.wait()
      throw TestError(code: 1)
    }
    var steps = [head]
    steps.reserveCapacity(Self.length)
    for index in 1..<Self.length {
      steps.append(
        queue.addOperation(name: "step\(index)", after: steps[index - 1]) { value in
          ran.mark()
          return value + 1
        })
    }
    #expect(queue.operationCount == Self.length)
    release.open()
    await head.waitUntilFinished()
    #expect(queue.operationCount == 0, "every step ended with the head")
    #expect(steps.dropFirst().allSatisfy { $0.state == .failed })
    #expect(!ran.didRun)
    do {  // `failure` holds the whole chain of wrapped errors: released before the steps
      let failure = try #require(dependencyFailure(await steps[Self.length - 1].result))
      #expect(failure.dependencyID == steps[Self.length - 2].id)
    }
    releaseFromTheEnd(&steps)
  }

  @Test("Fan-in and fan-out of 5,000 built in order complete")
  func fanInAndFanOut() async throws {
    let queue = ActorQueue(name: "fans")
    let count = 5_000
    let sources = (0..<count).map { index in queue.addOperation(name: "source\(index)") { index } }
    let sink = QueueOperation<Int>(name: "sink") {
      var sum = 0
      for source in sources { sum += try await source.value }
      return sum
    }
    for source in sources { try sink.addDependency(source, requiring: .success) }
    try queue.addOperation(sink)
    #expect(try await sink.value == count * (count - 1) / 2)

    let root = queue.addOperation(name: "root") { 2 }
    let leaves = (0..<count).map { index in
      queue.addOperation(name: "leaf\(index)", after: root) { $0 * index }
    }
    var total = 0
    for leaf in leaves { total += try await leaf.value }
    #expect(total == count * (count - 1))
  }
}

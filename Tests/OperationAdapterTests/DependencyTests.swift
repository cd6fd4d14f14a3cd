import ActorQueue
import Foundation
import OperationAdapter
import TestSupport
import Testing

/// Legacy Foundation dependencies, and dependencies across the bridge in both directions.
@Suite struct DependencyTests {
  /// Block operations that record their index, chained: each depends on the previous one.
  private func makeChain(_ count: Int, into recorder: Recorder<Int>) -> [BlockOperation] {
    var chain: [BlockOperation] = []
    for index in 0..<count {
      let operation = BlockOperation { recorder.append(index) }
      if let previous = chain.last { operation.addDependency(previous) }
      chain.append(operation)
    }
    return chain
  }

  @Test func aLegacyChainOnALimitOneQueueAddedInReverseOrderDoesNotDeadlock() async throws {
    let count = 50
    let referenceOrder = Recorder<Int>()
    await runOnOperationQueue(
      makeChain(count, into: referenceOrder).reversed(), maxConcurrentOperationCount: 1)
    #expect(referenceOrder.snapshot == Array(0..<count))

    let order = Recorder<Int>()
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let handles = try makeChain(count, into: order).reversed().map { try queue.addOperation(legacy: $0) }
    // Only the head may take the slot; the others wait for their legacy dependency, as .pending.
    #expect(handles.last?.state == .ready)
    #expect(handles.dropLast().allSatisfy { $0.state == .pending })
    queue.isSuspended = false
    for handle in handles { _ = try await handle.value }
    #expect(order.snapshot == Array(0..<count))
  }

  @Test func preparedLegacyOperationsTakeAndGiveActorQueueDependencies() async throws {
    let order = Recorder<String>()
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let first = QueueOperation(name: "async first") { order.append("async first") }
    let legacy = QueueOperation(legacy: BlockOperation { order.append("legacy") })
    let last = QueueOperation(name: "async last") { order.append("async last") }
    try legacy.addDependency(first)
    try last.addDependency(legacy)
    try await queue.addOperations([last, legacy, first], waitUntilFinished: true)
    #expect(order.snapshot == ["async first", "legacy", "async last"])
  }

  @Test func anActorQueueOperationDependsOnAWrappedLegacyOperationAndReadsItsOutput() async throws {
    let queue = ActorQueue()
    let load = try queue.addOperation(legacy: LoadImageOperation(url: "c.png"))
    // A typed input: the finished legacy operation itself.
    let filtered = queue.addOperation(after: load) { load in "sharpen(\(load.image ?? "nil"))" }
    #expect(try await filtered.value == "sharpen(image(c.png))")
  }

  @Test func aFoundationOperationDependsOnAnActorQueueOperation() async throws {
    let order = Recorder<String>()
    let release = Gate()
    let queue = ActorQueue()
    let asyncWork = queue.addOperation(name: "refresh token") {
      await release.wait()
      order.append("async")
    }
    let marker = asyncWork.asFoundationOperation()
    let legacy = BlockOperation { order.append("legacy") }
    legacy.addDependency(marker)
    let independent = BlockOperation { order.append("independent") }

    let foundation = OperationQueue()
    foundation.maxConcurrentOperationCount = 1
    foundation.addOperation(marker)
    foundation.addOperation(legacy)
    foundation.addOperation(independent)
    // The marker is not ready while the ActorQueue operation runs, so it takes no slot of the
    // limit-1 OperationQueue: the independent operation runs meanwhile.
    await independent.finished()
    #expect(!marker.isReady && !marker.isFinished && !legacy.isFinished)
    release.open()
    await legacy.finished()
    #expect(order.snapshot == ["independent", "async", "legacy"])
  }

  @Test func cancellingTheFoundationMarkerCancelsTheActorQueueOperation() async throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    let asyncWork = queue.addOperation { 1 }
    let marker = asyncWork.asFoundationOperation()
    let foundation = OperationQueue()
    foundation.addOperation(marker)
    foundation.cancelAllOperations()
    #expect(asyncWork.state == .cancelled)
    await marker.finished()
    #expect(marker.isCancelled)
  }

  @Test func legacyQueuePriorityOrdersWaitingOperationsAsInOperationQueue() async throws {
    func makeOperations(_ order: Recorder<String>) -> [BlockOperation] {
      let low = BlockOperation { order.append("low") }
      low.queuePriority = .low
      let high = BlockOperation { order.append("high") }
      high.queuePriority = .veryHigh
      return [low, high]
    }

    let referenceOrder = Recorder<String>()
    let foundation = OperationQueue()
    foundation.maxConcurrentOperationCount = 1
    foundation.isSuspended = true
    for operation in makeOperations(referenceOrder) { foundation.addOperation(operation) }
    foundation.isSuspended = false
    await foundation.allFinished()
    #expect(referenceOrder.snapshot == ["high", "low"])

    let order = Recorder<String>()
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let handles = try makeOperations(order).map { try queue.addOperation(legacy: $0) }
    #expect(handles.map(\.queuePriority) == [.low, .veryHigh])
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(order.snapshot == ["high", "low"])
  }
}

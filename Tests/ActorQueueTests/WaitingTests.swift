import ActorQueue
import Foundation
import TestSupport
import Testing

@Suite("Waiting", .timeLimit(.minutes(hangLimitMinutes)))
struct WaitingTests {
  @Test("Waiting returns: value, result, waitUntilFinished, waitUntilAllOperationsAreFinished")
  func waitingReturns() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    let operations = (0..<20).map { index in queue.addOperation { index * 2 } }
    await queue.waitUntilAllOperationsAreFinished()
    #expect(queue.operationCount == 0)
    for (index, operation) in operations.enumerated() {
      await operation.waitUntilFinished()
      #expect(try await operation.value == index * 2)
      #expect(try await operation.result.get() == index * 2)
    }
    // An idle queue: returns at once.
    await ActorQueue().waitUntilAllOperationsAreFinished()
  }

  @Test("OperationQueue: waiting returns (its blocking waits, from a thread of their own)")
  func waitingReturnsFoundation() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 2
    let counter = Counter()
    let operations = (0..<20).map { _ in BlockOperation { counter.increment() } }
    for operation in operations { queue.addOperation(operation) }
    await operations[0].finished()
    await queue.allFinished()
    #expect(counter.value == 20)
    #expect(queue.operationCount == 0)
  }

  @Test("Many tasks wait on one op without blocking threads (more waiters than threads)")
  func manyWaitersDoNotBlock() async throws {
    let queue = ActorQueue()
    let release = Gate()
    let operation = queue.addOperation { () -> Int in
      await release.wait()
      return 1
    }
    let sum = try await withThrowingTaskGroup(of: Int.self) { group in
      for _ in 0..<200 { group.addTask { try await operation.value } }
      // Every waiter is suspended, not blocking a thread: the op (and this task) still runs.
      #expect(await eventually { registeredWaiters(of: operation) == 200 })
      release.open()
      return try await group.reduce(0, +)
    }
    #expect(sum == 200)
  }

  enum Wait: String, CaseIterable, Sendable { case value, result, waitUntilFinished }

  @Test(
    "A waiter being cancelled does not end its wait nor cancel the op (like Task.value)",
    arguments: Wait.allCases)
  func waiterCancellationDoesNotEndWait(wait: Wait) async throws {
    let queue = ActorQueue()
    let release = Gate()
    let operation = queue.addOperation { () -> Int in
      await release.wait()
      return 5
    }
    // Cancelled while suspended in the wait.
    let waiter = Task { () -> (Bool, Int?) in
      var value: Int?
      switch wait {
      case .value: value = try? await operation.value
      case .result: value = try? await operation.result.get()
      case .waitUntilFinished: await operation.waitUntilFinished()
      }
      return (operation.isFinished, value)
    }
    // Cancelled before it waits.
    let early = Task { () -> Bool in
      withUnsafeCurrentTask { $0?.cancel() }
      #expect(Task.isCancelled)
      await operation.waitUntilFinished()
      return operation.isFinished
    }
    #expect(await eventually { registeredWaiters(of: operation) == 2 })
    waiter.cancel()
    // Still registered: the cancellation woke nobody.
    #expect(registeredWaiters(of: operation) == 2)
    #expect(!operation.isCancelled)
    #expect(operation.isExecuting)
    release.open()
    let (finished, value) = await waiter.value
    #expect(finished)
    #expect(await early.value)
    #expect(operation.state == .finished)
    switch wait {
    case .value, .result: #expect(value == 5)
    case .waitUntilFinished: #expect(value == nil)
    }
  }

  @Test("waitUntilAllOperationsAreFinished includes ops added while waiting")
  func waitAllIncludesOpsAddedWhileWaiting() async throws {
    let queue = ActorQueue()
    let firstGate = Gate()
    let secondGate = Gate()
    let first = queue.addOperation { await firstGate.wait() }
    let waiter = Task { () -> (Int, Bool) in
      await queue.waitUntilAllOperationsAreFinished()
      return (queue.operationCount, first.isFinished)
    }
    #expect(await eventually { registeredAllFinishedWaiters(of: queue) == 1 })
    let second = queue.addOperation { await secondGate.wait() }
    firstGate.open()
    await first.waitUntilFinished()
    // The queue is not idle (second runs): the waiter is still waiting.
    #expect(registeredAllFinishedWaiters(of: queue) == 1)
    #expect(second.isExecuting || second.isReady)
    secondGate.open()
    let (count, firstFinished) = await waiter.value
    #expect(count == 0)
    #expect(firstFinished)
    #expect(second.isFinished)
  }

  @Test("waitUntilAllOperationsAreFinished is not ended by the waiter's cancellation")
  func waitAllIgnoresWaiterCancellation() async {
    let queue = ActorQueue()
    let release = Gate()
    let operation = queue.addOperation { await release.wait() }
    let waiter = Task { () -> Bool in
      await queue.waitUntilAllOperationsAreFinished()
      return operation.isFinished
    }
    #expect(await eventually { registeredAllFinishedWaiters(of: queue) == 1 })
    waiter.cancel()
    #expect(registeredAllFinishedWaiters(of: queue) == 1)
    #expect(!operation.isCancelled)
    release.open()
    #expect(await waiter.value)
  }

  @Test("OperationQueue: waitUntilAllOperationsAreFinished also covers ops added while waiting")
  func waitAllIncludesOpsAddedWhileWaitingFoundation() async {
    let queue = OperationQueue()
    let firstRelease = DispatchSemaphore(value: 0)
    let secondRelease = DispatchSemaphore(value: 0)
    let firstStarted = DispatchSemaphore(value: 0)
    let first = BlockOperation {
      firstStarted.signal()
      firstRelease.wait()
    }
    queue.addOperation(first)
    await onBlockingThread { firstStarted.wait() }
    let waiting = Task { await queue.allFinished() }
    let second = BlockOperation { secondRelease.wait() }
    queue.addOperation(second)
    firstRelease.signal()
    await first.finished()
    secondRelease.signal()
    await waiting.value
    #expect(second.isFinished)
  }

  @Test("addOperations(_:waitUntilFinished: true) suspends until all of them end; false returns at once")
  func addOperationsWaitUntilFinished() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    let counter = Counter()
    let operations = (0..<6).map { _ in QueueOperation { counter.increment() } }
    try await queue.addOperations(operations, waitUntilFinished: true)
    #expect(operations.allSatisfy { $0.state == .finished })
    #expect(counter.value == 6)

    let release = Gate()
    let blocked = QueueOperation { await release.wait() }
    try await queue.addOperations([blocked], waitUntilFinished: false)
    #expect(!blocked.isFinished)
    release.open()
    await blocked.waitUntilFinished()

    // All or none, also here.
    await #expect(throws: ActorQueueError.alreadyEnqueued) {
      try await queue.addOperations([QueueOperation {}, blocked], waitUntilFinished: true)
    }
    #expect(queue.operationCount == 0)
  }

  @Test("addOperations(_:waitUntilFinished: true) returns for cancelled ops too")
  func addOperationsWaitWithCancellation() async throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    let operations = (0..<3).map { _ in QueueOperation { 1 } }
    operations[0].cancel()
    let waiter = Task { try await queue.addOperations(operations, waitUntilFinished: true) }
    #expect(await eventually { queue.operationCount == 2 })
    queue.cancelAllOperations()
    try await waiter.value
    #expect(operations.allSatisfy { $0.state == .cancelled })
  }
}

import ActorQueue
import Foundation
import LegacyFixtures
import OperationAdapter
import TestSupport
import Testing

/// Issue 11: what legacy code does to an operation while its handle waits reaches the handle as
/// it reaches an `OperationQueue` (cancellation, readiness, priority), and legacy batches keep
/// their priority order. Each test runs the case on `OperationQueue` first, then through the
/// adapter.
@Suite(.timeLimit(.minutes(hangLimitMinutes))) struct FidelityTests {
  // MARK: Item 1: cancelled by legacy code while a Foundation dependency is unfinished

  @Test func legacyCancelWhileAFoundationDependencyIsUnfinishedEndsTheOperation() async throws {
    let referenceDependency = BlockOperation {}  // never started: stays unfinished
    let reference = ChecksumOperation(chunks: [[1]])
    reference.addDependency(referenceDependency)
    let foundation = OperationQueue()
    foundation.addOperation(reference)
    reference.cancel()
    await foundation.allFinished()
    #expect(reference.isFinished && reference.isCancelled && reference.processedChunks == 0)
    #expect(foundation.operationCount == 0 && !referenceDependency.isFinished)

    let dependency = BlockOperation {}
    let operation = ChecksumOperation(chunks: [[1]])
    operation.addDependency(dependency)
    let queue = ActorQueue()
    let handle = try queue.addOperation(legacy: operation)
    #expect(handle.state == .pending)
    operation.cancel()  // legacy code, not the handle
    #expect(await outcome(of: handle) == .cancelled)
    #expect(handle.state == .cancelled && queue.operationCount == 0)
    // Started without a slot once the handle ended; nothing tells when it finished but polling.
    #expect(await eventually { operation.isFinished })
    #expect(operation.isCancelled && operation.processedChunks == 0)
    #expect(!dependency.isFinished)
  }

  // MARK: Item 2: an operation that is not ready takes no slot

  @Test func aLegacyOperationThatIsNotReadyLetsTheNextOneRun() async throws {
    let reference = ManualReadyOperation()
    let referenceNext = BlockOperation {}
    let foundation = OperationQueue()
    foundation.maxConcurrentOperationCount = 1
    foundation.addOperation(reference)
    foundation.addOperation(referenceNext)
    await referenceNext.finished()
    #expect(!reference.didRun)
    reference.setIsReady()
    await foundation.allFinished()
    #expect(reference.didRun && reference.isFinished)

    let operation = ManualReadyOperation()
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let handle = try queue.addOperation(legacy: operation)
    let next = try queue.addOperation(legacy: BlockOperation {})
    #expect(await outcome(of: next) == .finished)
    #expect(handle.state == .pending && queue.operationCount == 1 && !operation.didRun)
    operation.setIsReady()
    #expect(await outcome(of: handle) == .finished)
    #expect(operation.didRun && operation.isFinished && queue.operationCount == 0)
  }

  @Test func aNotReadyLegacyOperationCancelledByLegacyCodeEnds() async throws {
    let operation = ManualReadyOperation()
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let handle = try queue.addOperation(legacy: operation)
    #expect(handle.state == .pending)
    operation.cancel()
    #expect(await outcome(of: handle) == .cancelled)
    #expect(queue.operationCount == 0 && !operation.didRun)
  }

  // MARK: Item 4: priorities

  /// Foundation's test_OperationPriorities through the batch entry point: four operations of
  /// mixed priority added in one batch to a serial queue run in priority order.
  ///
  /// Before the scheduler submitted a batch whole and then scheduled it, the first operation of
  /// the batch started at once (they ran 1, 3, 2, 4); this guards against that coming back.
  @Test func aLegacyBatchOnASerialQueueRunsInPriorityOrder() async throws {
    func makeOperations(_ order: Recorder<Int>) -> [Operation] {
      let priorities: [Operation.QueuePriority] = [.normal, .low, .veryHigh, .veryLow]
      return priorities.enumerated().map { index, priority in
        let operation = BlockOperation { order.append(index + 1) }
        operation.queuePriority = priority
        return operation
      }
    }

    let referenceOrder = Recorder<Int>()
    let foundation = OperationQueue()
    foundation.maxConcurrentOperationCount = 1
    let batch = makeOperations(referenceOrder)
    await onBlockingThread { foundation.addOperations(batch, waitUntilFinished: true) }
    #expect(referenceOrder.snapshot == [3, 1, 2, 4])

    let order = Recorder<Int>()
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let handles = try queue.addOperations(legacy: makeOperations(order))
    #expect(handles.map(\.queuePriority) == [.normal, .low, .veryHigh, .veryLow])
    await queue.waitUntilAllOperationsAreFinished()
    #expect(order.snapshot == [3, 1, 2, 4])
  }

  @Test func aLegacyBatchIsAddedAllOrNone() async throws {
    let finished = BlockOperation {}
    finished.start()
    let fresh = BlockOperation {}
    let queue = ActorQueue()
    queue.isSuspended = true
    #expect(throws: OperationAdapterError.alreadyFinished) {
      try queue.addOperations(legacy: [fresh, finished])
    }
    #expect(queue.operationCount == 0)
    #expect(throws: OperationAdapterError.alreadyAdded) {
      try queue.addOperations(legacy: [fresh, fresh])
    }
    #expect(queue.operationCount == 0)
    // Nothing of the refused batches is left holding `fresh`.
    let handles = try queue.addOperations(legacy: [fresh])
    queue.isSuspended = false
    _ = try await handles[0].value
    #expect(fresh.isFinished)
  }

  @Test func aHandleFollowsItsLegacyOperationsLaterQueuePriority() async throws {
    func makeOperations(_ order: Recorder<String>) -> (first: BlockOperation, second: BlockOperation) {
      (BlockOperation { order.append("first") }, BlockOperation { order.append("second") })
    }

    let referenceOrder = Recorder<String>()
    let reference = makeOperations(referenceOrder)
    let foundation = OperationQueue()
    foundation.maxConcurrentOperationCount = 1
    foundation.isSuspended = true
    foundation.addOperation(reference.first)
    foundation.addOperation(reference.second)
    reference.second.queuePriority = .veryHigh  // after it was added
    foundation.isSuspended = false
    await foundation.allFinished()
    #expect(referenceOrder.snapshot == ["second", "first"])

    let order = Recorder<String>()
    let operations = makeOperations(order)
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    _ = try queue.addOperation(legacy: operations.first)
    let second = try queue.addOperation(legacy: operations.second)
    operations.second.queuePriority = .veryHigh  // legacy code, not the handle
    // Foundation tells nobody but the operation's own OperationQueue: the adapter polls.
    #expect(await eventually { second.queuePriority == .veryHigh })
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(order.snapshot == ["second", "first"])
  }
}

/// How long the adapter may take to notice what it polls for, before a test calls it a hang:
/// the watcher notices a change within a few milliseconds, and within 50 ms plus one pass
/// however long its last pass seemed (`LegacyWatcherTests`). A guard against hangs, not a way to
/// order anything.
let watcherLimit: Duration = .seconds(60)

/// Whether `condition` holds within `deadline`, checked every millisecond. Only for state the
/// adapter learns by polling Foundation (nothing notifies it on Linux).
func eventually(within deadline: Duration = watcherLimit, _ condition: () -> Bool) async -> Bool {
  let clock = ContinuousClock()
  let end = clock.now + deadline
  while clock.now < end {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(1))
  }
  return condition()
}

/// How a handle ended, or `.notWithinLimit`: a guard that turns a hang into a failure (waiting
/// on a handle ignores the test's cancellation), not a way to order anything.
enum Ending: Equatable {
  case finished, cancelled, failed, notWithinLimit
}

/// How `handle` ends, waiting at most `limit` (see ``watcherLimit``).
func outcome<Success: Sendable>(
  of handle: QueueOperation<Success>, within limit: Duration = watcherLimit
) async -> Ending {
  let resumed = LockedValue(false)
  return await withCheckedContinuation { continuation in
    @Sendable func resume(_ ending: Ending) {
      let first = resumed.withLock { resumed in
        defer { resumed = true }
        return !resumed
      }
      if first { continuation.resume(returning: ending) }
    }
    Task {
      switch await handle.result {
      case .success: resume(.finished)
      case .failure(let error): resume(error is CancellationError ? .cancelled : .failed)
      }
    }
    Task {
      try? await Task.sleep(for: limit)
      resume(.notWithinLimit)
    }
  }
}

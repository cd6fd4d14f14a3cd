import ActorQueue
import Foundation
import OperationAdapter
import TestSupport
import Testing

/// The reverse direction: async code as a Foundation Operation.
@Suite struct AsyncBlockOperationTests {
  @Test func runsItsClosureInATaskAndHoldsItsOperationQueueSlotUntilTheTaskEnds() async throws {
    let release = Gate()
    let order = Recorder<String>()
    let insideTask = LockedValue<Bool?>(nil)
    let operation = AsyncBlockOperation {
      insideTask.withLock { $0 = withUnsafeCurrentTask { $0 != nil } }
      await release.wait()
      order.append("async")
    }
    let follower = BlockOperation { order.append("follower") }
    let foundation = OperationQueue()
    foundation.maxConcurrentOperationCount = 1
    foundation.addOperation(operation)
    foundation.addOperation(follower)
    #expect(operation.isAsynchronous)
    release.open()
    await foundation.allFinished()
    #expect(order.snapshot == ["async", "follower"])
    #expect(operation.isFinished && !operation.isExecuting && operation.error == nil)
    #expect(insideTask.withLock { $0 } == true)
  }

  @Test func cancelCancelsItsTask() async throws {
    let started = Gate()
    let sawCancellation = LockedValue(false)
    let operation = AsyncBlockOperation {
      started.open()
      await untilCancelled()
      sawCancellation.withLock { $0 = Task.isCancelled }
    }
    let foundation = OperationQueue()
    foundation.addOperation(operation)
    await started.wait()
    #expect(operation.isExecuting)
    operation.cancel()
    await foundation.allFinished()
    #expect(sawCancellation.withLock { $0 })
    #expect(operation.isCancelled && operation.isFinished)
  }

  @Test func cancelledBeforeItStartsItNeverRunsAsABlockOperation() async throws {
    let referenceRuns = Counter()
    let reference = BlockOperation { referenceRuns.increment() }
    reference.cancel()
    let runs = Counter()
    let operation = AsyncBlockOperation { runs.increment() }
    operation.cancel()
    await runOnOperationQueue([reference, operation])
    #expect(referenceRuns.count == 0 && reference.isFinished)
    #expect(runs.count == 0 && operation.isFinished)
  }

  @Test func keepsTheErrorItsClosureThrew() async throws {
    struct Failure: Error, Equatable {}
    let operation = AsyncBlockOperation { throw Failure() }
    let dependent = BlockOperation {}
    dependent.addDependency(operation)
    await runOnOperationQueue([dependent, operation])
    #expect(operation.isFinished && dependent.isFinished)
    #expect(operation.error as? Failure == Failure())
  }

  @Test func runsThroughTheAdapterAndTheHandleCancelsItsTask() async throws {
    let queue = ActorQueue()
    let value = LockedValue(0)
    let handle = try queue.addOperation(legacy: AsyncBlockOperation { value.withLock { $0 = 5 } })
    _ = try await handle.value
    #expect(value.withLock { $0 } == 5)

    let started = Gate()
    let sawCancellation = LockedValue(false)
    let cancellable = try queue.addOperation(
      legacy: AsyncBlockOperation {
        started.open()
        await untilCancelled()
        sawCancellation.withLock { $0 = Task.isCancelled }
      })
    await started.wait()
    cancellable.cancel()
    await cancellable.waitUntilFinished()
    #expect(cancellable.state == .cancelled && sawCancellation.withLock { $0 })
  }
}

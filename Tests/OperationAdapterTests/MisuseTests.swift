import ActorQueue
import Foundation
import OperationAdapter
import TestSupport
import Testing

/// Misuse gets a typed error; a never-finishing operation can be bounded by a timeout.
@Suite struct MisuseTests {
  @Test func aRetryOfALegacyOperationStopsWithAMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let queue = ActorQueue()
      let operation = BlockOperation {}
      operation.name = "legacy upload"
      _ = try? queue.addOperation(legacy: operation, traits: [.retry(.attempts(3))])
    }
    let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(text.contains("legacy upload") && text.contains("cannot run twice"), "\(text)")
  }

  @Test func addingAFinishedOperationThrows() async throws {
    let operation = SumOperation(numbers: [1])
    await runOnOperationQueue([operation])  // Foundation would trap if it were enqueued again
    let queue = ActorQueue()
    #expect(throws: OperationAdapterError.alreadyFinished) { try queue.addOperation(legacy: operation) }
    #expect(queue.operationCount == 0)
    #expect("\(OperationAdapterError.alreadyFinished)".contains("Create a new instance"))
  }

  @Test func addingAnExecutingOperationThrows() async throws {
    let release = Gate()
    let started = Gate()
    let operation = AsyncFetchOperation { done in
      started.open()
      Task {
        await release.wait(); done("x")
      }
    }
    operation.start()  // legacy code starting it by hand
    await started.wait()
    let queue = ActorQueue()
    #expect(throws: OperationAdapterError.alreadyExecuting) { try queue.addOperation(legacy: operation) }
    release.open()
  }

  @Test func addingTheSameOperationTwiceThrows() async throws {
    let operation = SumOperation(numbers: [2])
    let queue = ActorQueue()
    queue.isSuspended = true
    let handle = try queue.addOperation(legacy: operation)
    #expect(throws: OperationAdapterError.alreadyAdded) { try queue.addOperation(legacy: operation) }
    #expect(throws: OperationAdapterError.alreadyAdded) { try ActorQueue().addOperation(legacy: operation) }
    #expect(queue.operationCount == 1)
    queue.isSuspended = false
    #expect(try await handle.value.sum == 2)
    #expect(throws: OperationAdapterError.alreadyFinished) { try queue.addOperation(legacy: operation) }
  }

  @Test func aPreparedOperationForAFinishedLegacyOperationFailsWhenItRuns() async throws {
    let operation = SumOperation(numbers: [3])
    await runOnOperationQueue([operation])
    let prepared = QueueOperation(legacy: operation)
    let queue = ActorQueue()
    try queue.addOperation(prepared)
    await #expect(throws: OperationAdapterError.alreadyFinished) { try await prepared.value }
    #expect(prepared.state == .failed && operation.sum == 3)
  }

  @Test func aTimeoutReleasesTheSlotOfAnOperationThatNeverFinishes() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let operation = NeverFinishingOperation()
    let handle = try queue.addOperation(legacy: operation, timeout: .milliseconds(20))
    let follower = queue.addOperation { "ran" }
    await operation.started.wait()
    await #expect(throws: OperationAdapterError.timedOut) { try await handle.value }
    #expect(handle.state == .failed)
    #expect(operation.cancelCalls.withLock { $0 } == 1)
    #expect(try await follower.value == "ran")
    #expect(operation.isExecuting && !operation.isFinished)  // abandoned, as documented
  }

  @Test func aTimeoutDoesNotAffectAnOperationThatFinishesInTime() async throws {
    let queue = ActorQueue()
    let handle = try queue.addOperation(legacy: SumOperation(numbers: [4]), timeout: .seconds(60))
    #expect(try await handle.value.sum == 4)
    #expect(handle.state == .finished)
  }
}

extension MisuseTests {
  @Test func anOperationStartedByLegacyCodeWhileItsHandleWaitedIsLeftAlone() async throws {
    let release = Gate()
    let started = Gate()
    let operation = AsyncFetchOperation { done in
      started.open()
      Task {
        await release.wait(); done("by legacy code")
      }
    }
    let queue = ActorQueue()
    queue.isSuspended = true
    let handle = try queue.addOperation(legacy: operation)
    operation.start()  // misuse: legacy code runs it by hand while the handle waits
    await started.wait()
    queue.isSuspended = false
    await #expect(throws: OperationAdapterError.alreadyExecuting) { try await handle.value }
    // Not cancelled nor started again by the adapter: it finishes on its own.
    #expect(!operation.isCancelled)
    release.open()
    await operation.finished()
    #expect(operation.result == "by legacy code" && !operation.isCancelled)
  }
}

import ActorQueue
import Dispatch
import Foundation
import OperationAdapter
import TestSupport
import Testing

/// Cancellation both ways: ActorQueue -> legacy `cancel()`, and legacy cancellation -> the handle.
@Suite struct CancellationTests {
  @Test func cancellingTheHandleCallsTheLegacyCancelOverride() async throws {
    let referenceClient = FakeClient()
    let reference = CallbackWrapperOperation(client: referenceClient)
    let foundation = serialReferenceQueue()
    foundation.addOperation(reference)
    await referenceClient.taskStarted.wait()
    reference.cancel()
    await foundation.allFinished()
    #expect(reference.isCancelled && referenceClient.firstTask?.cancelCalls.withLock { $0 } == 1)
    #expect(throws: FakeClient.Cancelled.self) { try reference.result?.get() }

    let client = FakeClient()
    let operation = CallbackWrapperOperation(client: client)
    let queue = ActorQueue()
    let handle = try queue.addOperation(legacy: operation)
    await client.taskStarted.wait()
    handle.cancel()
    await handle.waitUntilFinished()
    #expect(handle.state == .cancelled)
    #expect(operation.isCancelled && operation.isFinished)
    #expect(client.firstTask?.cancelCalls.withLock { $0 } == 1)
    #expect(throws: FakeClient.Cancelled.self) { try operation.result?.get() }
    await #expect(throws: CancellationError.self) { try await handle.value }
  }

  @Test func cancelAllOperationsCancelsExecutingAndWaitingLegacyOperations() async throws {
    // Returns the executing operation (blocked in its first item until `proceed` is signalled)
    // and a waiting one with a completion block.
    func makeOperations(proceed: DispatchSemaphore, entered: Gate, completed: Gate)
      -> (SumOperation, SumOperation)
    {
      let executing = SumOperation(numbers: [1, 2, 3]) { _ in
        entered.open()
        proceed.wait()
      }
      let waiting = SumOperation(numbers: [1, 2, 3])
      waiting.completionBlock = { completed.open() }
      return (executing, waiting)
    }

    let referenceProceed = DispatchSemaphore(value: 0)
    let referenceEntered = Gate()
    let referenceCompleted = Gate()
    let (referenceExecuting, referenceWaiting) = makeOperations(
      proceed: referenceProceed, entered: referenceEntered, completed: referenceCompleted)
    let foundation = serialReferenceQueue()  // limit 1
    foundation.addOperation(referenceExecuting)
    foundation.addOperation(referenceWaiting)
    await referenceEntered.wait()
    foundation.cancelAllOperations()
    referenceProceed.signal()
    await foundation.allFinished()
    await referenceCompleted.wait()
    #expect(referenceExecuting.isCancelled && referenceExecuting.processed == 1)
    #expect(referenceWaiting.isCancelled && referenceWaiting.isFinished && referenceWaiting.processed == 0)

    let proceed = DispatchSemaphore(value: 0)
    let entered = Gate()
    let completed = Gate()
    let (executing, waiting) = makeOperations(proceed: proceed, entered: entered, completed: completed)
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let executingHandle = try queue.addOperation(legacy: executing)
    let waitingHandle = try queue.addOperation(legacy: waiting)
    await entered.wait()
    queue.cancelAllOperations()
    // The waiting legacy operation is started at once without a slot (the adapter's one
    // exception to P2, as in OperationQueue), sees isCancelled and finishes; its handle ends
    // then. The executing one ends when its main() returns.
    await waitingHandle.waitUntilFinished()
    #expect(waitingHandle.state == .cancelled)
    #expect(executing.isCancelled && !executingHandle.isFinished)
    proceed.signal()
    await executingHandle.waitUntilFinished()
    #expect(executingHandle.state == .cancelled && executing.processed == 1)
    // The waiting legacy operation still reaches isFinished, as in OperationQueue: its
    // completion block runs, its main() never does.
    await completed.wait()
    #expect(waiting.isCancelled && waiting.isFinished && waiting.processed == 0)
  }

  @Test func aLegacyOperationCancelledByLegacyCodeEndsTheHandleCancelled() async throws {
    // It ignores cancellation and completes its work; isCancelled is what counts.
    let release = Gate()
    let started = Gate()
    let operation = AsyncFetchOperation { done in
      started.open()
      Task {
        await release.wait(); done("late")
      }
    }
    let queue = ActorQueue()
    let handle = try queue.addOperation(legacy: operation)
    await started.wait()
    operation.cancel()  // legacy code, not the handle
    #expect(handle.state == .executing)
    release.open()
    await handle.waitUntilFinished()
    #expect(handle.state == .cancelled)
    #expect(operation.result == "late" && operation.isCancelled)
  }

  @Test func aLegacyOperationCancelledBeforeItIsAddedNeverRunsItsMain() async throws {
    let reference = SumOperation(numbers: [1])
    reference.cancel()
    await runOnOperationQueue([reference])
    #expect(reference.isFinished && reference.processed == 0)

    let operation = SumOperation(numbers: [1])
    operation.cancel()
    let queue = ActorQueue()
    let handle = try queue.addOperation(legacy: operation)
    await handle.waitUntilFinished()
    #expect(handle.state == .cancelled)
    #expect(operation.isFinished && operation.processed == 0 && operation.ranInsideTask == nil)
  }

  @Test func aWaitingHandleCancelledInASuspendedQueueFinishesItsLegacyOperationWithoutASlot() async throws {
    let completed = Gate()
    let operation = SumOperation(numbers: [1])
    operation.completionBlock = { completed.open() }
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let handle = try queue.addOperation(legacy: operation)
    #expect(handle.state == .ready)
    handle.cancel()
    // Foundation's rule, the adapter's one exception to "ends at once": the legacy operation is
    // started without a slot (the queue is suspended), sees isCancelled and finishes; the handle
    // ends once it has.
    let result = await handle.result
    #expect(throws: CancellationError.self) { try result.get() }
    #expect(operation.isCancelled && operation.isFinished && operation.processed == 0)
    #expect(handle.state == .cancelled && queue.operationCount == 0)
    await completed.wait()
    // It was not wrapped any more: re-adding reports that it finished.
    #expect(throws: OperationAdapterError.alreadyFinished) { try queue.addOperation(legacy: operation) }
  }

  @Test(
    "After waitUntilAllOperationsAreFinished, every cancelled waiting legacy operation reports isFinished")
  func waitingForAllIncludesTheCancelledLegacyOperations() async throws {
    for _ in 0..<50 {
      let queue = ActorQueue(maxConcurrentOperationCount: 1)
      queue.isSuspended = true
      // Style (b): start() finishes on another thread, after the hop a callback API makes.
      let operations = (0..<4).map { index in
        AsyncFetchOperation { done in DispatchQueue.global().async { done("\(index)") } }
      }
      let handles = try queue.addOperations(legacy: operations)
      queue.cancelAllOperations()
      await queue.waitUntilAllOperationsAreFinished()
      #expect(operations.allSatisfy { $0.isFinished })
      #expect(handles.allSatisfy { $0.state == .cancelled })
    }
  }
}

/// An asynchronous legacy operation that, cancelled or not, finishes only once told: legacy
/// code tearing down what it started.
private final class FinishesWhenToldOperation: Operation, @unchecked Sendable {
  let started = Gate()
  let finish = DispatchSemaphore(value: 0)
  private let lock = NSLock()
  private var executing = false
  private var finished = false

  override var isAsynchronous: Bool { true }
  override var isExecuting: Bool { lock.withLock { executing } }
  override var isFinished: Bool { lock.withLock { finished } }

  override func start() {
    set(executing: true, finished: false)
    started.open()
    DispatchQueue.global().async {
      self.finish.wait()
      self.set(executing: false, finished: true)
    }
  }

  private func set(executing: Bool, finished: Bool) {
    willChangeValue(forKey: "isExecuting")
    willChangeValue(forKey: "isFinished")
    lock.withLock {
      self.executing = executing
      self.finished = finished
    }
    didChangeValue(forKey: "isExecuting")
    didChangeValue(forKey: "isFinished")
  }
}

@Suite(.timeLimit(.minutes(hangLimitMinutes))) struct CancelledWaitingLegacyStateTests {
  @Test(
    "A waiting legacy operation cancelled through its handle reads .executing, holding no slot, until it finishes"
  )
  func readsExecutingWithoutASlot() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let events = queue.events
    let operation = FinishesWhenToldOperation()
    let handle = try queue.addOperation(legacy: operation)
    #expect(handle.state == .ready)
    handle.cancel()
    await operation.started.wait()
    // Foundation's rule: started so that it can finish; it is executing, and says so.
    #expect(handle.state == .executing && handle.isExecuting && handle.isCancelled)
    #expect(operation.isExecuting && operation.isCancelled)
    var iterator = events.makeAsyncIterator()
    var executingEvent: QueueEvent?
    while let event = await iterator.next() {
      if case .operation(_, _, .executing) = event.kind {
        executingEvent = event
        break
      }
    }
    #expect(executingEvent?.executingCount == 0, "it holds no slot: the suspended queue's count stays 0")
    #expect(queue.operationCount == 1, "the queue still waits for it")
    operation.finish.signal()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(operation.isFinished && handle.state == .cancelled)
  }
}

import ActorQueue
import Foundation
import TestSupport
import Testing

@testable import OperationAdapter

/// One test per legacy style (operation-model.md §5): each runs the same subclass on an
/// `OperationQueue` first, then through the adapter, and expects the same outcome.
@Suite struct LegacyStyleTests {
  @Test func synchronousMainPollingIsCancelled() async throws {
    let numbers = [1, 2, -3, 4]

    let reference = SumOperation(numbers: numbers)
    await runOnOperationQueue([reference])
    #expect(reference.sum == 7 && reference.processed == 4 && reference.errors == 1)

    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    let handle = try queue.addOperation(legacy: SumOperation(numbers: numbers))
    let operation = try await handle.value
    #expect(operation.sum == 7 && operation.processed == 4 && operation.errors == 1)
    #expect(operation.isFinished && !operation.isCancelled)
    #expect(handle.state == .finished)
    // A blocking main() runs on Foundation's threads, not inside a Swift task.
    #expect(reference.ranInsideTask == false)
    #expect(operation.ranInsideTask == false)
  }

  @Test func asynchronousSwiftStyleHoldsTheSlotUntilItSignalsFinish() async throws {
    let release = Gate()
    let fetchStarted = Gate()
    func makeOperation() -> AsyncFetchOperation {
      AsyncFetchOperation { done in
        fetchStarted.open()
        Task {
          await release.wait(); done("payload")
        }
      }
    }

    let reference = makeOperation()
    let referenceFollower = BlockOperation {}
    let foundation = OperationQueue()
    foundation.maxConcurrentOperationCount = 1
    foundation.addOperation(reference)
    foundation.addOperation(referenceFollower)
    await fetchStarted.wait()
    #expect(reference.isExecuting && !referenceFollower.isFinished)
    release.open()
    await foundation.allFinished()
    #expect(reference.result == "payload" && reference.startedInsideTask == false)

    let release2 = Gate()
    let fetchStarted2 = Gate()
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let handle = try queue.addOperation(
      legacy: AsyncFetchOperation { done in
        fetchStarted2.open()
        Task {
          await release2.wait(); done("payload")
        }
      })
    let follower = queue.addOperation { 1 }
    await fetchStarted2.wait()
    // The legacy operation returned from start() but has not finished: it keeps its slot.
    #expect(handle.state == .executing)
    #expect(follower.state == .ready)
    release2.open()
    let operation = try await handle.value
    #expect(operation.result == "payload" && operation.startedInsideTask == false)
    #expect(try await follower.value == 1)
  }

  @Test func lockGuardedStyleFinishesNormallyAndWhenCancelled() async throws {
    // The download completes when `finish` is called with a byte count; `stop` records a stop.
    final class Download: Sendable {
      let started = Gate()
      let stops = Counter()
      let finish = LockedValue<(@Sendable (Int) -> Void)?>(nil)
      func start(_ completion: @escaping @Sendable (Int) -> Void) -> @Sendable () -> Void {
        finish.withLock { $0 = completion }
        started.open()
        return { self.stops.increment() }
      }
      func complete(_ bytes: Int) { finish.withLock { $0 }?(bytes) }
    }

    // Normal completion, OperationQueue then adapter.
    let referenceDownload = Download()
    let reference = LockedDownloadOperation(download: referenceDownload.start)
    let foundation = OperationQueue()
    foundation.addOperation(reference)
    await referenceDownload.started.wait()
    referenceDownload.complete(512)
    await foundation.allFinished()
    #expect(reference.bytes == 512 && !reference.isCancelled)

    let queue = ActorQueue()
    let download = Download()
    let handle = try queue.addOperation(legacy: LockedDownloadOperation(download: download.start))
    await download.started.wait()
    download.complete(512)
    #expect(try await handle.value.bytes == 512)

    // Cancelled while executing: its cancel() override stops the download and finishes.
    let cancelledReferenceDownload = Download()
    let cancelledReference = LockedDownloadOperation(download: cancelledReferenceDownload.start)
    foundation.addOperation(cancelledReference)
    await cancelledReferenceDownload.started.wait()
    cancelledReference.cancel()
    await foundation.allFinished()
    #expect(cancelledReference.isFinished && cancelledReference.bytes == nil)
    #expect(cancelledReferenceDownload.stops.count == 1)

    let cancelledDownload = Download()
    let cancelledHandle = try queue.addOperation(
      legacy: LockedDownloadOperation(download: cancelledDownload.start))
    await cancelledDownload.started.wait()
    cancelledHandle.cancel()
    await cancelledHandle.waitUntilFinished()
    #expect(cancelledHandle.state == .cancelled)
    #expect(cancelledDownload.stops.count == 1)
    await #expect(throws: CancellationError.self) { try await cancelledHandle.value }
  }

  @Test func blockOperationWithSeveralBlocksAndACompletionBlock() async throws {
    func makeOperation(_ blocks: Recorder<Int>, _ completions: CountdownGate, _ completed: Counter)
      -> BlockOperation
    {
      let operation = BlockOperation { blocks.append(1) }
      operation.addExecutionBlock { blocks.append(2) }
      operation.addExecutionBlock { blocks.append(3) }
      operation.completionBlock = {
        completed.increment()
        completions.signal()
      }
      return operation
    }

    let referenceBlocks = Recorder<Int>()
    let referenceCompletion = CountdownGate(count: 1)
    let referenceCompleted = Counter()
    await runOnOperationQueue([makeOperation(referenceBlocks, referenceCompletion, referenceCompleted)])
    await referenceCompletion.wait()
    #expect(referenceBlocks.snapshot.sorted() == [1, 2, 3])

    let blocks = Recorder<Int>()
    let completion = CountdownGate(count: 1)
    let completed = Counter()
    let queue = ActorQueue()
    let handle = try queue.addOperation(legacy: makeOperation(blocks, completion, completed))
    let operation = try await handle.value
    // Every execution block has run by the time the handle finishes.
    #expect(blocks.snapshot.sorted() == [1, 2, 3])
    #expect(operation.isFinished)
    await completion.wait()
    #expect(completed.count == 1 && referenceCompleted.count == 1)
  }

  @Test func callbackWrapperWaitingOnASemaphoreInMain() async throws {
    let referenceClient = FakeClient()
    let reference = CallbackWrapperOperation(client: referenceClient)
    let foundation = serialReferenceQueue()
    foundation.addOperation(reference)
    await referenceClient.taskStarted.wait()
    referenceClient.firstTask?.complete(.success(42))
    await foundation.allFinished()
    #expect(try reference.result?.get() == 42)

    let client = FakeClient()
    let queue = ActorQueue()
    let handle = try queue.addOperation(legacy: CallbackWrapperOperation(client: client))
    await client.taskStarted.wait()
    client.firstTask?.complete(.success(42))
    let operation = try await handle.value
    #expect(try operation.result?.get() == 42)
    #expect(operation.ranInsideTask == false)
  }

  @Test func dataHandOverThroughDependenciesAndATransferOperation() async throws {
    // Through a protocol cast over `dependencies`.
    func makePair() -> (LoadImageOperation, TiltShiftOperation) {
      let load = LoadImageOperation(url: "a.png")
      let filter = TiltShiftOperation()
      filter.addDependency(load)
      return (load, filter)
    }
    let (referenceLoad, referenceFilter) = makePair()
    await runOnOperationQueue([referenceFilter, referenceLoad], maxConcurrentOperationCount: 1)
    #expect(referenceFilter.image == "tiltShift(image(a.png))")

    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let (load, filter) = makePair()
    let filterHandle = try queue.addOperation(legacy: filter)  // added first: waits, without a slot
    try queue.addOperation(legacy: load)
    #expect(try await filterHandle.value.image == "tiltShift(image(a.png))")

    // Through a tiny transfer operation between them.
    let load2 = LoadImageOperation(url: "b.png")
    let filter2 = TiltShiftOperation()
    let transfer = BlockOperation { filter2.inputImage = load2.image }
    transfer.addDependency(load2)
    filter2.addDependency(transfer)
    let handles = try [filter2, transfer, load2].map { try queue.addOperation(legacy: $0) }
    for handle in handles { await handle.waitUntilFinished() }
    #expect(handles.allSatisfy { $0.state == .finished })
    #expect(filter2.image == "tiltShift(image(b.png))")
  }

  @Test func anOperationThatSignalsFinishTwiceEndsOnce() async throws {
    let referenceCompleted = Counter()
    let referenceDependentRuns = Counter()
    let reference = DoubleFinishOperation()
    reference.completionBlock = { referenceCompleted.increment() }
    let referenceDependent = BlockOperation { referenceDependentRuns.increment() }
    referenceDependent.addDependency(reference)
    await runOnOperationQueue([reference, referenceDependent])
    await reference.bothSignalsSent.wait()

    let completed = Counter()
    let handleCompletions = Counter()
    let probe = ConcurrencyProbe()
    let operation = DoubleFinishOperation()
    operation.completionBlock = { completed.increment() }
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let handle = try queue.addOperation(legacy: operation)
    handle.onCompletion { _ in handleCompletions.increment() }
    // The next operation starts once, after the slot is released once.
    let next = (0..<3).map { _ in
      queue.addOperation {
        probe.enter()
        defer { probe.leave() }
        return 1
      }
    }
    _ = try await handle.value
    for op in next { _ = try await op.value }
    await operation.bothSignalsSent.wait()
    await queue.waitUntilAllOperationsAreFinished()

    #expect(operation.finishSignals.withLock { $0 } == 2)
    #expect(handle.state == .finished && handleCompletions.count == 1)
    #expect(probe.maximum == 1)
    // Foundation runs the completion block and the dependent once; so does the adapter.
    #expect(referenceDependentRuns.count == 1 && referenceCompleted.count <= 1)
    #expect(completed.count <= 1)
  }
}

/// A subclass that takes over `completionBlock` (for its own bookkeeping) cannot hide its end
/// from the adapter, which learns of it through Foundation's dependency mechanism instead.
final class CompletionHijackingOperation: Operation, @unchecked Sendable {  // no stored state
  override var completionBlock: (@Sendable () -> Void)? {
    get { nil }
    set {}  // swallows whatever anyone sets
  }
  override func main() {}
}

@Suite struct FinishDetectionTests {
  /// CI runs the adapter's tests once more with `ACTORQUEUE_ADAPTER_FINISH=sentinelQueue`, the
  /// path Apple platforms take; this proves that run took it.
  @Test func theEndIsLearnedThroughThePathThisProcessChose() async {
    let expected: FinishDetection =
      switch ProcessInfo.processInfo.environment["ACTORQUEUE_ADAPTER_FINISH"] ?? "" {
      case "sentinelQueue": .sentinelQueue
      case "readinessProbe": .readinessProbe
      default: FinishDetection.foundationIsCorelibs ? .readinessProbe : .sentinelQueue
      }
    #expect(FinishDetection.current == expected)

    // A sentinel queue's block runs in its OperationQueue; the probe fires inside start(), on
    // the calling thread, which is in no OperationQueue.
    let operation = BlockOperation {}
    let queueSeen = await withCheckedContinuation { continuation in
      LegacyRuntime.whenFinished([operation]) {
        continuation.resume(returning: OperationQueue.current?.name)
      }
      operation.start()
    }
    switch FinishDetection.current {
    case .sentinelQueue: #expect(queueSeen == "OperationAdapter.sentinel")
    case .readinessProbe: #expect(queueSeen == nil)
    }
  }

  @Test func aSubclassOverridingCompletionBlockStillEndsItsHandle() async throws {
    let reference = CompletionHijackingOperation()
    let referenceDependent = BlockOperation {}
    referenceDependent.addDependency(reference)
    await runOnOperationQueue([referenceDependent, reference])
    #expect(referenceDependent.isFinished)

    let operation = CompletionHijackingOperation()
    operation.completionBlock = { Issue.record("swallowed, never runs") }
    let handle = try ActorQueue().addOperation(legacy: operation)
    _ = try await handle.value
    #expect(handle.state == .finished && operation.isFinished)
  }

  @Test func finishIsLearnedWhetherTheOperationEndsBeforeOrAfterTheAdapterWatchesIt() async throws {
    // Synchronous operations often end before start() returns; asynchronous ones after.
    let queue = ActorQueue()
    let immediate = try (0..<200).map { _ in try queue.addOperation(legacy: BlockOperation {}) }
    let later = try (0..<200).map { _ in
      try queue.addOperation(
        legacy: AsyncFetchOperation { done in DispatchQueue.global().async { done("") } })
    }
    for handle in immediate { _ = try await handle.value }
    for handle in later { _ = try await handle.value }
    #expect(queue.operationCount == 0)
  }
}

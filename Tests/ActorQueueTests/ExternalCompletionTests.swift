import ActorQueue
import TestSupport
import Testing

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#endif

/// Operations whose work runs outside Swift concurrency and reports its end through a callback
/// (the package-internal mechanism the OperationAdapter runs legacy operations on).
@Suite struct ExternalCompletionTests {
  @Test func holdsItsSlotUntilCompletedWithNoTaskWaiting() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let started = Gate()
    let completion = Box<@Sendable (Result<Int, any Error>) -> Void>()
    let external = QueueOperation<Int>(
      name: "external",
      start: { complete in
        completion.value = complete
        started.open()
      },
      cancel: { Issue.record("not cancelled") })
    try queue.addOperation(external)
    await started.wait()
    let next = queue.addOperation(name: "next") { 2 }
    #expect(external.state == .executing)
    #expect(next.state == .ready, "the external operation still holds the only slot")
    completion.value!(.success(1))
    #expect(try await external.value == 1)
    #expect(try await next.value == 2)
    // A second report is ignored.
    completion.value!(.success(99))
    #expect(try await external.value == 1)
    #expect(external.state == .finished)
  }

  @Test func completingInsideStartIsFine() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let operations = (0..<1_000).map { index in
      QueueOperation<Int>(start: { complete in complete(.success(index)) }, cancel: {})
    }
    try queue.addOperations(operations)
    var sum = 0
    for operation in operations { sum += try await operation.value }
    #expect(sum == 499_500)
    #expect(queue.operationCount == 0)
  }

  @Test func cancellingWhileRunningCallsItsCancelHandler() async throws {
    let queue = ActorQueue()
    let started = Gate()
    let completion = Box<@Sendable (Result<Void, any Error>) -> Void>()
    let external = QueueOperation<Void>(
      start: { complete in
        completion.value = complete
        started.open()
      },
      cancel: { completion.value?(.failure(CancellationError())) })
    try queue.addOperation(external)
    await started.wait()
    external.cancel()
    let result = await external.result
    #expect(throws: CancellationError.self) { try result.get() }
    #expect(external.state == .cancelled)
    #expect(external.isCancelled)
  }

  @Test func cancelledWhileWaitingNeverStarts() async throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    let external = QueueOperation<Void>(
      start: { _ in Issue.record("a cancelled waiting operation must not start") },
      cancel: { Issue.record("nothing runs, nothing to cancel") })
    try queue.addOperation(external)
    external.cancel()
    #expect(external.state == .cancelled)
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test(
    "External work needs no worker task: its start runs on the thread that gave it its slot, before the call returns"
  )
  func startsOnTheCallingThread() async throws {
    let queue = ActorQueue()
    let startedOn = Box<pthread_t>()
    let external = QueueOperation<Void>(
      start: { complete in
        startedOn.value = pthread_self()
        complete(.success(()))
      }, cancel: {})
    let caller = pthread_self()
    try queue.addOperation(external)
    let thread = try #require(startedOn.value, "started before addOperation returned")
    #expect(pthread_equal(thread, caller) != 0)
    try await external.value
  }

  @Test(
    "Work that reports its end inside its start, 100,000 in a row (10,000 in a debug build) in a serial queue: each next start is queued, not nested"
  )
  func longLineOfSynchronousCompletions() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let count = SearchDepth.size(quick: 10_000, deep: 100_000)
    let ran = Counter()
    let operations = (0..<count).map { _ in
      QueueOperation<Void>(
        start: { complete in
          ran.increment()
          complete(.success(()))
        }, cancel: {})
    }
    try queue.addOperations(operations)
    await queue.waitUntilAllOperationsAreFinished()
    #expect(ran.value == count)
  }

  @Test("Running work holds no reference to its handle: a handle dropped while its work runs is freed")
  func runningWorkDoesNotKeepTheHandle() async throws {
    let queue = ActorQueue()
    let completion = Box<@Sendable (Result<Void, any Error>) -> Void>()
    let started = Gate()
    weak var dropped: QueueOperation<Void>?
    do {
      let external = QueueOperation<Void>(
        start: { complete in
          completion.value = complete
          started.open()
        }, cancel: {})
      dropped = external
      try queue.addOperation(external)
    }
    await started.wait()
    #expect(dropped != nil, "the queue keeps it while it runs")
    completion.value!(.success(()))
    await queue.waitUntilAllOperationsAreFinished()
    #expect(dropped == nil, "freed once it ended, although its work still holds `complete`")
    // A late report, after its record may have been reused, is ignored.
    let next = queue.addOperation(name: "next") { 7 }
    completion.value!(.failure(CancellationError()))
    #expect(try await next.value == 7)
  }

  @Test func failuresAndFreedSlotsLetTheNextOperationsRun() async throws {
    struct Broken: Error {}
    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    let probe = ConcurrencyProbe()
    let operations = (0..<200).map { index in
      QueueOperation<Int>(
        start: { complete in
          probe.enter()
          probe.leave()
          complete(index.isMultiple(of: 10) ? .failure(Broken()) : .success(index))
        }, cancel: {})
    }
    try queue.addOperations(operations)
    await queue.waitUntilAllOperationsAreFinished()
    #expect(operations.filter { $0.state == .failed }.count == 20)
    #expect(operations.filter { $0.state == .finished }.count == 180)
    #expect(probe.maximum <= 2)
  }
}

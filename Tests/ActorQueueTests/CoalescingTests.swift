import ActorQueue
import TestSupport
import Testing

/// A key whose hash is the same for every value: coalescing must still tell keys apart by `==`.
private struct CollidingKey: Hashable, Sendable {
  let value: Int
  func hash(into hasher: inout Hasher) { hasher.combine(0) }
}

private struct LoadError: Error, Equatable {}

@Suite("Coalescing by key", .timeLimit(.minutes(hangLimitMinutes)))
struct CoalescingTests {
  @Test(
    "A second request for a key already loading joins it: one body run, one op in the queue, a handle each")
  func secondRequestJoins() async throws {
    let queue = ActorQueue(name: "images", maxConcurrentOperationCount: 4)
    let runs = Counter()
    let started = Gate()
    let release = Gate()
    let first = queue.addOperation(coalescingBy: "a.png") { () -> String in
      runs.increment()
      started.open()
      await release.wait()
      return "image a"
    }
    await started.wait()
    let second = queue.addOperation(coalescingBy: "a.png") { () -> String in
      runs.increment()
      return "loaded again"
    }
    #expect(first !== second)
    #expect(first.id != second.id)
    #expect(queue.operationCount == 1)
    #expect(queue.operations.count == 1)
    #expect(first.state == .executing && second.state == .executing)
    release.open()
    #expect(try await first.value == "image a")
    #expect(try await second.value == "image a")
    #expect(runs.value == 1)
    #expect(first.state == .finished && second.state == .finished)
  }

  @Test("A waiting op joins too; after the work ended, the same key adds new work")
  func joinWaitingThenNewWork() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let runs = Counter()
    let handles = (0..<3).map { _ in
      queue.addOperation(coalescingBy: 7) { () -> Int in
        runs.increment()
        return runs.value
      }
    }
    #expect(queue.operationCount == 1)
    #expect(handles.allSatisfy { $0.state == .ready })
    queue.isSuspended = false
    for handle in handles { #expect(try await handle.value == 1) }
    let again = queue.addOperation(coalescingBy: 7) { () -> Int in
      runs.increment()
      return runs.value
    }
    #expect(try await again.value == 2)
  }

  @Test("Cancelling one handle ends it at once; the work goes on for the others, uncancelled")
  func cancelOneHandle() async throws {
    let queue = ActorQueue()
    let started = Gate()
    let release = Gate()
    let sawCancellation = Counter()
    let body: @Sendable () async throws -> Int = {
      started.open()
      await release.wait()
      if Task.isCancelled { sawCancellation.increment() }
      return 42
    }
    let first = queue.addOperation(coalescingBy: "k", body)
    let second = queue.addOperation(coalescingBy: "k", body)
    await started.wait()
    first.cancel()
    #expect(first.state == .cancelled)
    #expect(first.isCancelled)
    await #expect(throws: CancellationError.self) { try await first.value }
    #expect(second.state == .executing && !second.isCancelled)
    release.open()
    #expect(try await second.value == 42)
    #expect(sawCancellation.value == 0)
  }

  @Test("Cancelling every handle cancels the shared work")
  func cancelEveryHandle() async throws {
    let queue = ActorQueue()
    let started = Gate()
    let body: @Sendable () async throws -> Int = {
      started.open()
      await untilCancelled()
      throw CancellationError()
    }
    let first = queue.addOperation(coalescingBy: "k", body)
    let second = queue.addOperation(coalescingBy: "k", body)
    await started.wait()
    let shared = try #require(queue.operations.first)
    first.cancel()
    #expect(!shared.isCancelled)
    second.cancel()
    await shared.waitUntilFinished()
    #expect(shared.state == .cancelled)
    #expect(queue.operationCount == 0)
  }

  @Test(
    "Cancelling the queue's work ends every handle .cancelled; a failure fails every handle with its error")
  func endsPropagate() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let cancelled = (0..<2).map { _ in queue.addOperation(coalescingBy: "c") { 1 } }
    queue.cancelAllOperations()
    #expect(cancelled.allSatisfy { $0.state == .cancelled && $0.isCancelled })
    let failed = (0..<2).map { _ in queue.addOperation(coalescingBy: "f") { () -> Int in throw LoadError() } }
    queue.isSuspended = false
    for handle in failed {
      await #expect(throws: LoadError.self) { try await handle.value }
      #expect(handle.state == .failed)
    }
  }

  @Test(
    "The work runs at the highest priority a waiting caller asked for, and drops back when that caller cancels"
  )
  func priorityIsTheHighestAsked() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let release = Gate()
    let started = Gate()
    queue.addOperation {
      started.open()
      await release.wait()
    }
    await started.wait()
    let order = Recorder<String>()
    queue.addOperation(priority: .normal) { order.append("normal") }
    let low = queue.addOperation(priority: .low, coalescingBy: "k") { order.append("shared") }
    let high = queue.addOperation(priority: .high, coalescingBy: "k") { order.append("shared again") }
    let shared = try #require(queue.operations.last)
    #expect(shared.queuePriority == .high)
    high.cancel()
    #expect(shared.queuePriority == .low)
    high.queuePriority = .veryHigh  // an ended handle asks for nothing
    low.queuePriority = .veryHigh
    #expect(shared.queuePriority == .veryHigh)
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(order.snapshot == ["shared", "normal"])
  }

  @Test("A joined handle is a dependency like any op, and takes no dependency of its own")
  func handleAsDependency() async throws {
    let queue = ActorQueue()
    let release = Gate()
    let handle = queue.addOperation(coalescingBy: "k") { () -> Int in
      await release.wait()
      return 3
    }
    let after = queue.addOperation(after: handle) { $0 * 2 }
    let other = QueueOperation<Void> {}
    #expect(throws: ActorQueueError.joinedSharedWork) { try handle.addDependency(other) }
    #expect(handle.dependencies.isEmpty)
    #expect(throws: ActorQueueError.alreadyEnqueued) { try queue.addOperation(handle) }
    release.open()
    #expect(try await after.value == 6)
  }

  @Test("Keys are per queue, and equal hashes with unequal keys do not join")
  func keysPerQueueAndByEquality() async throws {
    let first = ActorQueue()
    let second = ActorQueue()
    first.isSuspended = true
    second.isSuspended = true
    first.addOperation(coalescingBy: "k") { 1 }
    second.addOperation(coalescingBy: "k") { 2 }
    let a = first.addOperation(coalescingBy: CollidingKey(value: 1)) { 10 }
    let b = first.addOperation(coalescingBy: CollidingKey(value: 2)) { 20 }
    let c = first.addOperation(coalescingBy: CollidingKey(value: 1)) { 30 }
    #expect(first.operationCount == 3)
    #expect(second.operationCount == 1)
    first.isSuspended = false
    second.isSuspended = false
    #expect(try await a.value == 10)
    #expect(try await b.value == 20)
    #expect(try await c.value == 10)
  }

  @Test("Each handle's events mirror the shared work; the queue's events report it once")
  func eventsMirror() async throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    let queueEvents = queue.events
    let first = queue.addOperation(coalescingBy: "k") { 1 }
    let second = queue.addOperation(coalescingBy: "k") { 1 }
    let firstEvents = first.events
    let secondEvents = second.events
    queue.isSuspended = false
    _ = try await first.value
    var seen: [OperationState] = []
    for await state in firstEvents { seen.append(state) }
    #expect(seen == [.ready, .executing, .finished])
    seen = []
    for await state in secondEvents { seen.append(state) }
    #expect(seen == [.ready, .executing, .finished])
    var operationIDs = Set<OperationID>()
    for await event in queueEvents {
      if case .operation(let id, _, let state) = event.kind {
        operationIDs.insert(id)
        if state.isTerminal { break }
      }
    }
    #expect(operationIDs.count == 1)
    #expect(!operationIDs.contains(first.id) && !operationIDs.contains(second.id))
  }
}

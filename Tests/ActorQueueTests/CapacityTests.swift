import ActorQueueTesting
import Foundation
import TestSupport
import Testing

@testable import ActorQueue

/// Bounded capacity (beyond.md §1.11 d), on gates: no test sleeps. A submitter is known to wait
/// once it is suspended in the scheduler's line (`suspendedSubmitters`).
@Suite("Bounded capacity", .timeLimit(.minutes(hangLimitMinutes)))
struct CapacityTests {
  /// Starts `addOperationWaitingForCapacity(name:)` in a task and returns once the submitter
  /// suspended in `queue`'s line, as the `position`-th waiter.
  private static func waitingSubmitter(
    _ name: String, on queue: ActorQueue, position: Int, priority: OperationPriority = .normal,
    body: @escaping @Sendable () async -> Void = {}
  ) async -> Task<QueueOperation<Void>, any Error> {
    let task = Task { try await queue.addOperationWaitingForCapacity(name: name, priority: priority, body) }
    #expect(await eventually { suspendedSubmitters(of: queue).count == position })
    return task
  }

  @Test("Capacity 2: a third waiting submission suspends until an operation ends; waiters are served FIFO")
  func thirdWaitsAndWaitersAreServedInOrder() async throws {
    let queue = ActorQueue(name: "bounded", maxConcurrentOperationCount: 1)
    queue.capacity = 2
    #expect(queue.capacity == 2)
    let gates = (0..<5).map { _ in Gate() }
    let started = Recorder<String>()
    func body(_ name: String, _ gate: Gate) -> @Sendable () async -> Void {
      {
        started.append(name)
        await gate.wait()
      }
    }
    // Space free: added before the call returns.
    let x = try await queue.addOperationWaitingForCapacity(name: "x", body("x", gates[0]))
    let y = try await queue.addOperationWaitingForCapacity(name: "y", body("y", gates[1]))
    #expect(queue.operationCount == 2)
    let a = await Self.waitingSubmitter("a", on: queue, position: 1, body: body("a", gates[2]))
    let b = await Self.waitingSubmitter("b", on: queue, position: 2, body: body("b", gates[3]))
    let c = await Self.waitingSubmitter("c", on: queue, position: 3, body: body("c", gates[4]))
    // Waiting submitters hold nothing: not in the queue, listed by the wait report with `capacity`.
    #expect(queue.operations.map(\.name) == ["x", "y"])
    let report = queue.waitReport()
    #expect(report.map(\.name) == ["y", "a", "b", "c"])
    #expect(report.dropFirst().allSatisfy { $0.waitingFor == [.capacity] && $0.state == .pending })
    #expect(report.last?.description.hasSuffix("pending: capacity") == true)

    gates[0].open()
    try await x.value
    // x's end added a in the same hold of the lock: first come, first served.
    let addedA = try await a.value
    #expect(addedA.name == "a")
    #expect(queue.operations.map(\.name) == ["y", "a"])
    #expect(suspendedSubmitters(of: queue).count == 2)
    gates[1].open()
    try await y.value
    #expect(try await b.value.name == "b")
    #expect(queue.operations.map(\.name) == ["a", "b"])
    for gate in gates[2...] { gate.open() }
    #expect(try await c.value.name == "c")
    await queue.waitUntilAllOperationsAreFinished()
    #expect(started.snapshot == ["x", "y", "a", "b", "c"])
    #expect(queue.waitReport().isEmpty)
  }

  @Test(
    "tryAddOperation returns nil when the queue is full, adding nothing, and the handle once there is space")
  func tryAddReturnsNilWhenFull() async throws {
    let queue = ActorQueue(name: "try", maxConcurrentOperationCount: 1)
    queue.capacity = 1
    let release = Gate()
    let first = try #require(queue.tryAddOperation(name: "first") { await release.wait() })
    #expect(queue.tryAddOperation(name: "refused") { 42 } == nil)
    #expect(queue.tryAddOperation(name: "refused", traits: [.tags("capacity-try")]) {} == nil)
    #expect(queue.operations.map(\.name) == ["first"])
    #expect(queue.operations(tagged: "capacity-try").isEmpty)
    release.open()
    try await first.value
    let second = try #require(queue.tryAddOperation(name: "second", traits: [.tags("capacity-try")]) { 7 })
    #expect(try await second.value == 7)
    #expect(second.tags == ["capacity-try"])
  }

  @Test("The synchronous add still accepts beyond the capacity, and what it adds counts")
  func synchronousAddAcceptsAndCounts() async throws {
    let queue = ActorQueue(name: "sync", maxConcurrentOperationCount: 1)
    queue.capacity = 1
    let release = Gate()
    let ops = (0..<3).map { i in queue.addOperation(name: "sync \(i)") { await release.wait() } }
    #expect(queue.operationCount == 3)
    #expect(queue.tryAddOperation {} == nil)
    let waiter = await Self.waitingSubmitter("late", on: queue, position: 1)
    release.open()
    for op in ops { await op.waitUntilFinished() }
    // Served only once the count fell below 1: after all three ended.
    let late = try await waiter.value
    try await late.value
    #expect(ops.allSatisfy { $0.state == .finished })
  }

  @Test("Cancelling a waiting submitter throws CancellationError, adds nothing, and serves the next waiter")
  func cancellingAWaiterAddsNothing() async throws {
    let queue = ActorQueue(name: "cancel", maxConcurrentOperationCount: 1)
    queue.capacity = 1
    let release = Gate()
    let blocker = queue.addOperation(name: "blocker") { await release.wait() }
    let ran = Recorder<String>()
    let first = await Self.waitingSubmitter("first", on: queue, position: 1) { ran.append("first") }
    let second = await Self.waitingSubmitter("second", on: queue, position: 2) { ran.append("second") }
    let firstID = suspendedSubmitters(of: queue)[0]
    first.cancel()
    let error = await #expect(throws: CancellationError.self) { try await first.value }
    #expect(error != nil)
    #expect(suspendedSubmitters(of: queue).count == 1)
    #expect(!queue.waitReport().contains { $0.id == firstID })
    release.open()
    await blocker.waitUntilFinished()
    let served = try await second.value
    try await served.value
    await queue.waitUntilAllOperationsAreFinished()
    #expect(ran.snapshot == ["second"])

    // A task cancelled before it calls adds nothing, even with space free.
    let cancelled = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await queue.addOperationWaitingForCapacity(name: "never") { ran.append("never") }
    }
    await #expect(throws: CancellationError.self) { try await cancelled.value }
    #expect(queue.operationCount == 0)
    #expect(ran.snapshot == ["second"])
  }

  @Test("Lowering the capacity below the count cancels nothing; raising it serves waiters at once")
  func loweringCancelsNothingRaisingServes() async throws {
    let queue = ActorQueue(name: "lower", maxConcurrentOperationCount: 1)
    queue.capacity = 3
    let release = Gate()
    let ops = (0..<3).map { i in queue.addOperation(name: "op \(i)") { await release.wait() } }
    queue.capacity = 1
    #expect(queue.operationCount == 3)
    #expect(ops.allSatisfy { !$0.isCancelled && !$0.isFinished })
    let a = await Self.waitingSubmitter("a", on: queue, position: 1)
    let b = await Self.waitingSubmitter("b", on: queue, position: 2)
    let c = await Self.waitingSubmitter("c", on: queue, position: 3)
    queue.capacity = 5
    // Added in the setter's hold of the lock, before it returned: 3 + 2 = 5, and c still waits.
    #expect(queue.operations.map(\.name) == ["op 0", "op 1", "op 2", "a", "b"])
    #expect(suspendedSubmitters(of: queue).count == 1)
    queue.capacity = nil
    #expect(queue.capacity == nil)
    #expect(queue.operations.map(\.name).last == "c")
    release.open()
    for task in [a, b, c] { try await task.value.value }
    await queue.waitUntilAllOperationsAreFinished()
    #expect(ops.allSatisfy { $0.state == .finished })
  }

  @Test("Operations in a retry's backoff, paused or waiting for a dependency count towards the capacity")
  func backoffAndPausedCount() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "count", clock: clock.queueClock)
    queue.capacity = 3
    let retrying = queue.addOperation(
      name: "retrying", traits: [.retry(.attempts(2, backoff: .constant(.seconds(10)), jitter: .none))]
    ) { () throws -> Int in
      guard ActorQueue.currentAttempt?.number == 2 else { throw TestFailure() }
      return 1
    }
    await clock.settle()
    #expect(retrying.state == .pending && retrying.attemptCount == 1)
    let held = QueueOperation(name: "held") {}
    held.pause()
    try queue.addOperation(held)
    let dependent = QueueOperation(name: "dependent") {}
    try dependent.addDependency(retrying)
    try queue.addOperation(dependent)
    #expect(queue.operationCount == 3)
    #expect(queue.tryAddOperation {} == nil)
    clock.advance(by: .seconds(10))
    #expect(try await retrying.value == 1)
    try await dependent.value
    #expect(queue.tryAddOperation {} != nil)
    held.resume()
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test(
    "cancelAllOperations() cancels the queue's operations, not the submitters waiting: they are served after")
  func cancelAllLeavesWaitingSubmitters() async throws {
    let queue = ActorQueue(name: "cancel all", maxConcurrentOperationCount: 1)
    queue.capacity = 2
    queue.isSuspended = true
    let held = (0..<2).map { i in queue.addOperation(name: "held \(i)") {} }
    let a = await Self.waitingSubmitter("a", on: queue, position: 1)
    let b = await Self.waitingSubmitter("b", on: queue, position: 2)
    let c = await Self.waitingSubmitter("c", on: queue, position: 3)
    queue.cancelAllOperations()
    #expect(held.allSatisfy { $0.state == .cancelled })
    // The two spaces went to a and b, in the same call, after its cancellations: not cancelled.
    #expect(queue.operations.map(\.name) == ["a", "b"])
    #expect(queue.operations.allSatisfy { $0.state == .ready })
    #expect(suspendedSubmitters(of: queue).count == 1)
    queue.isSuspended = false
    for task in [a, b, c] { try await task.value.value }
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test("A served operation competes for the slot the end freed: a higher priority one starts first")
  func servedOperationCompetesForTheFreedSlot() async throws {
    let queue = ActorQueue(name: "compete", maxConcurrentOperationCount: 1)
    queue.capacity = 2
    let release = Gate()
    let order = Recorder<String>()
    let running = queue.addOperation(name: "running") { await release.wait() }
    _ = queue.addOperation(name: "normal") { order.append("normal") }
    let urgent = await Self.waitingSubmitter("urgent", on: queue, position: 1, priority: .veryHigh) {
      order.append("urgent")
    }
    release.open()
    await running.waitUntilFinished()
    try await urgent.value.value
    await queue.waitUntilAllOperationsAreFinished()
    #expect(order.snapshot == ["urgent", "normal"])
  }

  @Test("With space free on an idle queue, a waiting add with traits starts its operation at once")
  func waitingAddWithTraitsOnAnIdleQueue() async throws {
    let queue = ActorQueue(name: "idle")
    queue.capacity = 4
    let tagged = try await queue.addOperationWaitingForCapacity(traits: [.tags("capacity-idle")]) { 3 }
    #expect(try await tagged.value == 3)
    let timed = try await queue.addOperationWaitingForCapacity(traits: [.timeout(.seconds(60))]) { 4 }
    #expect(try await timed.value == 4)
  }

  @Test("A waiting submitter's operation with traits gets them once added; its deadline counts from then")
  func traitsApplyOnceAdded() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "traits", maxConcurrentOperationCount: 1, clock: clock.queueClock)
    queue.capacity = 1
    let release = Gate()
    let blocker = queue.addOperation(name: "blocker") { await release.wait() }
    let waiter = Task {
      try await queue.addOperationWaitingForCapacity(
        name: "tagged", traits: [.tags("capacity-traits"), .deadline(in: .seconds(5))]
      ) { 5 }
    }
    #expect(await eventually { suspendedSubmitters(of: queue).count == 1 })
    // Not added: no tag reaches it, and time passing does not fail it.
    ActorQueue.cancelOperations(tagged: "capacity-traits")
    clock.advance(by: .seconds(60))
    release.open()
    await blocker.waitUntilFinished()
    let operation = try await waiter.value
    #expect(operation.tags == ["capacity-traits"])
    #expect(try await operation.value == 5)
  }
}

/// Foundation has no bound: `addOperation` always accepts, and the usual stand-in, a semaphore
/// waited on before it, blocks the producer's thread.
@Suite("Bounded capacity against OperationQueue", .timeLimit(.minutes(hangLimitMinutes)))
struct CapacityFoundationTests {
  @Test(
    "OperationQueue takes a third operation at once; ActorQueue with capacity 2 refuses it (tryAdd) or waits")
  func foundationHasNoBound() async throws {
    let legacy = OperationQueue()
    legacy.maxConcurrentOperationCount = 1
    legacy.isSuspended = true
    for _ in 0..<3 { legacy.addOperation {} }
    #expect(legacy.operationCount == 3)
    legacy.cancelAllOperations()
    legacy.isSuspended = false
    await legacy.allFinished()

    let queue = ActorQueue(name: "bounded", maxConcurrentOperationCount: 1)
    queue.capacity = 2
    queue.isSuspended = true
    for _ in 0..<2 { _ = try #require(queue.tryAddOperation {}) }
    #expect(queue.tryAddOperation {} == nil)
    #expect(queue.operationCount == 2)
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
  }
}

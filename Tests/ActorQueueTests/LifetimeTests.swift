import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ActorQueue

@Suite("Lifetime", .timeLimit(.minutes(hangLimitMinutes)))
struct LifetimeTests {
  @Test("A queue is freed after its work: the actor and its core")
  func queueFreedAfterWork() async throws {
    var queue: ActorQueue? = ActorQueue(name: "transient", maxConcurrentOperationCount: 2)
    let weakQueue = WeakReference(queue!)
    let weakCore = QueueRecordProbe(queue!)
    let operations = (0..<50).map { index in queue!.addOperation { index } }
    await queue!.waitUntilAllOperationsAreFinished()
    queue = nil
    #expect(weakQueue.isFreed)
    // The worker task that ended the last op lets go of the core as it retires.
    #expect(await eventually { weakCore.isFreed })
    #expect(try await operations[49].value == 49)
  }

  @Test("A released queue keeps running its ops (as in Foundation); its core is freed once they end")
  func releasedQueueFinishesItsWork() async throws {
    var queue: ActorQueue? = ActorQueue(maxConcurrentOperationCount: 1)
    let weakCore = QueueRecordProbe(queue!)
    let started = Gate()
    let release = Gate()
    let first = queue!.addOperation { () -> Int in
      started.open()
      await release.wait()
      return 1
    }
    let second = queue!.addOperation { 2 }
    await started.wait()
    queue = nil
    // Not suspended: nothing is cancelled, the work goes on.
    #expect(!weakCore.isFreed)
    #expect(first.isExecuting && second.isReady && !second.isCancelled)
    release.open()
    #expect(try await first.value == 1)
    #expect(try await second.value == 2)
    #expect(await eventually { weakCore.isFreed })
  }

  @Test("OperationQueue: a released queue keeps running its ops")
  func releasedQueueFinishesItsWorkFoundation() async {
    let runs = Counter()
    let last: Operation
    do {
      let queue = OperationQueue()
      queue.maxConcurrentOperationCount = 1
      let operations = (0..<3).map { _ in BlockOperation { runs.increment() } }
      for operation in operations { queue.addOperation(operation) }
      last = operations[2]
    }
    await last.finished()
    #expect(runs.value == 3)
  }

  @Test("A suspended queue released by its owner cancels its waiting ops, and frees them")
  func releasedSuspendedQueueCancelsWaitingOps() async throws {
    var queue: ActorQueue? = ActorQueue(name: "abandoned", maxConcurrentOperationCount: 1)
    let weakCore = QueueRecordProbe(queue!)
    let started = Gate()
    let release = Gate()
    let runs = Counter()
    let executing = queue!.addOperation { () -> String in
      started.open()
      await release.wait()
      return "ran"
    }
    await started.wait()
    queue!.isSuspended = true
    let kept = queue!.addOperation(name: "kept") { runs.increment() }
    let completions = Counter()
    kept.onCompletion { _ in completions.increment() }
    let waiter = Task { await kept.result }
    var weakDropped: [WeakReference<AnyQueueOperation>] = []
    do {
      // Ops only the queue holds.
      for index in 0..<5 {
        let operation = queue!.addOperation(name: "dropped\(index)") { runs.increment() }
        weakDropped.append(WeakReference<AnyQueueOperation>(operation))
      }
    }
    #expect(queue!.operationCount == 7)
    #expect(weakDropped.allSatisfy { !$0.isFreed })

    queue = nil
    // The waiting ops end at once, cancelled; their handlers ran; waiters wake.
    #expect(kept.state == .cancelled)
    #expect(completions.value == 1)
    let result = await waiter.value
    #expect(throws: CancellationError.self) { try result.get() }
    #expect(weakDropped.allSatisfy { $0.isFreed })
    // The executing op is not interrupted.
    #expect(executing.isExecuting && !executing.isCancelled)
    release.open()
    #expect(try await executing.value == "ran")
    #expect(runs.value == 0)
    #expect(await eventually { weakCore.isFreed })
  }

  @Test("A suspended queue with only waiting ops is freed with them at once when released")
  func releasedSuspendedQueueFreedAtOnce() async {
    var queue: ActorQueue? = ActorQueue()
    queue!.isSuspended = true
    let weakQueue = WeakReference(queue!)
    let weakCore = QueueRecordProbe(queue!)
    let operation = queue!.addOperation { 1 }
    queue = nil
    #expect(weakQueue.isFreed)
    #expect(weakCore.isFreed)
    #expect(operation.state == .cancelled)
  }

  @Test(
    "OperationQueue: a suspended queue released by its owner leaves its waiting ops unfinished forever (the leak ActorQueue closes)"
  )
  func releasedSuspendedQueueFoundation() async {
    let runs = Counter()
    let operation = BlockOperation { runs.increment() }
    do {
      let queue = OperationQueue()
      queue.isSuspended = true
      queue.addOperation(operation)
    }
    #expect(!operation.isFinished)
    #expect(!operation.isCancelled)
    #expect(runs.value == 0)
  }

  @Test("A finished op holds no closures and is freed once nobody references it")
  func finishedOperationFreed() async throws {
    let queue = ActorQueue()
    var operation: QueueOperation<Int>? = queue.addOperation { 1 }
    let weakOperation = WeakReference(operation!)
    #expect(try await operation!.value == 1)
    operation = nil
    #expect(await eventually { weakOperation.isFreed })
    #expect(queue.operationCount == 0)
  }

  @Test("Ops of a non-suspended queue released while waiting for a slot still run")
  func releasedBusyQueueStillRuns() async throws {
    let release = Gate()
    let started = Gate()
    let tail: QueueOperation<Int>
    do {
      let queue = ActorQueue(maxConcurrentOperationCount: 1)
      queue.addOperation {
        started.open()
        await release.wait()
      }
      tail = queue.addOperation { 42 }
    }
    await started.wait()
    release.open()
    #expect(try await tail.value == 42)
  }

  @Test("An executed op's body is released before the op is seen ended: its completion handlers see it gone")
  func bodyReleasedBeforeEndIsSeen() async throws {
    final class Captured: Sendable {}
    let queue = ActorQueue()
    queue.isSuspended = true  // the handler is registered before the body can run
    var captured: Captured? = Captured()
    let weakCaptured = WeakReference(captured!)
    let operation = queue.addOperation { [captured] in _ = captured }
    captured = nil
    let seenAtCompletion = LockedValue<Bool?>(nil)
    operation.onCompletion { _ in seenAtCompletion.withLock { $0 = weakCaptured.isFreed } }
    queue.isSuspended = false
    try await operation.value
    // Handlers run after the end is published, on the thread that ended the op: no waiting.
    #expect(weakCaptured.isFreed)
    #expect(seenAtCompletion.withLock { $0 } == true)
  }

  @Test(
    "A body that returns () and cannot throw is kept as given (the non-generic overload); every other body is wrapped to box its value"
  )
  func voidBodiesAreKeptAsGiven() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let stored: @Sendable () async -> Void = {}
    let literal = queue.addOperation {}
    let value = queue.addOperation(stored)
    let throwing = queue.addOperation { () async throws -> Void in }
    let number: QueueOperation<Int> = queue.addOperation { 7 }
    let discarded = queue.addOperation { [stored] in await stored() }
    let kinds = Engine.read { scheduler in
      [literal, value, throwing, number, discarded].map { scheduler.bodyIsKeptAsGiven($0.recordIndex) }
    }
    #expect(kinds == [true, true, false, false, true])
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(Engine.read { $0.bodyIsKeptAsGiven(literal.recordIndex) } == nil, "the body is released once run")
    try await literal.value
    try await value.value
    try await throwing.value
    #expect(try await number.value == 7)
    #expect([literal, value, throwing, discarded].allSatisfy { $0.state == .finished })
  }

  @Test("A () body that returns after cancel() finishes, as a body returning a value does")
  func voidBodyReturningAfterCancelFinishes() async throws {
    let queue = ActorQueue()
    let started = Gate()
    let release = Gate()
    let nothing = queue.addOperation {
      started.open()
      await release.wait()
    }
    await started.wait()
    #expect(Engine.read { $0.bodyIsKeptAsGiven(nothing.recordIndex) } == nil, "claimed by its worker")
    nothing.cancel()
    #expect(nothing.isCancelled && nothing.isExecuting)
    release.open()
    await nothing.waitUntilFinished()
    #expect(nothing.state == .finished)
    try await nothing.value
  }

  @Test(
    "An op whose body returns () ends with an outcome that holds no box: ending it allocates nothing and writes no shared reference count; any other value gets its own box"
  )
  func voidOutcomeHoldsNoBox() async throws {
    #expect(OutcomeBox.success(()).holdsNoBox)
    #expect(!OutcomeBox.success(1).holdsNoBox)
    let queue = ActorQueue()
    let nothing = queue.addOperation {}
    let throwingNothing = queue.addOperation { () async throws -> Void in }
    let number = queue.addOperation { 7 }
    await queue.waitUntilAllOperationsAreFinished()
    #expect(Engine.read { $0.outcome(of: nothing.recordIndex) }?.holdsNoBox == true)
    #expect(Engine.read { $0.outcome(of: throwingNothing.recordIndex) }?.holdsNoBox == true)
    #expect(Engine.read { $0.outcome(of: number.recordIndex) }?.holdsNoBox == false)
    #expect(try await number.value == 7)
    try await nothing.value
    try await throwingNothing.value
  }
}

import ActorQueue
import Foundation
import TestSupport
import Testing

/// A body that reports its start, waits until released, and records what it saw of its own
/// cancellation.
private final class CancellableBody: Sendable {
  let started = Gate()
  let release = Gate()
  let handlerFired = Gate()
  let sawCancelled = Box<Bool>()

  /// Runs up to the point where the outcome is chosen.
  func run() async {
    await withTaskCancellationHandler {
      started.open()
      await release.wait()
      sawCancelled.value = Task.isCancelled
    } onCancel: {
      handlerFired.open()
    }
  }
}

@Suite("Cancellation", .timeLimit(.minutes(hangLimitMinutes)))
struct CancellationTests {
  @Test(
    "A cancelled waiting op ends at once: its body never runs, value throws, handlers and waiters run, no slot is used (P2)"
  )
  func cancelWaitingOp() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let log = StreamLog(queue.events)
    let started = Gate()
    let release = Gate()
    let blocker = queue.addOperation(name: "blocker") {
      started.open()
      await release.wait()
    }
    let runs = Counter()
    let victim = queue.addOperation(name: "victim") { runs.increment() }
    let next = queue.addOperation(name: "next") { "next" }
    let completed = Box<Bool>()
    victim.onCompletion { result in
      if case .failure(let error) = result { completed.value = error is CancellationError }
    }
    let waiter = Task { await victim.result }
    await started.wait()
    #expect(await eventually { registeredWaiters(of: victim) == 1 })

    victim.cancel()
    // All at once, before cancel() returned.
    #expect(victim.state == .cancelled)
    #expect(victim.isCancelled && victim.isFinished && !victim.isExecuting && !victim.isReady)
    #expect(completed.value == true)
    #expect(queue.operations == [blocker, next])
    let waited = await waiter.value
    #expect(throws: CancellationError.self) { try waited.get() }
    await #expect(throws: CancellationError.self) { try await victim.value }

    // No slot was used: the next op is the one that starts after the blocker.
    release.open()
    #expect(try await next.value == "next")
    #expect(runs.value == 0)
    let events = await log.waitForEnd(of: [blocker, victim, next])
    log.stop()
    #expect(states(of: victim, in: events) == [.ready, .cancelled])
    #expect(startOrder(in: events) == [blocker.id, next.id])
    // The cancellation happened while the blocker held the only slot.
    #expect(
      events.first { $0.operationID == victim.id && $0.operationState == .cancelled }?.executingCount == 1)
  }

  @Test("OperationQueue: a cancelled waiting op stays queued until its turn; its body never runs (P2)")
  func cancelWaitingOpFoundation() async {
    // A blocker holds the only slot; the victim waits behind it and is cancelled (the script is
    // shared with the side-by-side P2 test).
    let observed = await FoundationParityTests.cancelScriptFoundation()
    #expect(observed.cancelledAtOnce)
    // The difference: Foundation keeps it, unfinished and counted, while the blocker runs.
    #expect(!observed.finishedAtOnce)
    #expect(observed.operationCountAfterCancel == 2)
    #expect(!observed.completionRanBeforeSlotFreed)
    #expect(observed.finishedInTheEnd)
    #expect(!observed.bodyRan)
  }

  @Test("Cancelling only the normal-priority ops leaves the high ones to run")
  func cancelOnlyNormalOps() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let recorder = Recorder<String>()
    var normal: [AnyQueueOperation] = []
    var high: [AnyQueueOperation] = []
    for index in 0..<4 {
      normal.append(queue.addOperation(name: "n\(index)") { recorder.append("n\(index)") })
      high.append(queue.addOperation(name: "h\(index)", priority: .high) { recorder.append("h\(index)") })
    }
    for operation in queue.operations where operation.queuePriority == .normal { operation.cancel() }
    #expect(normal.allSatisfy { $0.state == .cancelled })
    #expect(queue.operations == high)
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.snapshot == ["h0", "h1", "h2", "h3"])
    #expect(high.allSatisfy { $0.state == .finished && !$0.isCancelled })
  }

  @Test("OperationQueue: cancelling only the normal-priority ops leaves the high ones to run")
  func cancelOnlyNormalOpsFoundation() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    queue.isSuspended = true
    let recorder = Recorder<String>()
    for index in 0..<4 {
      queue.addOperation(BlockOperation { recorder.append("n\(index)") })
      let high = BlockOperation { recorder.append("h\(index)") }
      high.queuePriority = .high
      queue.addOperation(high)
    }
    for operation in queue.operations where operation.queuePriority == .normal { operation.cancel() }
    queue.isSuspended = false
    await queue.allFinished()
    #expect(recorder.snapshot == ["h0", "h1", "h2", "h3"])
  }

  @Test("Cancelling an executing op cancels the body's Task; it stays executing until the body ends")
  func cancelExecutingOpCancelsTask() async throws {
    let queue = ActorQueue()
    let body = CancellableBody()
    let operation = queue.addOperation { () -> String in
      await body.run()
      return "returned"
    }
    await body.started.wait()
    #expect(!operation.isCancelled)
    operation.cancel()
    #expect(operation.isCancelled)
    #expect(operation.state == .executing)
    await body.handlerFired.wait()  // withTaskCancellationHandler fired
    #expect(operation.isExecuting)
    #expect(queue.operationCount == 1)
    body.release.open()
    #expect(try await operation.value == "returned")
    #expect(body.sawCancelled.value == true)
  }

  enum Ending: String, CaseIterable, Sendable {
    case throwsCancellation, throwsOtherError, returnsValue
  }

  @Test(
    "A cancelled executing op ends by its body: CancellationError or another error -> .cancelled (the error kept as thrownError), value -> .finished; isCancelled in all",
    arguments: Ending.allCases)
  func cancelledExecutingOutcomes(ending: Ending) async throws {
    let queue = ActorQueue()
    let log = StreamLog(queue.events)
    let body = CancellableBody()
    let operation = queue.addOperation(name: ending.rawValue) { () -> Int in
      await body.run()
      switch ending {
      case .throwsCancellation: try Task.checkCancellation()
      case .throwsOtherError: throw TestFailure(code: 42)
      case .returnsValue: break
      }
      return 7
    }
    let completion = Recorder<Result<Int, any Error>>()
    operation.onCompletion { completion.append($0) }
    await body.started.wait()
    operation.cancel()
    await body.handlerFired.wait()
    body.release.open()
    let result = await operation.result
    #expect(operation.isCancelled)
    #expect(body.sawCancelled.value == true)
    #expect(completion.snapshot.count == 1)
    switch ending {
    case .throwsCancellation:
      #expect(operation.state == .cancelled)
      #expect(throws: CancellationError.self) { try result.get() }
      #expect(operation.thrownError == nil)
    case .throwsOtherError:
      // Once cancellation was requested, a thrown error is the body giving up (a URL session's
      // own "cancelled" error, say): the op ends cancelled, and the error stays available.
      #expect(operation.state == .cancelled)
      #expect(throws: CancellationError.self) { try result.get() }
      await #expect(throws: CancellationError.self) { try await operation.value }
      #expect(operation.thrownError as? TestFailure == TestFailure(code: 42))
    case .returnsValue:
      #expect(operation.state == .finished)
      #expect(try result.get() == 7)
      #expect(operation.thrownError == nil)
    }
    let events = await log.waitForEnd(of: operation)
    log.stop()
    #expect(states(of: operation, in: events) == [.ready, .executing, operation.state])
  }

  @Test("A body that throws CancellationError on its own ends .cancelled and counts as cancelled")
  func bodyThrowingCancellationError() async {
    let queue = ActorQueue()
    let operation = queue.addOperation { () throws -> Int in throw CancellationError() }
    await operation.waitUntilFinished()
    #expect(operation.state == .cancelled)
    #expect(operation.isCancelled)
  }

  @Test(
    "cancelAllOperations: waiting ops end at once, executing ones get their tasks cancelled, ended ones are untouched"
  )
  func cancelAll() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    let done = queue.addOperation(name: "done") { 1 }
    #expect(try await done.value == 1)
    let first = CancellableBody()
    let second = CancellableBody()
    let executing1 = queue.addOperation(name: "e1") { () -> Int in
      await first.run()
      try Task.checkCancellation()
      return 1
    }
    let executing2 = queue.addOperation(name: "e2") { () -> Int in
      await second.run()
      return 2  // ignores cancellation
    }
    let runs = Counter()
    let waiting = (0..<5).map { index in queue.addOperation(name: "w\(index)") { runs.increment() } }
    await first.started.wait()
    await second.started.wait()

    queue.cancelAllOperations()
    #expect(waiting.allSatisfy { $0.state == .cancelled })
    #expect(executing1.isExecuting && executing1.isCancelled)
    #expect(executing2.isExecuting && executing2.isCancelled)
    #expect(queue.operations == [executing1, executing2])
    #expect(done.state == .finished && !done.isCancelled)
    await first.handlerFired.wait()
    await second.handlerFired.wait()
    first.release.open()
    second.release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(executing1.state == .cancelled)
    #expect(executing2.state == .finished)
    #expect(try await executing2.value == 2)
    #expect(runs.value == 0)
    // The queue keeps working afterwards.
    #expect(try await queue.addOperation { "after" }.value == "after")
  }

  @Test("OperationQueue: cancelAllOperations cancels waiting and executing ops, not finished ones")
  func cancelAllFoundation() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let done = BlockOperation {}
    queue.addOperation(done)
    await done.finished()
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let executing = BlockOperation {
      started.signal()
      release.wait()
    }
    let runs = Counter()
    let waiting = BlockOperation { runs.increment() }
    for operation in [executing, waiting] { queue.addOperation(operation) }
    await onBlockingThread { started.wait() }
    queue.cancelAllOperations()
    #expect(executing.isCancelled && executing.isExecuting)
    #expect(waiting.isCancelled)
    #expect(!done.isCancelled)
    release.signal()
    await queue.allFinished()
    #expect(runs.value == 0)
  }

  @Test("cancel() on an ended op has no effect")
  func cancelEndedOp() async throws {
    let queue = ActorQueue()
    let operation = queue.addOperation { 5 }
    #expect(try await operation.value == 5)
    operation.cancel()
    #expect(operation.state == .finished)
    #expect(!operation.isCancelled)
    #expect(try await operation.value == 5)
  }

  @Test("Cancelling twice is harmless; cancelling a prepared op ends it before any queue")
  func cancelTwiceAndPrepared() async {
    let prepared = QueueOperation { 1 }
    let handlerRuns = Counter()
    prepared.onCompletion { _ in handlerRuns.increment() }
    prepared.cancel()
    prepared.cancel()
    #expect(prepared.state == .cancelled)
    #expect(handlerRuns.value == 1)
    await #expect(throws: CancellationError.self) { try await prepared.value }

    let queue = ActorQueue()
    let body = CancellableBody()
    let executing = queue.addOperation { await body.run() }
    await body.started.wait()
    executing.cancel()
    executing.cancel()
    await body.handlerFired.wait()
    body.release.open()
    await executing.waitUntilFinished()
    #expect(executing.state == .finished && executing.isCancelled)
  }

  @Test("A cancelled executing op's slot goes to the next op only when its body ends")
  func cancelledExecutingKeepsSlot() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let body = CancellableBody()
    let executing = queue.addOperation { await body.run() }
    let next = queue.addOperation { "next" }
    await body.started.wait()
    executing.cancel()
    await body.handlerFired.wait()
    #expect(next.state == .ready)
    body.release.open()
    #expect(try await next.value == "next")
  }

  @Test("The task of a cancelled executing op is not reused: the next op's body does not see cancellation")
  func cancellationDoesNotLeakIntoNextOp() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let body = CancellableBody()
    let cancelled = queue.addOperation { await body.run() }
    let next = queue.addOperation { Task.isCancelled }
    let afterThat = queue.addOperation { Task.isCancelled }
    await body.started.wait()
    cancelled.cancel()
    await body.handlerFired.wait()
    body.release.open()
    #expect(try await next.value == false)
    #expect(try await afterThat.value == false)
    #expect(!next.isCancelled)
  }

  @Test(
    "Cancelling a waiting op after changing its priority withdraws it cleanly; the others still run in order")
  func cancelAfterReprioritising() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let recorder = Recorder<Int>()
    let operations = (0..<6).map { index in queue.addOperation { recorder.append(index) } }
    operations[1].queuePriority = .high
    operations[1].cancel()
    operations[4].queuePriority = .veryHigh
    operations[4].queuePriority = .low
    operations[4].cancel()
    operations[2].queuePriority = .high
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.snapshot == [2, 0, 3, 5])
  }
}

/// An operation added to an idle queue is claimed for its new worker at once (before that
/// worker's task runs); cancelling it in that window must still reach its body's task, and
/// every run ends in exactly one consistent state.
@Suite struct ImmediateCancellationTests {
  @Test func cancellingRightAfterAddingToAnIdleQueueReachesTheBody() async {
    for _ in 0..<200 {
      let queue = ActorQueue()
      let operation = queue.addOperation { () async throws -> Bool in
        try Task.checkCancellation()
        return true
      }
      operation.cancel()
      let result = await operation.result
      // The body may have returned before its task was cancelled (then the operation finished,
      // with or without isCancelled, as documented); otherwise its task saw the cancellation,
      // however early the task started.
      switch result {
      case .success(let ran):
        #expect(ran && operation.state == .finished)
      case .failure(let error):
        #expect(error is CancellationError)
        #expect(operation.state == .cancelled && operation.isCancelled)
      }
    }
  }
}

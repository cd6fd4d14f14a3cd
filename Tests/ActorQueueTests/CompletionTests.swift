import ActorQueue
import Foundation
import TestSupport
import Testing

/// Something a completion handler captures, to check that the handler is released.
private final class Captured: Sendable {
  let value: Int
  init(_ value: Int) { self.value = value }
}

@Suite("Completion", .timeLimit(.minutes(hangLimitMinutes)))
struct CompletionTests {
  enum Outcome: String, CaseIterable, Sendable {
    case finished, failed, cancelledWhileWaiting, cancelledWhileExecuting
  }

  @Test(
    "onCompletion runs exactly once, with the outcome, for every way an op ends", arguments: Outcome.allCases)
  func exactlyOnce(outcome: Outcome) async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let blocker = Gate()
    let blockerStarted = Gate()
    if outcome == .cancelledWhileWaiting {
      queue.addOperation {
        blockerStarted.open()
        await blocker.wait()
      }
      await blockerStarted.wait()
    }
    let started = Gate()
    let release = Gate()
    let operation = queue.addOperation { () throws -> Int in
      started.open()
      await release.wait()
      if outcome == .failed { throw TestFailure(code: 1) }
      try Task.checkCancellation()
      return 3
    }
    let calls = Recorder<Result<Int, any Error>>()
    let order = Recorder<String>()
    operation.onCompletion {
      calls.append($0)
      order.append("first")
    }
    operation.onCompletion { _ in order.append("second") }
    switch outcome {
    case .finished, .failed:
      release.open()
    case .cancelledWhileWaiting:
      operation.cancel()
      #expect(calls.snapshot.count == 1)  // at once, before cancel() returned
      blocker.open()
    case .cancelledWhileExecuting:
      await started.wait()
      operation.cancel()
      #expect(calls.snapshot.isEmpty)  // the body still runs
      release.open()
    }
    let result = await operation.result
    // Handlers have run before a task awaiting the op resumes.
    #expect(calls.snapshot.count == 1)
    #expect(order.snapshot == ["first", "second"])
    await queue.waitUntilAllOperationsAreFinished()
    // A second cancel, more waiting: still exactly once.
    operation.cancel()
    _ = await operation.result
    #expect(calls.snapshot.count == 1)
    let recorded = try #require(calls.snapshot.first)
    switch outcome {
    case .finished:
      #expect(try recorded.get() == 3)
      #expect(try result.get() == 3)
    case .failed:
      #expect(throws: TestFailure(code: 1)) { try recorded.get() }
      #expect(operation.state == .failed)
    case .cancelledWhileWaiting, .cancelledWhileExecuting:
      #expect(throws: CancellationError.self) { try recorded.get() }
      #expect(operation.state == .cancelled)
    }
  }

  @Test("onCompletion on an ended op runs at once, on the caller's thread, before it returns")
  func atOnceIfTerminal() async throws {
    let queue = ActorQueue()
    let operation = queue.addOperation { "x" }
    #expect(try await operation.value == "x")
    let calls = Recorder<String>()
    operation.onCompletion { result in calls.append((try? result.get()) ?? "error") }
    #expect(calls.snapshot == ["x"])
    operation.onCompletion { _ in calls.append("again") }
    #expect(calls.snapshot == ["x", "again"])

    let cancelled = QueueOperation { 1 }
    cancelled.cancel()
    let cancelledCalls = Counter()
    cancelled.onCompletion { _ in cancelledCalls.increment() }
    #expect(cancelledCalls.value == 1)
  }

  @Test("Handlers are released after they run (P8): captures of a cancelled op's handler are freed at once")
  func handlerReleasedAfterCancel() async {
    let queue = ActorQueue()
    queue.isSuspended = true
    var captured: Captured? = Captured(1)
    let weakCaptured = WeakReference(captured!)
    let operation = queue.addOperation { 1 }
    operation.onCompletion { [captured] _ in _ = captured?.value }
    captured = nil
    #expect(!weakCaptured.isFreed)  // the handler holds it while the op waits
    operation.cancel()
    #expect(weakCaptured.isFreed)
  }

  @Test("Handlers are released after they run (P8): captures of a finished op's handler are freed")
  func handlerReleasedAfterFinish() async throws {
    let queue = ActorQueue()
    let release = Gate()
    var captured: Captured? = Captured(2)
    let weakCaptured = WeakReference(captured!)
    let operation = queue.addOperation { () -> Int in
      await release.wait()
      return 2
    }
    let seen = Box<Int>()
    operation.onCompletion { [captured] _ in seen.value = captured?.value }
    captured = nil
    #expect(!weakCaptured.isFreed)
    release.open()
    #expect(try await operation.value == 2)
    #expect(seen.value == 2)
    // The op lives on (we hold it); its handler does not. (Released by the worker right after
    // it ran the handlers, which may be just after this task resumed.)
    #expect(await eventually { weakCaptured.isFreed })
  }

  @Test("A handler that captures its own op forms no lasting cycle (P8)")
  func handlerCapturingOwnOperation() async throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    var operation: QueueOperation<Int>? = queue.addOperation { 1 }
    let weakOperation = WeakReference(operation!)
    let sawSelf = Box<Bool>()
    operation!.onCompletion { [operation] _ in sawSelf.value = operation!.isFinished }
    // Waiting ops cancelled: handler runs and is dropped, the queue drops the op.
    operation!.cancel()
    operation = nil
    #expect(sawSelf.value == true)
    #expect(weakOperation.isFreed)

    // Same after a body ran: the worker that ran it lets go after it moves on.
    queue.isSuspended = false
    var ran: QueueOperation<Int>? = queue.addOperation { 2 }
    let weakRan = WeakReference(ran!)
    ran!.onCompletion { [ran] _ in _ = ran }
    #expect(try await ran!.value == 2)
    ran = nil
    #expect(await eventually { weakRan.isFreed })
  }

  @Test(
    "OperationQueue: a completionBlock capturing its op keeps it alive until the block is cleared (P8, for the record)"
  )
  func completionBlockCycleFoundation() async {
    let weak: WeakReference<BlockOperation>
    do {
      let queue = OperationQueue()
      let operation = BlockOperation {}
      weak = WeakReference(operation)
      let ran = DispatchSemaphore(value: 0)
      operation.completionBlock = {
        _ = operation.isFinished  // strong capture: the classic retain cycle
        ran.signal()
      }
      queue.addOperation(operation)
      await onBlockingThread { ran.wait() }
    }
    // Foundation keeps the cycle op -> completionBlock -> op (corelibs does not clear it).
    #expect(!weak.isFreed)
  }

  @Test("Handlers run outside the scheduler's lock: they may call back into the queue and the op")
  func handlersMayReenter() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let operation = queue.addOperation { 1 }
    let followUp = Box<QueueOperation<Int>>()
    let seen = Box<(OperationState, Int)>()
    operation.onCompletion { _ in
      seen.value = (operation.state, queue.operationCount)
      followUp.value = queue.addOperation { 2 }
      queue.maxConcurrentOperationCount = 2
      operation.cancel()
    }
    #expect(try await operation.value == 1)
    let next = try #require(followUp.value)
    #expect(try await next.value == 2)
    #expect(seen.value?.0 == .finished)
    #expect(seen.value?.1 == 0)

    // Also for an op cancelled while waiting (handlers run on the canceller's thread).
    queue.isSuspended = true
    let waiting = queue.addOperation { 3 }
    let reentered = Box<Int>()
    waiting.onCompletion { _ in reentered.value = queue.operationCount }
    waiting.cancel()
    #expect(reentered.value == 0)
  }

  @Test("A throwing body ends .failed and value rethrows its error")
  func throwingBodyFails() async {
    let queue = ActorQueue()
    let operation = queue.addOperation { () throws -> Int in throw TestFailure(code: 9) }
    await #expect(throws: TestFailure(code: 9)) { try await operation.value }
    #expect(operation.state == .failed)
    #expect(!operation.isCancelled)
    let result = await operation.result
    #expect(throws: TestFailure(code: 9)) { try result.get() }
  }

  @Test("Every op reaches exactly one terminal state exactly once (per-op events and handlers), many ops")
  func exactlyOnceMany() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 4)
    let handlerCalls = (0..<300).map { _ in Counter() }
    let streams = Recorder<(Int, [OperationState])>()
    var operations: [QueueOperation<Int>] = []
    for index in 0..<300 {
      let operation = queue.addOperation { () throws -> Int in
        if index % 7 == 0 { throw TestFailure() }
        if index % 11 == 0 { throw CancellationError() }
        return index
      }
      operation.onCompletion { _ in handlerCalls[index].increment() }
      operations.append(operation)
      if index % 5 == 0 { operation.cancel() }
    }
    await withTaskGroup(of: Void.self) { group in
      for (index, operation) in operations.enumerated() where index % 3 == 0 {
        let stream = operation.events
        group.addTask {
          var seen: [OperationState] = []
          for await state in stream { seen.append(state) }
          streams.append((index, seen))
        }
      }
    }
    await queue.waitUntilAllOperationsAreFinished()
    #expect(handlerCalls.allSatisfy { $0.value == 1 })
    for (_, seen) in streams.snapshot {
      #expect(seen.filter(\.isTerminal).count == 1)
      #expect(seen.last?.isTerminal == true)
    }
    #expect(operations.allSatisfy { $0.isFinished })
  }
}

import Synchronization
import TestSupport
import Testing

@testable import ActorQueue

/// Found when the pause API was tried as a hostile user would (issue 25): an operation paused at
/// a checkpoint, or held by `pause()` while it waited, in a queue that is not suspended, was never
/// freed once its queue was released and its caller dropped the handle: its task, its body's
/// captures and its handle lived for the rest of the process, and every checkpoint in the process
/// kept its slow path. The rule now: once its queue is released, a held operation is kept alive
/// only by references outside the queue; when its last handle goes, it is cancelled and freed.
@Suite("Reliability: a held operation of a released queue", .timeLimit(.minutes(hangLimitMinutes)))
struct ReleasedQueueHeldOperationTests {
  /// Suspends until `operation` is in `state` (at once if it is now).
  private static func reach(_ operation: AnyQueueOperation, _ state: OperationState) async {
    for await current in operation.events where current == state { return }
  }

  private func reach(_ operation: AnyQueueOperation, _ state: OperationState) async {
    await Self.reach(operation, state)
  }

  /// Something a body captures, to tell when the body is released.
  private final class Capture: Sendable {}

  /// A body that starts, waits for `proceed`, then reaches a checkpoint (where it pauses if
  /// asked to) and returns.
  private struct Body: Sendable {
    let started = Gate()
    let proceed = Gate()

    func run() async throws -> Int {
      started.open()
      await proceed.wait()
      try await ActorQueue.checkpoint()
      return 1
    }

    /// The body as an operation's closure, capturing an object only it refers to.
    func capturing() -> (@Sendable () async throws -> Int, WeakReference<Capture>) {
      let capture = Capture()
      return (
        {
          _ = capture
          return try await run()
        }, WeakReference(capture)
      )
    }
  }

  /// An operation whose body paused at its checkpoint in a queue (not suspended) released
  /// meanwhile; `pauseFirst`: paused before the release, else asked after it.
  private func pausedInReleasedQueue(pauseFirst: Bool) async -> (
    WeakReference<AnyQueueOperation>, WeakReference<Capture>, Recorder<String>
  ) {
    let ends = Recorder<String>()
    var queue: ActorQueue? = ActorQueue(name: "downloads", maxConcurrentOperationCount: 2)
    var operation: QueueOperation<Int>? = nil
    let weakCapture: WeakReference<Capture>
    do {
      let body = Body()
      let (work, weak) = body.capturing()
      weakCapture = weak
      operation = queue!.addOperation(work)
      operation!.onCompletion { result in
        ends.append((try? result.get()).map { "finished \($0)" } ?? "cancelled")
      }
      await body.started.wait()
      if pauseFirst {
        operation!.pause()
        body.proceed.open()
        await reach(operation!, .paused)
        queue = nil
      } else {
        queue = nil
        operation!.pause()
        body.proceed.open()
        await reach(operation!, .paused)
      }
    }
    #expect(operation!.state == .paused, "the caller still holds it: it stays paused, to resume")
    #expect(!weakCapture.isFreed)
    let weakOperation = WeakReference<AnyQueueOperation>(operation!)
    operation = nil
    return (weakOperation, weakCapture, ends)
  }

  @Test(
    "A body paused before its queue was released, whose handle is then dropped, is cancelled and freed with its captures"
  )
  func pausedThenReleasedThenDropped() async {
    let (weakOperation, weakCapture, ends) = await pausedInReleasedQueue(pauseFirst: true)
    #expect(weakOperation.isFreed, "the released queue does not keep it")
    #expect(await eventually { weakCapture.isFreed }, "the body ended, so its captures are gone")
    #expect(ends.snapshot == ["cancelled"])
  }

  @Test("A body paused after its queue was released, whose handle is then dropped, is cancelled and freed")
  func releasedThenPausedThenDropped() async {
    let (weakOperation, weakCapture, ends) = await pausedInReleasedQueue(pauseFirst: false)
    #expect(weakOperation.isFreed)
    #expect(await eventually { weakCapture.isFreed })
    #expect(ends.snapshot == ["cancelled"])
  }

  @Test("A body paused in a queue that is then released, its handle dropped first, is cancelled and freed")
  func droppedThenReleased() async {
    var queue: ActorQueue? = ActorQueue(name: "downloads")
    let weakCore = QueueRecordProbe(queue!)
    let body = Body()
    let weakCapture: WeakReference<Capture>
    let weakOperation: WeakReference<AnyQueueOperation>
    let ends = Recorder<String>()
    do {
      let (work, weak) = body.capturing()
      weakCapture = weak
      let operation = queue!.addOperation(work)
      operation.onCompletion { ends.append((try? $0.get()) == nil ? "cancelled" : "finished") }
      weakOperation = WeakReference<AnyQueueOperation>(operation)
      await body.started.wait()
      operation.pause()
    }
    body.proceed.open()
    await reach(queue!.operations[0], .paused)
    #expect(!weakOperation.isFreed, "its queue holds it while the queue lives")
    queue = nil
    #expect(weakOperation.isFreed)
    #expect(await eventually { weakCapture.isFreed && weakCore.isFreed })
    #expect(ends.snapshot == ["cancelled"])
  }

  @Test(
    "A waiting operation held by pause() in a released queue ends cancelled, at once, when its handle goes")
  func heldWaitingOperation() async {
    var queue: ActorQueue? = ActorQueue(name: "q", maxConcurrentOperationCount: 1)
    let weakCore = QueueRecordProbe(queue!)
    let ran = Counter()
    let ends = Recorder<String>()
    let blockerRelease = Gate()
    let blocker = queue!.addOperation { await blockerRelease.wait() }
    var held: QueueOperation<Void>? = queue!.addOperation { ran.increment() }
    held!.onCompletion { ends.append((try? $0.get()) == nil ? "cancelled" : "finished") }
    held!.pause()
    queue = nil
    #expect(held!.state == .pending && held!.isPaused, "kept by its caller: it stays held")
    let weakHeld = WeakReference<AnyQueueOperation>(held!)
    held = nil
    #expect(weakHeld.isFreed)
    #expect(ends.snapshot == ["cancelled"], "its completion handler ran before the handle was gone")
    blockerRelease.open()
    await blocker.waitUntilFinished()
    #expect(await eventually { weakCore.isFreed })
    #expect(ran.value == 0)
  }

  @Test(
    "A held operation whose caller keeps the handle is not cancelled: resumed, it runs in the released queue")
  func keptHandleResumes() async throws {
    var queue: ActorQueue? = ActorQueue(name: "q", maxConcurrentOperationCount: 1)
    let body = Body()
    var operation: QueueOperation<Int>? = queue!.addOperation { try await body.run() }
    await body.started.wait()
    operation!.pause()
    body.proceed.open()
    await reach(operation!, .paused)
    queue = nil
    #expect(operation!.state == .paused && !operation!.isCancelled)
    operation!.resume()
    #expect(try await operation!.value == 1)
    let weakOperation = WeakReference<AnyQueueOperation>(operation!)
    operation = nil
    #expect(weakOperation.isFreed)
  }

  @Test(
    "Resumed in the released queue and dropped while it runs, an operation runs to its end and is freed then")
  func resumedThenDropped() async {
    var queue: ActorQueue? = ActorQueue(name: "q")
    let weakCore = QueueRecordProbe(queue!)
    let finish = Gate()
    let ends = Recorder<String>()
    var operation: QueueOperation<Int>? = queue!.addOperation { () async throws -> Int in
      await finish.wait()
      return 2
    }
    operation!.onCompletion { ends.append((try? $0.get()) == 2 ? "finished" : "other") }
    operation!.pause()  // pending or executing: either way held, or asked
    queue = nil
    operation!.resume()
    let weakOperation = WeakReference<AnyQueueOperation>(operation!)
    operation = nil
    #expect(weakOperation.isFreed, "the released queue let go of it when it was held")
    finish.open()
    #expect(await eventually { ends.snapshot == ["finished"] && weakCore.isFreed })
  }

  @Test("Coalesced work paused in a released queue is cancelled and freed once every caller's handle is gone")
  func coalescedWork() async {
    var queue: ActorQueue? = ActorQueue(name: "images")
    let body = Body()
    let weakCapture: WeakReference<Capture>
    let ends = Recorder<String>()
    var first: QueueOperation<Int>?
    do {
      let (work, weak) = body.capturing()
      weakCapture = weak
      first = queue!.addOperation(coalescingBy: "a.png", work)
    }
    var second: QueueOperation<Int>? = queue!.addOperation(coalescingBy: "a.png") { 0 }
    for caller in [first!, second!] {
      caller.onCompletion { ends.append((try? $0.get()) == nil ? "cancelled" : "finished") }
    }
    await body.started.wait()
    second!.pause()
    body.proceed.open()
    await reach(first!, .paused)
    queue = nil
    let weakFirst = WeakReference<AnyQueueOperation>(first!)
    first = nil
    #expect(weakFirst.isFreed)
    #expect(second!.state == .paused, "another caller can still resume it")
    #expect(!weakCapture.isFreed)
    let weakSecond = WeakReference<AnyQueueOperation>(second!)
    second = nil
    #expect(weakSecond.isFreed)
    #expect(await eventually { weakCapture.isFreed })
    #expect(ends.snapshot == ["cancelled", "cancelled"])
  }

  @Test(
    "A body that captures its own handle keeps it: paused in a released queue, it stays paused until cancelled"
  )
  func bodyCapturingItsHandle() async {
    let box = LockedValue<QueueOperation<Int>?>(nil)
    let body = Body()
    let weakCapture: WeakReference<Capture>
    var queue: ActorQueue? = ActorQueue(name: "q")
    do {
      let (work, weak) = body.capturing()
      weakCapture = weak
      let operation = queue!.addOperation { () async throws -> Int in
        _ = box.withLock { $0 }  // the body refers to its own handle
        return try await work()
      }
      box.withLock { $0 = operation }
      await body.started.wait()
      operation.pause()
      body.proceed.open()
      await reach(operation, .paused)
    }
    queue = nil
    let operation = box.withLock { $0! }
    #expect(operation.state == .paused && !operation.isCancelled, "its own body keeps its handle")
    operation.cancel()  // what the documentation says to do, or to capture it weakly
    #expect(await operation.result.isFailure)
    box.withLock { $0 = nil }
    #expect(await eventually { weakCapture.isFreed })
  }

  @Test(
    "Once such an operation is freed, no operation in the process is asked to pause: checkpoints are fast again"
  )
  func pauseCountReturnsToZero() async {
    // In a process of its own: other suites pause operations meanwhile.
    await #expect(processExitsWith: .success) {
      var queue: ActorQueue? = ActorQueue(name: "q")
      let reached = Gate()
      let proceed = Gate()
      var operation: QueueOperation<Void>? = queue!.addOperation {
        reached.open()
        await proceed.wait()
        try? await ActorQueue.checkpoint()
      }
      await reached.wait()
      operation!.pause()
      proceed.open()
      for await state in operation!.events where state == .paused { break }
      precondition(Engine.pauses.count == 1, "the paused body is listed")
      queue = nil
      operation = nil
      let listed = await eventually { Engine.pauses.count == 0 }
      precondition(listed, "still \(Engine.pauses.count) asked to pause")
    }
  }
}

extension Result {
  fileprivate var isFailure: Bool {
    if case .failure = self { return true }
    return false
  }
}

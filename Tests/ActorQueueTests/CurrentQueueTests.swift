import ActorQueue
import Foundation
import TestSupport
import Testing

/// `ActorQueue.current`: the queue whose body runs on the calling task, as Foundation's
/// `OperationQueue.current` (the native versions of Foundation's `currentQueue` cases).
@Suite("ActorQueue.current", .timeLimit(.minutes(hangLimitMinutes)))
struct CurrentQueueTests {
  @Test("A body reads its own queue; outside a body, nil; two queues, each its own")
  func aBodyReadsItsQueue() async throws {
    #expect(ActorQueue.current == nil)
    let first = ActorQueue(name: "first")
    let second = ActorQueue(name: "second", maxConcurrentOperationCount: 1)
    let inFirst = first.addOperation { ActorQueue.current === first }
    let inSecond = second.addOperation { ActorQueue.current === second }
    let (firstSaw, secondSaw) = (try await inFirst.value, try await inSecond.value)
    #expect(firstSaw && secondSaw)
    #expect(ActorQueue.current == nil, "still nil on the test's task")
  }

  @Test(
    "Foundation's currentQueue, natively: OperationQueue.current inside a block, ActorQueue.current inside a body"
  )
  func currentQueueAsFoundation() async throws {
    let foundation = OperationQueue()
    let seen = LockedValue(false)
    foundation.addOperation { seen.withLock { $0 = OperationQueue.current === foundation } }
    await withCheckedContinuation { done in foundation.addBarrierBlock { done.resume() } }
    #expect(seen.withLock { $0 })

    let queue = ActorQueue()
    #expect(try await queue.addOperation { ActorQueue.current === queue }.value)
  }

  @Test("Foundation's currentQueueWithSelfCancel, natively: a body cancels every operation of its own queue")
  func currentQueueWithSelfCancel() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let operation = queue.addOperation { () throws -> Void in
      ActorQueue.current?.cancelAllOperations()
      try Task.checkCancellation()
    }
    await queue.waitUntilAllOperationsAreFinished()
    #expect(operation.state == .cancelled, "it cancelled itself through the queue it found")
  }

  @Test("Child and unstructured tasks of a body are other tasks: they read nil")
  func otherTasksReadNil() async throws {
    let queue = ActorQueue()
    let seen = try await queue.addOperation { () async -> [Bool] in
      async let child = ActorQueue.current == nil
      let unstructured = await Task { ActorQueue.current == nil }.value
      let grouped = await withTaskGroup(of: Bool.self) { group in
        group.addTask { ActorQueue.current == nil }
        return await group.next()!
      }
      return [await child, unstructured, grouped, ActorQueue.current === queue]
    }.value
    #expect(seen == [true, true, true, true])
  }

  @Test("A body of ActorQueue.main reads ActorQueue.main.queue")
  func mainQueue() async throws {
    let onMain = ActorQueue.main.addOperation { ActorQueue.current === ActorQueue.main.queue }
    #expect(try await onMain.value)
  }

  @Test("A paused body, resumed, still reads its queue")
  func pausedAndResumed() async throws {
    let queue = ActorQueue()
    let reached = Gate()
    let release = Gate()
    let operation = queue.addOperation { () throws -> Bool in
      reached.open()
      await release.wait()
      try await ActorQueue.checkpoint()  // pauses here
      return ActorQueue.current === queue
    }
    await reached.wait()
    operation.pause()
    release.open()
    #expect(await eventually { operation.state == .paused })
    operation.resume()
    #expect(try await operation.value)
  }
}

import ActorQueue
import Dispatch
import Foundation
import TestSupport
import Testing

/// A queue's task executor: Foundation's `underlyingQueue` as Swift's task executor preference,
/// with the native versions of Foundation's three `underlyingQueue` cases (its
/// `TestOperationQueue`), each beside Foundation's own.
@Suite("A queue's task executor", .timeLimit(.minutes(hangLimitMinutes)))
struct TaskExecutorTests {
  /// A dispatch queue that can tell code running on it (`DispatchQueue.getSpecific`).
  static func labelledQueue(_ label: String, attributes: DispatchQueue.Attributes = []) -> DispatchQueue {
    let queue = DispatchQueue(label: label, attributes: attributes)
    queue.setSpecific(key: runsOn, value: label)
    return queue
  }

  static let runsOn = DispatchSpecificKey<String>()

  static var currentLabel: String? { DispatchQueue.getSpecific(key: runsOn) }

  @Test(
    "Bodies run on the queue's executor, and so do their child tasks; a @MainActor body runs on the main actor"
  )
  func bodiesRunOnTheExecutor() async throws {
    let executor = DispatchQueueExecutor(Self.labelledQueue("bodies"))
    let queue = ActorQueue(name: "on a dispatch queue", taskExecutor: executor)
    #expect(queue.taskExecutor === executor)
    let seen = try await queue.addOperation { () async -> [String?] in
      let first = Self.currentLabel
      await Task.yield()
      async let child = Self.currentLabel
      let grouped = await withTaskGroup(of: String?.self) { group in
        group.addTask { Self.currentLabel }
        return await group.next()!
      }
      return [first, Self.currentLabel, await child, grouped]
    }.value
    #expect(seen == ["bodies", "bodies", "bodies", "bodies"])

    let onMain = try await queue.addOperation { @MainActor () -> Bool in
      MainActor.assertIsolated()
      return Self.currentLabel == nil
    }.value
    #expect(onMain, "a main-actor body ignores the queue's executor")

    let plain = ActorQueue()
    #expect(plain.taskExecutor == nil && ActorQueue.main.queue.taskExecutor == nil)
    #expect(try await plain.addOperation { Self.currentLabel }.value == nil)
  }

  @Test("A body paused at a checkpoint and resumed goes on on the executor")
  func pausedBodyResumesOnTheExecutor() async throws {
    let queue = ActorQueue(taskExecutor: DispatchQueueExecutor(Self.labelledQueue("paused")))
    let reached = Gate()
    let release = Gate()
    let operation = queue.addOperation { () throws -> String? in
      reached.open()
      await release.wait()
      try await ActorQueue.checkpoint()  // pauses here
      return Self.currentLabel
    }
    await reached.wait()
    operation.pause()
    release.open()
    #expect(await eventually { operation.state == .paused })
    operation.resume()
    #expect(try await operation.value == "paused")
  }

  @Test("A serial executor under a limit of 4: all four execute, one at a time between suspension points")
  func serialExecutorInterleaves() async throws {
    let queue = ActorQueue(
      maxConcurrentOperationCount: 4, taskExecutor: DispatchQueueExecutor(Self.labelledQueue("serial")))
    let inside = LockedValue((now: 0, most: 0))
    let started = CountdownGate(count: 4)
    let release = Gate()
    for _ in 0..<4 {
      queue.addOperation {
        for round in 0..<2 {
          inside.withLock {
            $0.now += 1
            $0.most = max($0.most, $0.now)
          }
          // A stretch of synchronous work: a body running beside it would overlap it.
          for _ in 0..<2_000 { inside.withLock { _ in } }
          inside.withLock { $0.now -= 1 }
          if round == 0 {
            started.signal()
            await release.wait()
          }
        }
      }
    }
    await started.wait()
    #expect(queue.operations.filter { $0.state == .executing }.count == 4)
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(inside.withLock { $0.most } == 1)
  }

  @Test(
    "The queue keeps its executor until the queue and its work are gone, and lets go of it outside the lock")
  func executorLifetime() async throws {
    // Released by the queue's last work ending on a worker of its own.
    do {
      let released = Gate()
      var queue: ActorQueue? = ActorQueue(
        taskExecutor: ProbeExecutor(callingTheSchedulerThenOpening: released))
      let weakExecutor = WeakReference(queue!.taskExecutor as! ProbeExecutor)
      #expect(!weakExecutor.isFreed, "the queue holds it")
      let release = Gate()
      let operation = queue!.addOperation { await release.wait() }
      queue = nil
      #expect(!weakExecutor.isFreed, "its running work holds it")
      release.open()
      try await operation.value
      await released.wait()
      #expect(weakExecutor.isFreed)
    }
    // Released by a cancel from this task, with no worker of the queue left: the queue's record
    // holds the last reference, and the scheduler lets go of it after its lock.
    do {
      let released = Gate()
      let other = ActorQueue()
      let release = Gate()
      let blocker = other.addOperation { await release.wait() }
      var queue: ActorQueue? = ActorQueue(
        taskExecutor: ProbeExecutor(callingTheSchedulerThenOpening: released))
      let weakExecutor = WeakReference(queue!.taskExecutor as! ProbeExecutor)
      let waiting = QueueOperation<Void> {}
      try waiting.addDependency(blocker)
      try queue!.addOperation(waiting)
      queue = nil
      #expect(!weakExecutor.isFreed, "its waiting work holds it")
      waiting.cancel()
      await released.wait()
      #expect(weakExecutor.isFreed)
      release.open()
    }
  }

  // MARK: Foundation's cases, natively

  @Test("Foundation's CurrentQueueWithCustomUnderlyingQueue, natively: the body's queue and its executor")
  func currentQueueWithCustomUnderlyingQueue() async throws {
    let dispatchQueue = Self.labelledQueue("underlying")
    let foundation = OperationQueue()
    foundation.underlyingQueue = dispatchQueue
    let foundationSaw = LockedValue<[Bool]>([])
    foundation.addOperation {
      foundationSaw.withLock {
        $0 = [
          OperationQueue.current === foundation, OperationQueue.current?.underlyingQueue === dispatchQueue,
          Self.currentLabel == "underlying",
        ]
      }
    }
    await withCheckedContinuation { done in foundation.addBarrierBlock { done.resume() } }
    #expect(foundationSaw.withLock { $0 } == [true, true, true])

    let executor = DispatchQueueExecutor(dispatchQueue)
    let queue = ActorQueue(taskExecutor: executor)
    let saw = try await queue.addOperation {
      [
        ActorQueue.current === queue, ActorQueue.current?.taskExecutor === executor,
        Self.currentLabel == "underlying",
      ]
    }.value
    #expect(saw == [true, true, true])
  }

  @Test("Foundation's isSuspended with its underlyingQueue half, natively")
  func isSuspendedWithUnderlyingQueue() async throws {
    let dispatchQueue = Self.labelledQueue("suspended")
    let foundation = OperationQueue()
    foundation.underlyingQueue = dispatchQueue
    foundation.maxConcurrentOperationCount = 1
    foundation.isSuspended = true
    let foundationRan = Gate()
    let foundationOnQueue = LockedValue(false)
    foundation.addOperation {
      foundationOnQueue.withLock { $0 = OperationQueue.current?.underlyingQueue === dispatchQueue }
      foundationRan.open()
    }
    #expect(!foundationRan.isOpen && foundation.operationCount == 1)
    foundation.isSuspended = false
    await foundationRan.wait()
    #expect(foundationOnQueue.withLock { $0 })

    let executor = DispatchQueueExecutor(dispatchQueue)
    let queue = ActorQueue(maxConcurrentOperationCount: 1, taskExecutor: executor)
    queue.isSuspended = true
    let operation = queue.addOperation {
      ActorQueue.current?.taskExecutor === executor && Self.currentLabel == "suspended"
    }
    #expect(operation.state == .ready && queue.operationCount == 1)
    queue.isSuspended = false
    #expect(try await operation.value)
  }

  @Test("Foundation's CurrentQueueWithUnderlyingQueueResetToNil, natively: a queue without an executor")
  func underlyingQueueResetToNil() async throws {
    let foundation = OperationQueue()
    foundation.underlyingQueue = Self.labelledQueue("reset")
    foundation.underlyingQueue = nil
    let foundationSaw = LockedValue<[Bool]>([])
    foundation.addOperation {
      foundationSaw.withLock {
        $0 = [
          OperationQueue.current === foundation, OperationQueue.current?.underlyingQueue == nil,
          Self.currentLabel == nil,
        ]
      }
    }
    await withCheckedContinuation { done in foundation.addBarrierBlock { done.resume() } }
    #expect(foundationSaw.withLock { $0 } == [true, true, true])

    // The executor is fixed when the queue is created: "reset to nil" is a queue made without one.
    let queue = ActorQueue()
    let saw = try await queue.addOperation {
      [ActorQueue.current === queue, ActorQueue.current?.taskExecutor == nil, Self.currentLabel == nil]
    }.value
    #expect(saw == [true, true, true])
  }
}

/// An executor on the global concurrent one whose deinit calls the scheduler (run under its
/// lock, that would deadlock), then opens a gate.
private final class ProbeExecutor: TaskExecutor {
  private let released: Gate

  init(callingTheSchedulerThenOpening released: Gate) { self.released = released }

  deinit {
    _ = ActorQueue(name: "from a deinit").operationCount
    released.open()
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
  }
}

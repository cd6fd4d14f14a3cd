import ActorQueue
import Foundation
import OperationAdapter
import TestSupport
import Testing

/// A legacy operation has no checkpoint: pausing one that executes leaves it executing, pausing
/// one that waits holds it, and pausing a whole queue skips the legacy operations that execute.
@Suite("Adapter: pause", .timeLimit(.minutes(hangLimitMinutes))) struct AdapterPauseTests {
  @Test func pausingAnExecutingLegacyOperationLeavesItExecuting() async throws {
    let started = Gate()
    let release = DispatchSemaphore(value: 0)
    let operation = BlockOperation {
      started.open()
      release.wait()
    }
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let handle = try queue.addOperation(legacy: operation)
    await started.wait()
    let events = handle.events
    handle.pause()
    queue.pauseAllOperations()
    #expect(handle.state == .executing && !handle.isPaused)
    release.signal()
    _ = await handle.result
    var states: [OperationState] = []
    for await state in events { states.append(state) }
    #expect(states == [.executing, .finished], "never reported paused")
  }

  @Test func pausingAWaitingLegacyOperationHoldsItUntilResumed() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let ran = Counter()
    let held = try queue.addOperation(legacy: BlockOperation { ran.increment() })
    let next = queue.addOperation { "next" }
    queue.pauseAllOperations()
    #expect(held.state == .pending && held.isPaused)
    #expect(next.state == .pending)
    next.resume()
    queue.isSuspended = false
    #expect(try await next.value == "next")
    #expect(held.state == .pending && ran.count == 0)
    held.resume()
    _ = await held.result
    #expect(held.state == .finished && ran.count == 1)
  }
}

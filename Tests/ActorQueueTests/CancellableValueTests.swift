import TestSupport
import Testing

@testable import ActorQueue

/// `cancellableValue`: the structured form of waiting. A cancelled awaiting task stops waiting
/// at once; once every task awaiting an operation this way is cancelled, the operation is.
/// Plain `value` awaiters never count (`Task.value`'s rule, asserted too).
@Suite("Waiting that cancellation reaches", .timeLimit(.minutes(hangLimitMinutes)))
struct CancellableValueTests {
  /// An operation whose body runs until it is cancelled or released; `started` opens when it runs.
  private func longRunning(on queue: ActorQueue, started: Gate, release: Gate) -> QueueOperation<Int> {
    queue.addOperation { () throws -> Int in
      started.open()
      await withTaskCancellationHandler {
        await release.wait()
      } onCancel: {
        release.open()
      }
      try Task.checkCancellation()
      return 7
    }
  }

  @Test("Cancelling the one awaiting task ends its wait with CancellationError and cancels the operation")
  func oneAwaiter() async throws {
    let (started, release) = (Gate(), Gate())
    let operation = longRunning(on: ActorQueue(), started: started, release: release)
    await started.wait()
    let awaiting = Task { try await operation.cancellableValue }
    awaiting.cancel()
    await #expect(throws: CancellationError.self) { try await awaiting.value }
    await operation.waitUntilFinished()
    #expect(operation.state == .cancelled && operation.isCancelled)
  }

  @Test("With several awaiters, the operation is cancelled only when the last of them is")
  func severalAwaiters() async throws {
    let (started, release) = (Gate(), Gate())
    let operation = longRunning(on: ActorQueue(), started: started, release: release)
    await started.wait()
    let first = Task { try await operation.cancellableValue }
    let second = Task { try await operation.cancellableValue }
    #expect(await eventually { CancellableWaits.count(of: operation.id) == 2 }, "both wait")
    first.cancel()
    await #expect(throws: CancellationError.self) { try await first.value }
    #expect(!operation.isCancelled, "the second task still awaits it")
    #expect(operation.state == .executing)
    second.cancel()
    await #expect(throws: CancellationError.self) { try await second.value }
    await operation.waitUntilFinished()
    #expect(operation.state == .cancelled)
  }

  @Test("An awaiter that is not cancelled gets the value; the cancelled one did not stop the operation")
  func survivorGetsTheValue() async throws {
    let (started, release) = (Gate(), Gate())
    let operation = longRunning(on: ActorQueue(), started: started, release: release)
    await started.wait()
    let leaving = Task { try await operation.cancellableValue }
    let staying = Task { try await operation.cancellableValue }
    #expect(await eventually { CancellableWaits.count(of: operation.id) == 2 }, "both wait")
    leaving.cancel()
    await #expect(throws: CancellationError.self) { try await leaving.value }
    release.open()
    #expect(try await staying.value == 7)
    #expect(operation.state == .finished)
  }

  @Test("A task group whose parent is cancelled cancels the operation its children await")
  func parentTaskGroupCancelled() async throws {
    let (started, release) = (Gate(), Gate())
    let operation = longRunning(on: ActorQueue(), started: started, release: release)
    await started.wait()
    let parent = Task {
      try await withThrowingTaskGroup(of: Int.self) { group in
        for _ in 0..<3 { group.addTask { try await operation.cancellableValue } }
        return try await group.reduce(0, +)
      }
    }
    #expect(await eventually { CancellableWaits.count(of: operation.id) == 3 }, "the children wait")
    parent.cancel()
    await #expect(throws: CancellationError.self) { try await parent.value }
    await operation.waitUntilFinished()
    #expect(operation.state == .cancelled)
  }

  @Test("Plain value awaiters never count: cancelling them leaves the operation running, as Task.value")
  func plainValueDoesNotCancel() async throws {
    let (started, release) = (Gate(), Gate())
    let operation = longRunning(on: ActorQueue(), started: started, release: release)
    await started.wait()
    let plain = Task { try await operation.value }
    plain.cancel()
    #expect(!operation.isCancelled)
    release.open()
    #expect(try await plain.value == 7, "the plain wait goes on to the value")
    #expect(operation.state == .finished)

    let reference = Task { 7 }
    let waiting = Task { await reference.value }
    waiting.cancel()
    #expect(await waiting.value == 7, "Task.value's rule, which value follows")
  }

  @Test("A cancellable wait on an operation that already ended returns at once, even from a cancelled task")
  func endedAndLateAwaiters() async throws {
    let queue = ActorQueue()
    let done = queue.addOperation { 1 }
    _ = try await done.value
    let cancelled = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await done.cancellableValue
    }
    #expect(try await cancelled.value == 1, "it had ended: its value, even from a cancelled task")
  }
}

import ActorQueue
import Foundation
import OperationAdapter
import Testing

/// The adapter's errors match as users write them (issue 14, item 1), as `ActorQueueError`'s do.
@Suite("Adapter error matching")
struct AdapterErrorMatchingTests {
  @Test("catch OperationAdapterError.alreadyFinished, and a switch over any Error")
  func catchAndSwitch() async throws {
    let operation = SumOperation(numbers: [1])
    await runOnOperationQueue([operation])
    let queue = ActorQueue()
    var caught: String?
    do {
      try queue.addOperation(legacy: operation)
    } catch OperationAdapterError.alreadyAdded {
      caught = "alreadyAdded"
    } catch OperationAdapterError.alreadyFinished {
      caught = "alreadyFinished"
    }
    #expect(caught == "alreadyFinished")

    let errors: [any Error] = [
      OperationAdapterError.timedOut, OperationAdapterError.alreadyExecuting, ActorQueueError.alreadyEnqueued,
    ]
    let names = errors.map { error -> String in
      switch error {
      case OperationAdapterError.timedOut: "timedOut"
      case OperationAdapterError.alreadyExecuting: "alreadyExecuting"
      case ActorQueueError.alreadyEnqueued: "alreadyEnqueued"
      default: "other"
      }
    }
    #expect(names == ["timedOut", "alreadyExecuting", "alreadyEnqueued"])
    #expect(!(OperationAdapterError.timedOut ~= ActorQueueError.alreadyEnqueued as any Error))
  }

  @Test("A prepared handle's misuse, thrown by value, matches in a catch clause")
  func preparedHandle() async throws {
    let operation = SumOperation(numbers: [2])
    await runOnOperationQueue([operation])
    let prepared = QueueOperation(legacy: operation)
    try ActorQueue().addOperation(prepared)
    var caught = false
    do {
      _ = try await prepared.value
    } catch OperationAdapterError.alreadyFinished {
      caught = true
    }
    #expect(caught)
    await #expect(throws: OperationAdapterError.alreadyFinished) { try await prepared.value }
  }
}

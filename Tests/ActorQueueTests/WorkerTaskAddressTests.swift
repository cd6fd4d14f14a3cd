import Testing

@testable import ActorQueue

/// A checkpoint finds its operation's worker by the address of the task it runs in, so every
/// worker must know that address before its first body runs: its creator records it when it
/// attaches the task, or, if the task ran first, the task reads it itself (`Worker.takeFirst()`).
@Suite("Worker task addresses")
struct WorkerTaskAddressTests {
  @Test("A task attached before its first step: the address its creator recorded is the one the task sees")
  func attachedFirst() async {
    let worker = Worker(queue: 0)
    let (attached, attachedSignal) = AsyncStream.makeStream(of: Void.self)
    let task = Task<Void, any Error>.detached { () async throws -> Void in
      for await _ in attached { break }  // waits until attached, as a task on a busy core does
      #expect(worker.takeFirst() == nil)
      #expect(worker.recordedTaskAddress == currentTaskAddress())
      #expect(worker.recordedTaskAddress != 0)
    }
    worker.attach(task)
    attachedSignal.yield()
    _ = await task.result
  }

  @Test(
    "A task that takes its first step before it is attached records its own address; attaching then agrees")
  func stepFirst() async {
    let worker = Worker(queue: 0)
    let (stepped, steppedSignal) = AsyncStream.makeStream(of: Int.self)
    let task = Task<Void, any Error>.detached { () async throws -> Void in
      #expect(worker.takeFirst() == nil)
      #expect(worker.recordedTaskAddress == currentTaskAddress())
      steppedSignal.yield(currentTaskAddress())
      steppedSignal.finish()
    }
    var seen = 0
    for await address in stepped { seen = address }
    #expect(worker.recordedTaskAddress == seen)
    worker.attach(task)
    #expect(worker.recordedTaskAddress == seen, "the creator's record is the same address")
    _ = await task.result
  }
}

import ActorQueue
import Foundation
import TestSupport
import Testing

/// Multi-block operations, barriers and the main-actor queue (issue 3, points 5–7).
@Suite struct MultiBlockOperationTests {
  @Test func everyBlockRunsConcurrentlyAndValuesKeepBlockOrder() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let allStarted = CountdownGate(count: 3)
    let release = Gate()
    let blocks: [@Sendable () async throws -> String] = ["a", "b", "c"].map { name in
      {
        allStarted.signal()
        await release.wait()
        return name
      }
    }
    let operation = queue.addOperation(name: "blocks", blocks: blocks)
    // All three blocks are running at once although the queue's limit is 1: the operation
    // holds one slot, its blocks run in a TaskGroup.
    await allStarted.wait()
    let other = queue.addOperation { "other" }
    #expect(other.state == .ready, "the multi-block operation holds the queue's single slot")
    release.open()
    #expect(try await operation.value == ["a", "b", "c"])
    #expect(try await other.value == "other")
  }

  @Test func foundationBlockOperationRunsEveryBlockToo() async {
    let ran = Recorder<Int>()
    let operation = BlockOperation()
    for index in 0..<3 { operation.addExecutionBlock { ran.append(index) } }
    let queue = OperationQueue()
    queue.addOperation(operation)
    await queue.allFinished()
    #expect(Set(ran.snapshot) == [0, 1, 2])
  }

  @Test func cancellingTheOperationCancelsEveryBlock() async {
    let queue = ActorQueue()
    let allStarted = CountdownGate(count: 2)
    let cancelled = Recorder<Int>()
    let blocks: [@Sendable () async throws -> Void] = (0..<2).map { index in
      {
        allStarted.signal()
        await untilCancelled()
        cancelled.append(index)
        throw CancellationError()
      }
    }
    let operation = queue.addOperation(blocks: blocks)
    await allStarted.wait()
    operation.cancel()
    let result = await operation.result
    #expect(throws: CancellationError.self) { try result.get() }
    #expect(operation.state == .cancelled)
    #expect(Set(cancelled.snapshot) == [0, 1])
  }

  @Test func theFirstFailureCancelsTheSiblingsAndFailsTheOperation() async {
    struct Broken: Error {}
    let queue = ActorQueue()
    let siblingStarted = CountdownGate(count: 1)
    let siblingCancelled = Gate()
    let blocks: [@Sendable () async throws -> Int] = [
      {
        siblingStarted.signal()
        await untilCancelled()
        siblingCancelled.open()
        throw CancellationError()
      },
      {
        await siblingStarted.wait()
        throw Broken()
      },
    ]
    let operation = queue.addOperation(blocks: blocks)
    let result = await operation.result
    #expect(throws: Broken.self) { try result.get() }
    #expect(operation.state == .failed)
    #expect(siblingCancelled.isOpen)
  }
}

@Suite struct BarrierTests {
  @Test func barrierRunsAfterEarlierOperationsAndBeforeLaterOnes() async {
    let queue = ActorQueue()  // unlimited: only the barrier orders these
    let order = Recorder<String>()
    let release = Gate()
    let first = queue.addOperation {
      await release.wait()
      order.append("first")
    }
    let second = queue.addOperation {
      await release.wait()
      order.append("second")
    }
    let barrier = queue.addBarrierBlock { order.append("barrier") }
    let after = queue.addOperation { order.append("after") }
    #expect(barrier.state == .pending)
    #expect(after.state == .pending)
    #expect(barrier.dependencies == [first, second])
    #expect(queue.operationCount == 4, "the barrier counts as an operation, as in Foundation")
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(Set(order.snapshot.prefix(2)) == ["first", "second"])
    #expect(Array(order.snapshot.suffix(2)) == ["barrier", "after"])
  }

  @Test func foundationBarrierOrdersTheSameWay() async {
    let queue = OperationQueue()
    queue.isSuspended = true
    let order = Recorder<String>()
    queue.addOperation { order.append("first") }
    queue.addOperation { order.append("second") }
    queue.addBarrierBlock { order.append("barrier") }
    queue.addOperation { order.append("after") }
    queue.isSuspended = false
    await queue.allFinished()
    #expect(Set(order.snapshot.prefix(2)) == ["first", "second"])
    #expect(Array(order.snapshot.suffix(2)) == ["barrier", "after"])
  }

  @Test func dependingOnAnOperationBehindTheBarrierIsACycle() throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    let before = queue.addOperation { 1 }
    queue.addBarrierBlock {}
    let after = queue.addOperation { 2 }
    #expect(throws: ActorQueueError.dependencyCycle) { try before.addDependency(after) }
    #expect(before.dependencies.isEmpty)
    queue.cancelAllOperations()
  }

  @Test func enqueueingBehindABarrierWhatTheBarrierWaitsForIsRefused() async throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    let prepared = QueueOperation { 1 }
    let before = queue.addOperation { 2 }
    try before.addDependency(prepared)
    queue.addBarrierBlock {}
    // barrier waits for `before`, which waits for `prepared`: `prepared` cannot wait for it.
    #expect(throws: ActorQueueError.dependencyCycle) { try queue.addOperation(prepared) }
    #expect(queue.operationCount == 2)
    let other = ActorQueue()
    try other.addOperation(prepared)
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(before.state == .finished)
  }

  @Test func cancellingABarrierReleasesTheOperationsBehindIt() async throws {
    let queue = ActorQueue()
    let release = Gate()
    let blocker = queue.addOperation { await release.wait() }
    let barrier = queue.addBarrierBlock { Issue.record("a cancelled barrier must not run") }
    let after = queue.addOperation { "after" }
    barrier.cancel()
    #expect(try await after.value == "after")
    release.open()
    await blocker.waitUntilFinished()
    #expect(barrier.state == .cancelled)
  }
}

/// `ActorQueue.main` is one queue for the whole process: these tests take turns with it (one
/// pauses all of its operations).
@Suite(.serialized, .timeLimit(.minutes(hangLimitMinutes))) struct MainQueueTests {
  @MainActor final class Label {
    var text = ""
  }

  @Test @MainActor func bodiesRunOnTheMainActor() async throws {
    let label = Label()
    let operation = ActorQueue.main.addOperation {
      label.text = "updated"  // main-actor state, no await: the body is @MainActor
      MainActor.preconditionIsolated("a main-queue body runs on the main actor's executor")
      return label.text
    }
    #expect(try await operation.value == "updated")
    let explicit = ActorQueue.main.addOperation { @MainActor in
      MainActor.preconditionIsolated("a @MainActor body runs on the main actor's executor")
      return label.text
    }
    #expect(try await explicit.value == "updated")
    #expect(ActorQueue.main.queue.maxConcurrentOperationCount == 1)
  }

  /// Scenario 3: fetch → parse → save on a background queue, then update the UI on the main actor.
  @Test @MainActor func pipelineEndsWithAMainActorStep() async throws {
    struct Model: Sendable, Equatable { var title: String }
    let label = Label()
    let saved = Recorder<Model>()
    let queue = ActorQueue(name: "pipeline", maxConcurrentOperationCount: 2)
    let fetch = queue.addOperation(name: "fetch") { Array(#"{"title":"Hello"}"#.utf8) }
    let parse = queue.addOperation(name: "parse", after: fetch) { bytes in
      let text = String(decoding: bytes, as: UTF8.self)
      return Model(title: String(text.split(separator: "\"")[3]))
    }
    let save = queue.addOperation(name: "save", after: parse) { model in
      saved.append(model)
      return model
    }
    let update = ActorQueue.main.addOperation(name: "update UI", after: save) { model in
      label.text = model.title
      MainActor.preconditionIsolated("the UI step runs on the main actor's executor")
      return label.text
    }
    #expect(try await update.value == "Hello")
    #expect(label.text == "Hello")
    #expect(saved.snapshot == [Model(title: "Hello")])
  }

  @Test @MainActor func mainQueueOffersTheQueueMembers() async throws {
    let main = ActorQueue.main
    let label = Label()
    let prepared = QueueOperation<Int> { @MainActor in
      label.text += "a"
      return 1
    }
    try await main.addOperations([prepared], waitUntilFinished: true)
    let barrier = main.addBarrierBlock {
      MainActor.preconditionIsolated("a main-queue barrier runs on the main actor")
      label.text += "b"
    }
    let blocks = main.addOperation(blocks: [
      { @MainActor in
        label.text += "c"
        return 1
      },
      { @MainActor in
        label.text += "d"
        return 2
      },
    ])
    #expect(try await blocks.value == [1, 2])
    try await barrier.value
    #expect(label.text == "abcd")
    let first = main.addOperation(coalescingBy: "ui") { @MainActor in label.text }
    let second = main.addOperation(coalescingBy: "ui") { @MainActor in "again" }
    #expect(try await first.value == "abcd")
    #expect(try await second.value == "abcd")
  }

  @Test @MainActor func mainQueueOperationsPauseAndResume() async throws {
    let main = ActorQueue.main
    main.isSuspended = true
    let held = main.addOperation { @MainActor in 5 }
    main.pauseAllOperations()
    main.isSuspended = false
    #expect(held.state == .pending && held.isPaused)
    let events = main.events(bufferingPolicy: .bufferingNewest(16))
    main.resumeAllOperations()
    #expect(try await held.value == 5)
    var states: [OperationState] = []
    for await event in events {
      if case .operation(let id, _, let state) = event.kind, id == held.id {
        states.append(state)
        if state.isTerminal { break }
      }
    }
    #expect(states == [.ready, .executing, .finished])
  }
}

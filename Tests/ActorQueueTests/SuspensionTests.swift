import ActorQueue
import Foundation
import TestSupport
import Testing

@Suite("Suspension", .timeLimit(.minutes(hangLimitMinutes)))
struct SuspensionTests {
  @Test("A suspended queue starts nothing; it runs its ops after resume")
  func suspendedRunsAfterResume() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    queue.isSuspended = true
    #expect(queue.isSuspended)
    let runs = Counter()
    let operations = (0..<5).map { index in
      queue.addOperation {
        runs.increment()
        return index
      }
    }
    // Ready (may start once a slot is free), but the queue starts nothing.
    #expect(operations.allSatisfy { $0.state == .ready && $0.isReady })
    #expect(queue.operationCount == 5)
    // Work on another queue runs and ends meanwhile; this one still has started nothing.
    try await ActorQueue().addOperation {}.value
    #expect(runs.value == 0)
    queue.isSuspended = false
    #expect(!queue.isSuspended)
    for (index, operation) in operations.enumerated() { #expect(try await operation.value == index) }
    #expect(runs.value == 5)
  }

  @Test("OperationQueue: a suspended queue runs its ops after resume")
  func suspendedRunsAfterResumeFoundation() async {
    let queue = OperationQueue()
    queue.isSuspended = true
    let runs = Counter()
    for _ in 0..<5 { queue.addOperation { runs.increment() } }
    #expect(queue.operationCount == 5)
    #expect(runs.value == 0)
    queue.isSuspended = false
    await queue.allFinished()
    #expect(runs.value == 5)
  }

  @Test("Suspending lets executing ops continue and starts nothing new until resume")
  func executingContinuesWhileSuspended() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let log = StreamLog(queue.events)
    let started = Gate()
    let release = Gate()
    let first = queue.addOperation(name: "first") { () -> String in
      started.open()
      await release.wait()
      return "done"
    }
    let second = queue.addOperation(name: "second") { "second" }
    await started.wait()
    queue.isSuspended = true
    release.open()
    #expect(try await first.value == "done")
    // The slot is free, the queue is suspended: the next op is decided not to start when
    // the first ends, under the scheduler's lock.
    #expect(second.state == .ready)
    queue.isSuspended = false
    #expect(try await second.value == "second")
    let events = await log.waitForEnd(of: second)
    log.stop()
    let kinds = events.map(\.kind)
    let suspended = kinds.firstIndex(of: .suspended)!
    let resumed = kinds.firstIndex(of: .resumed)!
    #expect(suspended < resumed)
    #expect(events[suspended].executingCount == 1)
    // Between suspension and resumption nothing started.
    #expect(!events[suspended...resumed].contains { $0.operationState == .executing })
    #expect(
      events[(resumed + 1)...].contains { $0.operationID == second.id && $0.operationState == .executing })
  }

  @Test("Setting isSuspended to its current value changes nothing and emits nothing")
  func redundantSuspensionIsSilent() async {
    let queue = ActorQueue()
    let log = StreamLog(queue.events)
    queue.isSuspended = false
    queue.isSuspended = true
    queue.isSuspended = true
    queue.isSuspended = false
    queue.isSuspended = false
    queue.maxConcurrentOperationCount = 4
    let events = await log.wait(until: { $0.count == 3 })
    log.stop()
    #expect(events.map(\.kind) == [.suspended, .resumed, .limitChanged(4)])
  }

  @Test("Ops cancelled while suspended end at once (P2)")
  func cancelledWhileSuspendedEndAtOnce() async throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    let runs = Counter()
    let completions = Recorder<String>()
    let operations = (0..<3).map { index in
      let operation = queue.addOperation(name: "op\(index)") { runs.increment() }
      operation.onCompletion { result in
        if case .failure(let error) = result, error is CancellationError { completions.append("op\(index)") }
      }
      return operation
    }
    operations[1].cancel()
    #expect(operations[1].state == .cancelled)
    #expect(operations[1].isCancelled && operations[1].isFinished)
    #expect(completions.snapshot == ["op1"])
    #expect(queue.operationCount == 2)
    await operations[1].waitUntilFinished()  // returns although the queue is suspended

    queue.cancelAllOperations()
    #expect(operations.allSatisfy { $0.state == .cancelled })
    #expect(completions.snapshot == ["op1", "op0", "op2"])
    #expect(queue.operationCount == 0)
    await queue.waitUntilAllOperationsAreFinished()  // returns although still suspended
    #expect(queue.isSuspended)
    queue.isSuspended = false
    try await ActorQueue().addOperation {}.value
    #expect(runs.value == 0)
    await #expect(throws: CancellationError.self) { try await operations[0].value }
  }

  @Test("OperationQueue: a cancelled op in a suspended queue stays queued, unfinished, until resume (P2)")
  func cancelledWhileSuspendedFoundation() async {
    let queue = OperationQueue()
    queue.isSuspended = true
    let runs = Counter()
    let operation = BlockOperation { runs.increment() }
    queue.addOperation(operation)
    operation.cancel()
    #expect(operation.isCancelled)
    #expect(!operation.isFinished)  // the difference: ActorQueue ends it at once
    #expect(queue.operationCount == 1)
    queue.isSuspended = false
    await operation.finished()
    #expect(operation.isFinished)
    #expect(runs.value == 0)
  }

  @Test(
    "A queue built suspended with limit 2 runs the batch after resume, at most 2 at once (field scenario 6)")
  func suspendedBatch() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    queue.isSuspended = true
    let log = StreamLog(queue.events)
    let results = ActorQueue(name: "results", maxConcurrentOperationCount: 1)
    let collected = Recorder<Int>()
    let operations = (0..<10).map { index in
      queue.addOperation { () -> Int in
        let square = index * index
        try? await results.addOperation { collected.append(square) }.value
        return square
      }
    }
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    let events = await log.waitForEnd(of: operations)
    log.stop()
    #expect(collected.snapshot.sorted() == (0..<10).map { $0 * $0 })
    #expect(events.allSatisfy { $0.executingCount <= 2 })
    let resumed = events.firstIndex { $0.kind == .resumed }
    let firstStart = events.firstIndex { $0.operationState == .executing }
    #expect(resumed != nil && firstStart != nil && resumed! < firstStart!)
  }
}

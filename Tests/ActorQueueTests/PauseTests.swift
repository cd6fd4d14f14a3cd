import ActorQueue
import Foundation
import Synchronization
import TestSupport
import Testing

/// Suspends until `operation` is in `state` (at once if it is now).
private func reach(_ operation: AnyQueueOperation, _ state: OperationState) async {
  for await current in operation.events where current == state { return }
}

/// A simulated transfer: it starts, waits for `proceed`, reaches a checkpoint (where it pauses if
/// asked to), then waits for `finish` and returns.
private final class Transfer: Sendable {
  let name: String
  let started = Gate()
  let proceed = Gate()
  let finish = Gate()

  init(_ name: String) { self.name = name }

  func run() async throws -> String {
    started.open()
    await proceed.wait()
    try await ActorQueue.checkpoint()
    await finish.wait()
    return name
  }

  /// Lets it through its checkpoint and to its end.
  func complete() {
    proceed.open()
    finish.open()
  }
}

@Suite("Pause and resume", .timeLimit(.minutes(hangLimitMinutes)))
struct PauseTests {
  @Test(
    "Download manager, limit 5: pausing one of two transfers lets 4 more start; resumed, it waits for a slot")
  func pauseFreesSlotForWaitingTransfers() async throws {
    let queue = ActorQueue(name: "downloads", maxConcurrentOperationCount: 5)
    let first = Transfer("first")
    let second = Transfer("second")
    let firstOperation = queue.addOperation { try await first.run() }
    queue.addOperation { try await second.run() }
    await first.started.wait()
    await second.started.wait()

    firstOperation.pause()
    #expect(firstOperation.state == .executing, "paused only at its checkpoint")
    first.proceed.open()
    await reach(firstOperation, .paused)
    #expect(firstOperation.isPaused)

    let more = (0..<4).map { Transfer("more\($0)") }
    let moreOperations = more.map { transfer in queue.addOperation { try await transfer.run() } }
    for transfer in more { await transfer.started.wait() }  // all 4 start: the paused one holds no slot
    #expect(queue.operations.filter(\.isExecuting).count == 5)

    firstOperation.resume()
    #expect(firstOperation.state == .ready, "resumed, it waits for a slot")
    more[0].complete()
    #expect(try await moreOperations[0].value == "more0")
    await reach(firstOperation, .executing)
    first.finish.open()
    #expect(try await firstOperation.value == "first")
    second.complete()
    for transfer in more.dropFirst() { transfer.complete() }
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test(
    "OperationQueue, limit 5: a transfer paused the way Operation code does it keeps its slot, so only 3 more start"
  )
  func pauseKeepsSlotFoundation() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 5
    // Asynchronous operations, as transfers are: none holds a thread. A "paused" transfer simply
    // does not finish (Operation has no pause), so it keeps its slot.
    let first = TransferOperation()
    let second = TransferOperation()
    queue.addOperation(first)
    queue.addOperation(second)
    await first.started.wait()
    await second.started.wait()
    let more = (0..<4).map { _ in TransferOperation() }
    for operation in more { queue.addOperation(operation) }
    for operation in more.prefix(3) { await operation.started.wait() }
    #expect(more.filter { $0.isExecuting }.count == 3)
    #expect(!more[3].isExecuting && !more[3].isFinished, "the fourth waits behind the paused transfer")
    for operation in [first, second] + more { operation.finish() }
    await queue.allFinished()
    #expect(more[3].isFinished)
  }

  @Test(
    "Lowering 10 → 5 with the excess paused: exactly 5 execute, the most recently started pause, and they resume as others finish"
  )
  func lowerLimitPausingExcess() async throws {
    let queue = ActorQueue(name: "downloads", maxConcurrentOperationCount: 10)
    let transfers = (0..<10).map { Transfer("t\($0)") }
    let operations = transfers.map { transfer in queue.addOperation { try await transfer.run() } }
    for transfer in transfers { await transfer.started.wait() }
    #expect(queue.operations.filter(\.isExecuting).count == 10)

    queue.setMaxConcurrentOperationCount(5, pausingExcess: true)
    #expect(queue.maxConcurrentOperationCount == 5)
    for transfer in transfers { transfer.proceed.open() }
    for operation in operations[5...] { await reach(operation, .paused) }
    #expect(operations[..<5].allSatisfy { $0.state == .executing })
    #expect(queue.operations.filter(\.isExecuting).count == 5)

    // Each transfer that finishes hands its slot to a paused one, in submission order.
    for index in 0..<5 {
      transfers[index].finish.open()
      _ = try await operations[index].value
      await reach(operations[5 + index], .executing)
      #expect(queue.operations.filter(\.isExecuting).count <= 5)
    }
    for transfer in transfers[5...] { transfer.finish.open() }
    for (index, operation) in operations.enumerated() { #expect(try await operation.value == "t\(index)") }
  }

  @Test("The property setter keeps the lazy rule: lowering the limit pauses nothing")
  func setterDoesNotPause() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 3)
    let transfers = (0..<3).map { Transfer("t\($0)") }
    let operations = transfers.map { transfer in queue.addOperation { try await transfer.run() } }
    for transfer in transfers { await transfer.started.wait() }
    queue.maxConcurrentOperationCount = 1
    for transfer in transfers { transfer.complete() }
    for operation in operations { _ = try await operation.value }
    #expect(operations.allSatisfy { $0.state == .finished })
  }

  @Test(
    "isPaused is false while the body, asked to pause, runs on to its checkpoint; true once it paused there")
  func isPausedOnlyAtCheckpoint() async throws {
    let queue = ActorQueue(name: "downloads", maxConcurrentOperationCount: 1)
    let transfer = Transfer("asked")
    let operation = queue.addOperation { try await transfer.run() }
    await transfer.started.wait()
    operation.pause()
    // Asked, not paused: it still holds its slot and runs.
    #expect(operation.state == .executing && !operation.isPaused)
    transfer.proceed.open()
    await reach(operation, .paused)
    #expect(operation.isPaused)
    operation.resume()
    await reach(operation, .executing)
    #expect(!operation.isPaused)
    transfer.finish.open()
    #expect(try await operation.value == "asked")
    #expect(!operation.isPaused)
  }

  @Test("Cancelling a paused op wakes its checkpoint with CancellationError: it ends .cancelled")
  func cancelPausedOperation() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let transfer = Transfer("t")
    let operation = queue.addOperation { try await transfer.run() }
    await transfer.started.wait()
    operation.pause()
    transfer.proceed.open()
    await reach(operation, .paused)
    operation.cancel()
    await operation.waitUntilFinished()
    #expect(operation.state == .cancelled)
    #expect(operation.thrownError == nil)
    #expect(queue.operationCount == 0)
  }

  @Test("Pausing a waiting op holds it: ops behind it run; resumed, it runs")
  func pauseHoldsWaitingOperation() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let busy = Transfer("busy")
    queue.addOperation { try await busy.run() }
    await busy.started.wait()
    let held = queue.addOperation { "held" }
    let behind = queue.addOperation { "behind" }
    held.pause()
    #expect(held.state == .pending && held.isPaused)
    busy.complete()
    #expect(try await behind.value == "behind")
    #expect(held.state == .pending)
    held.resume()
    #expect(try await held.value == "held")
  }

  @Test("The checkpoint with onPause and onResume: onPause before the slot goes, onResume once it is back")
  func checkpointHooks() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let log = Recorder<String>()
    let proceed = Gate()
    let started = Gate()
    let operation = queue.addOperation { () -> Int in
      started.open()
      await proceed.wait()
      try await ActorQueue.checkpoint(
        onPause: { log.append("onPause") },
        onResume: { log.append("onResume") })
      return 1
    }
    let next = queue.addOperation { log.append("next ran") }
    await started.wait()
    #expect(!ActorQueue.isPauseRequested, "outside an operation's body it is false")
    operation.pause()
    proceed.open()
    await reach(operation, .paused)
    try await next.value
    operation.resume()
    #expect(try await operation.value == 1)
    #expect(log.snapshot == ["onPause", "next ran", "onResume"])
  }

  @Test(
    "A checkpoint with nothing asked returns at once; outside a body it only checks the task's cancellation")
  func checkpointOutsideBody() async throws {
    try await ActorQueue.checkpoint()
    let cancelled = Task {
      await untilCancelled()
      try await ActorQueue.checkpoint()
    }
    cancelled.cancel()
    await #expect(throws: CancellationError.self) { try await cancelled.value }
    let queue = ActorQueue()
    #expect(
      try await queue.addOperation {
        try await ActorQueue.checkpoint(); return 2
      }.value == 2)
  }

  @Test(
    "Only the body's own task pauses its op: a checkpoint in a child task or an unstructured task only checks cancellation"
  )
  func onlyTheBodysTaskPauses() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let started = Gate()
    let proceed = Gate()
    let log = Recorder<String>()
    let operation = queue.addOperation { () -> Int in
      started.open()
      await proceed.wait()
      await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
          #expect(!ActorQueue.isPauseRequested, "a child task cannot pause the op")
          try await ActorQueue.checkpoint()
          log.append("child passed")
        }
        try? await group.waitForAll()
      }
      try await Task { try await ActorQueue.checkpoint() }.value
      log.append("unstructured passed")
      #expect(ActorQueue.isPauseRequested)
      try await ActorQueue.checkpoint()
      log.append("body resumed")
      return 1
    }
    await started.wait()
    operation.pause()
    proceed.open()
    await reach(operation, .paused)
    #expect(log.snapshot == ["child passed", "unstructured passed"])
    operation.resume()
    #expect(try await operation.value == 1)
    #expect(log.snapshot == ["child passed", "unstructured passed", "body resumed"])
  }

  @Test(
    "Pause all frees every slot at the checkpoints and holds the waiting ops; resume all brings them back")
  func pauseAllResumeAll() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    let transfers = (0..<4).map { Transfer("t\($0)") }
    let operations = transfers.map { transfer in queue.addOperation { try await transfer.run() } }
    await transfers[0].started.wait()
    await transfers[1].started.wait()
    queue.pauseAllOperations()
    transfers[0].proceed.open()
    transfers[1].proceed.open()
    await reach(operations[0], .paused)
    await reach(operations[1], .paused)
    #expect(operations[2].state == .pending && operations[3].state == .pending)
    #expect(queue.operations.filter(\.isExecuting).isEmpty)
    #expect(queue.operationCount == 4)
    queue.resumeAllOperations()
    for transfer in transfers { transfer.complete() }
    for (index, operation) in operations.enumerated() { #expect(try await operation.value == "t\(index)") }
  }

  @Test("Events report .paused only when the op really paused, and every later state once")
  func eventsReportRealPauses() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let transfer = Transfer("t")
    let operation = queue.addOperation { try await transfer.run() }
    await transfer.started.wait()
    let events = operation.events  // subscribed now: the current state first
    let states = Task {
      var seen: [OperationState] = []
      for await state in events { seen.append(state) }
      return seen
    }
    operation.pause()
    operation.resume()  // withdrawn before any checkpoint: no .paused
    operation.pause()
    transfer.proceed.open()
    await reach(operation, .paused)
    operation.resume()
    await reach(operation, .executing)
    transfer.finish.open()
    _ = try await operation.value
    let seen = await states.value
    // Resumed with a free slot, it is ready and given the slot in the same step.
    #expect(seen == [.executing, .paused, .ready, .executing, .finished])
  }
}

/// An asynchronous `Operation` in the usual hand-written style (KVO for `isExecuting` and
/// `isFinished`), holding no thread while it runs: it finishes when told to (at once when it
/// starts, if it was told before).
///
/// `@unchecked Sendable`: its mutable state is guarded by `lock`.
private final class TransferOperation: Operation, @unchecked Sendable {
  let started = Gate()
  private let lock = NSLock()
  private var executing = false
  private var finished = false
  private var finishRequested = false

  override var isAsynchronous: Bool { true }
  override var isExecuting: Bool { lock.withLock { executing } }
  override var isFinished: Bool { lock.withLock { finished } }

  override func start() {
    willChangeValue(forKey: "isExecuting")
    lock.withLock { executing = true }
    didChangeValue(forKey: "isExecuting")
    started.open()
    if lock.withLock({ finishRequested }) { complete() }
  }

  func finish() {
    let running = lock.withLock {
      finishRequested = true
      return executing
    }
    if running { complete() }
  }

  /// Moves from executing to finished, once (`start` and `finish` may both call it).
  private func complete() {
    let claimed = lock.withLock {
      guard executing, !finishing else { return false }
      finishing = true
      return true
    }
    guard claimed else { return }
    willChangeValue(forKey: "isExecuting")
    willChangeValue(forKey: "isFinished")
    lock.withLock {
      executing = false
      finished = true
    }
    didChangeValue(forKey: "isFinished")
    didChangeValue(forKey: "isExecuting")
  }

  private var finishing = false
}

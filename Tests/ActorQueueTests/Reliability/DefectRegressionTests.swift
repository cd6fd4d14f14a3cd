import ActorQueue
import Foundation
import TestSupport
import Testing

/// One test per defect that an outside model-based tester found at 6e969fb (issue 10), each
/// asserting the correct behaviour. They ran in child processes while the defects (traps and
/// deadlocks) were open; fixed, they run in-process: a trap would still fail the run, and a
/// deadlock the test, at its time limit.
@Suite("Reliability: regressions of issue 10", .timeLimit(.minutes(hangLimitMinutes)))
struct ReliabilityRegressionTests {
  struct Failure: Error, Equatable {}

  // MARK: Deadlock: the last reference to a queue released under the scheduler's lock

  @Test("Cancelling a waiting op whose body holds the last reference to a queue does not deadlock")
  func cancelReleasingLastQueueReference() async {
    let queue = ActorQueue(name: "suspended")
    queue.isSuspended = true
    var owner: QueueBox? = QueueBox(ActorQueue(name: "owned"))
    weak let owned = owner
    let op = queue.addOperation { [owner] in _ = owner }
    owner = nil
    op.cancel()  // releases the body, the owner, the owned queue
    #expect(op.state == .cancelled)
    #expect(await eventuallyFreed { owned == nil })
  }

  @Test(
    "A failure cascading to a waiting op whose body holds the last reference to a queue does not deadlock")
  func failureCascadeReleasingLastQueueReference() async {
    let queue = ActorQueue(name: "work")
    let gate = Gate()
    let failing = queue.addOperation { () async throws -> Int in
      await gate.wait()
      throw Failure()
    }
    var owner: QueueBox? = QueueBox(ActorQueue(name: "owned"))
    weak let owned = owner
    let dependent = QueueOperation<Int> { [owner] in
      _ = owner
      return 0
    }
    try? dependent.addDependency(failing, requiring: .success)
    try? queue.addOperation(dependent)
    owner = nil
    gate.open()
    #expect(await dependent.result.failure is DependencyFailedError)
    #expect(await eventuallyFreed { owned == nil })
  }

  @Test(
    "Releasing a suspended queue whose waiting op holds the last reference to another queue does not deadlock"
  )
  func releasingSuspendedQueueReleasingAnother() async {
    var queue: ActorQueue? = ActorQueue(name: "suspended")
    queue!.isSuspended = true
    var owner: QueueBox? = QueueBox(ActorQueue(name: "owned"))
    weak let owned = owner
    let op = queue!.addOperation { [owner] in _ = owner }
    owner = nil
    queue = nil  // its deinit cancels the op, which releases the other queue
    #expect(op.state == .cancelled)
    #expect(await eventuallyFreed { owned == nil })
  }

  // MARK: Crash: typed inputs that had already ended badly

  @Test("addOperation(after: a, b) with a first input that already failed ends .failed")
  func typedInputsFirstFailed() async {
    let queue = ActorQueue(name: "inputs")
    let failed = queue.addOperation { () async throws -> Int in throw Failure() }
    _ = await failed.result
    let fine = queue.addOperation { 2 }
    let both = queue.addOperation(after: failed, fine) { first, second in first + second }
    #expect(await both.result.failure is DependencyFailedError)
    #expect(both.state == .failed)
  }

  @Test("addOperation(after: a, b) with a first input that was already cancelled ends .cancelled")
  func typedInputsFirstCancelled() async {
    let queue = ActorQueue(name: "inputs")
    queue.isSuspended = true
    let cancelled = queue.addOperation { 1 }
    cancelled.cancel()
    let fine = queue.addOperation { 2 }
    let both = queue.addOperation(after: cancelled, fine) { first, second in first + second }
    queue.isSuspended = false
    #expect(await both.result.failure is CancellationError)
    #expect(both.state == .cancelled)
  }

  // MARK: Crash: a diamond of must-succeed edges

  /// D requires X (added first), A has X as a typed input, D requires A.
  private static func diamond(_ queue: ActorQueue, x: QueueOperation<Int>) throws -> (
    a: QueueOperation<Int>, d: QueueOperation<Int>
  ) {
    let d = QueueOperation<Int>(name: "D") { 0 }
    try d.addDependency(x, requiring: .success)
    let a = queue.addOperation(name: "A", after: x) { $0 }
    try d.addDependency(a, requiring: .success)
    try queue.addOperation(d)
    return (a, d)
  }

  @Test("Cancelling the top of a must-succeed diamond ends the bottom once, cancelled")
  func diamondCancelled() async {
    let queue = ActorQueue(name: "diamond")
    queue.isSuspended = true
    let x = queue.addOperation(name: "X") { 1 }
    let (a, d) = try! Self.diamond(queue, x: x)
    x.cancel()
    #expect(a.state == .cancelled)
    #expect(d.state == .cancelled)
  }

  @Test("The top of a must-succeed diamond throwing fails the bottom once")
  func diamondFailed() async {
    let queue = ActorQueue(name: "diamond")
    let gate = Gate()
    let x = queue.addOperation(name: "X") { () async throws -> Int in
      await gate.wait()
      throw Failure()
    }
    let (a, d) = try! Self.diamond(queue, x: x)
    gate.open()
    #expect(await d.result.failure is DependencyFailedError)
    #expect(a.state == .failed)
    #expect(d.state == .failed)
  }

  // MARK: cancelAllOperations and the idle fast path

  @Test("cancelAllOperations on an idle queue ends a chain waiting outside it cancelled, no body run")
  func cancelAllIdleChain() async {
    let outside = ActorQueue(name: "outside")
    let gate = Gate()
    let external = outside.addOperation { await gate.wait() }
    let queue = ActorQueue(name: "idle")
    let ran = Recorder<String>()
    let op1 = QueueOperation<Void>(name: "op1") { ran.append("op1") }
    try! op1.addDependency(external)
    let op2 = QueueOperation<Void>(name: "op2") { ran.append("op2") }
    try! op2.addDependency(op1)
    try! queue.addOperations([op1, op2])
    queue.cancelAllOperations()
    #expect(op1.state == .cancelled)
    #expect(op2.state == .cancelled)
    gate.open()
    await external.waitUntilFinished()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(ran.snapshot.isEmpty)
    #expect(op2.state == .cancelled)
  }

  @Test("cancelAllOperations on the parse queue of download → parse → render runs neither parse nor render")
  func cancelAllPipelineAcrossQueues() async {
    let network = ActorQueue(name: "network")
    let processing = ActorQueue(name: "processing")
    let gate = Gate()
    let ran = Recorder<String>()
    let download = network.addOperation(name: "download") { () async -> Int in
      await gate.wait()
      return 1
    }
    let parse = processing.addOperation(name: "parse", after: download) { bytes -> Int in
      ran.append("parse")
      return bytes
    }
    let render = QueueOperation<Void>(name: "render") { ran.append("render") }
    try! render.addDependency(parse)
    try! processing.addOperation(render)
    processing.cancelAllOperations()
    #expect(parse.state == .cancelled)
    #expect(render.state == .cancelled)
    gate.open()
    _ = await download.result
    await processing.waitUntilAllOperationsAreFinished()
    #expect(ran.snapshot.isEmpty)
    #expect(render.state == .cancelled)
  }

  // MARK: Barriers

  @Test("An op added after two barriers waits for the first while it runs, even if the second was cancelled")
  func laterCancelledBarrierDoesNotHideEarlierOne() async throws {
    let queue = ActorQueue(name: "barriers", maxConcurrentOperationCount: 3)
    let gate = Gate()
    let started = Gate()
    let first = queue.addBarrierBlock(name: "first") {
      started.open()
      await gate.wait()
    }
    let second = queue.addBarrierBlock(name: "second") {}
    await started.wait()
    second.cancel()
    let after = queue.addOperation(name: "after") { 1 }
    #expect(after.state == .pending)
    #expect(first.state == .executing)
    gate.open()
    #expect(try await after.value == 1)
  }

  @Test("Removing an explicit dependency on a barrier keeps the barrier's ordering")
  func removeDependencyKeepsBarrierOrdering() async throws {
    let queue = ActorQueue(name: "barrier")
    let gate = Gate()
    let started = Gate()
    let barrier = queue.addBarrierBlock {
      started.open()
      await gate.wait()
    }
    await started.wait()
    let op = QueueOperation<Int>(name: "after") { 1 }
    try! queue.addOperation(op)
    try! op.addDependency(barrier)
    op.removeDependency(barrier)
    #expect(op.state == .pending)
    gate.open()
    #expect(try await op.value == 1)
  }

  @Test("An ended barrier does not keep the ops before it alive")
  func endedBarrierReleasesEarlierOps() async {
    let count = 1_000
    let bytes = fullStress ? 100_000 : 1_000
    let queue = ActorQueue(name: "barrier", maxConcurrentOperationCount: 4)
    var weakOps: [Weak<AnyQueueOperation>] = []
    do {
      var ops: [QueueOperation<[UInt8]>] = []
      for _ in 0..<count {
        let op = queue.addOperation { [UInt8](repeating: 1, count: bytes) }
        ops.append(op)
        weakOps.append(Weak(object: op))
      }
      let barrier = queue.addBarrierBlock {}
      weakOps.append(Weak(object: barrier))
      await barrier.waitUntilFinished()
    }
    let freed = await eventuallyFreed { weakOps.allSatisfy { $0.object == nil } }
    #expect(freed, "\(weakOps.filter { $0.object != nil }.count) of \(count + 1) ops still alive")
    withExtendedLifetime(queue) {}
  }

  // MARK: Leaks and retention

  @Test("An edge to an op that already ended does not make a retain cycle")
  func edgeToEndedOpDoesNotLeak() async {
    weak var weakX: QueueOperation<Int>?
    weak var weakD: QueueOperation<Int>?
    do {
      let queue = ActorQueue(name: "leak")
      queue.isSuspended = true  // D waits in it: it can still take dependencies
      let d = queue.addOperation(name: "D") { 1 }
      let x = QueueOperation<Int>(name: "X") { 2 }
      try! x.addDependency(d)
      try! queue.addOperation(x)
      x.cancel()  // X ended while it waited for D, and still lists D
      try? d.addDependency(x)  // may be refused; if accepted, it must not keep X and D alive
      weakX = x
      weakD = d
      queue.isSuspended = false
      _ = await d.result
    }
    #expect(await eventuallyFreed { weakX == nil && weakD == nil })
  }

  @Test("An edge from a barrier to an op that ended waiting for it does not make a retain cycle")
  func barrierEdgeToEndedOpDoesNotLeak() async {
    weak var weakX: QueueOperation<Int>?
    weak var weakBarrier: QueueOperation<Void>?
    do {
      let queue = ActorQueue(name: "leak")
      let gate = Gate()
      let before = queue.addOperation(name: "before") { () async -> Int in
        await gate.wait()
        return 0
      }
      let barrier = queue.addBarrierBlock {}
      let x = queue.addOperation(name: "X") { 2 }  // waits for the barrier
      x.cancel()
      try? barrier.addDependency(x)
      weakX = x
      weakBarrier = barrier
      gate.open()
      _ = await before.result
      await barrier.waitUntilFinished()
    }
    #expect(await eventuallyFreed { weakX == nil && weakBarrier == nil })
  }

  @Test("The body of the first op a worker ran is freed when that op ends, not when the worker retires")
  func firstBodyOfWorkerFreedWhenOpEnds() async {
    let queue = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    let firstGate = Gate()
    let secondGate = Gate()
    let secondStarted = Gate()
    weak var weakToken: Token?
    let first: QueueOperation<Void>
    do {
      let token = Token()
      weakToken = token
      first = queue.addOperation(name: "first") {
        _ = token
        await firstGate.wait()
      }
    }
    let second = queue.addOperation(name: "second") {
      secondStarted.open()
      await secondGate.wait()
    }
    firstGate.open()
    await first.waitUntilFinished()
    await secondStarted.wait()  // the same worker now runs the second op
    #expect(await eventuallyFreed { weakToken == nil }, "the first body is still alive")
    secondGate.open()
    await second.waitUntilFinished()
  }

  // MARK: Scheduler issue

  @Test("addOperations([low, veryHigh]) on an idle serial queue runs veryHigh first")
  func batchIsScheduledWhole() async {
    let queue = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    let order = Recorder<String>()
    let low = QueueOperation<Void>(name: "low", priority: .low) { order.append("low") }
    let high = QueueOperation<Void>(name: "veryHigh", priority: .veryHigh) { order.append("veryHigh") }
    try! queue.addOperations([low, high])
    await queue.waitUntilAllOperationsAreFinished()
    #expect(order.snapshot == ["veryHigh", "low"])
  }

  @Test("A body that throws after cancel() ends .cancelled and its value throws CancellationError")
  func throwAfterCancelIsCancelled() async {
    let queue = ActorQueue(name: "work")
    let gate = Gate()
    let started = Gate()
    let op = queue.addOperation { () async throws -> Int in
      started.open()
      await gate.wait()
      throw Failure()
    }
    await started.wait()
    op.cancel()
    gate.open()
    let result = await op.result
    #expect(op.state == .cancelled)
    #expect(result.failure is CancellationError)
  }
}

extension Result {
  fileprivate var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}

/// Found by the random tester beyond the list of issue 10.
@Suite("Reliability: regressions found by the random tester")
struct ReliabilityFoundRegressionTests {
  @Test("Ops made ready together by one op's end start by priority on an idle serial queue")
  func cascadeOnIdleQueueRespectsPriority() async {
    // The same root cause as the batch: the idle fast path claims the first op made ready before
    // the others are ready, so one end that readies several ops starts the first, not the best.
    let outside = ActorQueue(name: "outside")
    let gate = Gate()
    let source = outside.addOperation(name: "source") { await gate.wait() }
    let queue = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    let order = Recorder<String>()
    let low = QueueOperation<Void>(name: "low", priority: .veryLow) { order.append("low") }
    let high = QueueOperation<Void>(name: "high", priority: .veryHigh) { order.append("high") }
    try! low.addDependency(source)
    try! high.addDependency(source)
    try! queue.addOperations([low, high])
    gate.open()
    await source.waitUntilFinished()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(order.snapshot == ["high", "low"])
  }

  @Test("An op that started and ended is not kept alive by its queue while other ops of its priority wait")
  func startedOpNotRetainedByReadyQueue() async {
    // The ready queue's FIFO lane advances a head index over popped entries and keeps them until
    // the lane empties: an ended op (its result, its dependencies) lives as long as the backlog.
    let queue = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let gate = Gate()
    let secondStarted = Gate()
    weak var weakFirst: QueueOperation<[UInt8]>?
    do {
      let first = queue.addOperation(name: "first") { [UInt8](repeating: 1, count: 1_000) }
      weakFirst = first
    }
    let second = queue.addOperation(name: "second") {
      secondStarted.open()
      await gate.wait()
    }
    let third = queue.addOperation(name: "third") {}
    queue.isSuspended = false
    await secondStarted.wait()  // the first has ended; the third still waits in the same lane
    #expect(await eventuallyFreed { weakFirst == nil }, "the ended first op is still alive")
    gate.open()
    await second.waitUntilFinished()
    await third.waitUntilFinished()
  }

  @Test("A cancelled waiting op is not kept alive by its queue while other ops wait")
  func cancelledOpNotRetainedByReadyQueue() async {
    // Withdrawn entries are only marked; the ready queue keeps them until they are popped or
    // more than 64 are marked.
    let queue = ActorQueue(name: "suspended")
    queue.isSuspended = true
    weak var weakCancelled: QueueOperation<Int>?
    let waiting = queue.addOperation(name: "waiting") { 2 }
    do {
      let cancelled = queue.addOperation(name: "cancelled") { 1 }
      weakCancelled = cancelled
      cancelled.cancel()
    }
    #expect(await eventuallyFreed { weakCancelled == nil }, "the cancelled op is still alive")
    queue.isSuspended = false
    _ = await waiting.result
  }
}

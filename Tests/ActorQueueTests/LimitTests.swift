import ActorQueue
import Foundation
import TestSupport
import Testing

/// Ops that block until released, each counted by a probe, for limit scripts.
private struct GatedOps {
  let started: CountdownGate
  let gates: [Gate]
  let operations: [QueueOperation<Int>]

  init(_ count: Int, on queue: ActorQueue, probe: ConcurrencyProbe, expectedStarts: Int) {
    let started = CountdownGate(count: expectedStarts)
    let gates = (0..<count).map { _ in Gate() }
    self.started = started
    self.gates = gates
    operations = (0..<count).map { index in
      queue.addOperation(name: "op\(index)") {
        probe.enter()
        started.signal()
        await gates[index].wait()
        probe.leave()
        return index
      }
    }
  }

  /// Releases op `index` and waits until it has ended.
  func finish(_ index: Int) async {
    gates[index].open()
    await operations[index].waitUntilFinished()
  }
}

@Suite("Limit", .timeLimit(.minutes(hangLimitMinutes)))
struct LimitTests {
  @Test("Default limit is Int.max (unlimited); -1 is accepted as unlimited; reading returns Int.max")
  func defaultAndMinusOne() {
    #expect(ActorQueue.defaultMaxConcurrentOperationCount == Int.max)
    #expect(ActorQueue().maxConcurrentOperationCount == Int.max)
    #expect(ActorQueue(maxConcurrentOperationCount: -1).maxConcurrentOperationCount == Int.max)
    let queue = ActorQueue(maxConcurrentOperationCount: 3)
    #expect(queue.maxConcurrentOperationCount == 3)
    queue.maxConcurrentOperationCount = -1
    #expect(queue.maxConcurrentOperationCount == Int.max)
    queue.maxConcurrentOperationCount = 1
    #expect(queue.maxConcurrentOperationCount == 1)
    // Foundation's constant is -1 and means the same.
    #expect(OperationQueue.defaultMaxConcurrentOperationCount == -1)
    #expect(OperationQueue().maxConcurrentOperationCount == -1)
  }

  @Test("Unlimited really runs every op at once (default and -1)", arguments: [Int.max, -1])
  func unlimitedRunsAllAtOnce(limit: Int) async {
    let queue = ActorQueue(maxConcurrentOperationCount: limit)
    let probe = ConcurrencyProbe()
    // Each op waits for the others to have started: only passes if all 20 execute at once.
    let ops = GatedOps(20, on: queue, probe: probe, expectedStarts: 20)
    await ops.started.wait()
    #expect(probe.current == 20)
    #expect(ops.operations.allSatisfy { $0.isExecuting })
    for gate in ops.gates { gate.open() }
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test("0 is refused with a message that says to use isSuspended", arguments: [0, -2])
  func belowOneRefusedAtInit(limit: Int) async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [limit] in
      _ = ActorQueue(maxConcurrentOperationCount: limit)
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(message.contains("isSuspended"))
  }

  @Test("Setting the limit to 0 live is refused too")
  func zeroRefusedLive() async {
    await #expect(processExitsWith: .failure) {
      let queue = ActorQueue(maxConcurrentOperationCount: 2)
      queue.maxConcurrentOperationCount = 0
    }
  }

  @Test("max 2 really runs 2 at once, never 3")
  func maxTwoRunsTwo() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    let log = StreamLog(queue.events)
    let probe = ConcurrencyProbe()
    let ops = GatedOps(6, on: queue, probe: probe, expectedStarts: 2)
    await ops.started.wait()
    // Two execute; the rest are ready and wait for a slot (the start rule is decided under
    // the scheduler's lock, so this is not a race).
    #expect(probe.current == 2)
    #expect(ops.operations[0].isExecuting && ops.operations[1].isExecuting)
    #expect(ops.operations[2...].allSatisfy { $0.state == .ready })
    for index in 0..<6 { await ops.finish(index) }
    let events = await log.waitForEnd(of: ops.operations)
    log.stop()
    #expect(probe.maximum == 2)
    #expect(events.allSatisfy { $0.executingCount <= 2 && $0.maxConcurrentOperationCount == 2 })
    #expect(events.contains { $0.executingCount == 2 })
  }

  @Test("OperationQueue: max 2 really runs 2 at once, never 3")
  func maxTwoRunsTwoFoundation() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 2
    let probe = ConcurrencyProbe()
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    for _ in 0..<6 {
      queue.addOperation {
        probe.enter()
        started.signal()
        release.wait()
        probe.leave()
      }
    }
    await onBlockingThread {
      started.wait()
      started.wait()
    }
    #expect(probe.current == 2)
    for _ in 0..<6 { release.signal() }
    await queue.allFinished()
    #expect(probe.maximum == 2)
  }

  @Test("Raising the limit starts waiting ops at once (P3)")
  func raisingStartsWaitingOps() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let log = StreamLog(queue.events)
    let probe = ConcurrencyProbe()
    let ops = GatedOps(4, on: queue, probe: probe, expectedStarts: 3)
    await log.wait(until: { startOrder(in: $0).count == 1 })
    #expect(ops.operations[1].state == .ready)
    queue.maxConcurrentOperationCount = 3
    // Nothing else happens: the raise alone starts two more.
    await ops.started.wait()
    #expect(probe.current == 3)
    #expect(ops.operations[3].state == .ready)
    for index in 0..<4 { await ops.finish(index) }
    let events = await log.waitForEnd(of: ops.operations)
    log.stop()
    let raised = events.firstIndex { $0.kind == .limitChanged(3) }
    #expect(raised != nil)
    if let raised {
      #expect(events[raised].executingCount == 1)
      #expect(events[..<raised].allSatisfy { $0.executingCount <= 1 })
    }
  }

  @Test(
    "Lowering the limit governs every later start at once: executing never exceeds the new limit after the change (P3)"
  )
  func loweringGovernsLaterStarts() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 3)
    let log = StreamLog(queue.events)
    let probe = ConcurrencyProbe()
    let ops = GatedOps(6, on: queue, probe: probe, expectedStarts: 3)
    await ops.started.wait()
    #expect(probe.current == 3)
    queue.maxConcurrentOperationCount = 1
    #expect(queue.maxConcurrentOperationCount == 1)
    // Ops already executing are not interrupted.
    #expect(ops.operations[0..<3].allSatisfy { $0.isExecuting })
    await ops.finish(0)
    // 2 still execute, >= 1: op3 must not have started. Decided when op0 ended, under the lock.
    #expect(ops.operations[3].state == .ready)
    await ops.finish(1)
    #expect(ops.operations[3].state == .ready)
    await ops.finish(2)
    for index in 3..<6 { await ops.finish(index) }
    let events = await log.waitForEnd(of: ops.operations)
    log.stop()
    guard let lowered = events.firstIndex(where: { $0.kind == .limitChanged(1) }) else {
      Issue.record("no limitChanged(1) event in \(events)")
      return
    }
    #expect(events[lowered].executingCount == 3)
    #expect(events[lowered].maxConcurrentOperationCount == 1)
    // After the change: every start happens with the executing count at most the new limit.
    let laterStarts = events[(lowered + 1)...].filter { $0.operationState == .executing }
    #expect(laterStarts.count == 3)
    #expect(laterStarts.allSatisfy { $0.executingCount == 1 && $0.maxConcurrentOperationCount == 1 })
    // And the executing count only goes down until it is below the limit.
    #expect(events[(lowered + 1)...].allSatisfy { $0.maxConcurrentOperationCount == 1 })
    #expect(startOrder(in: events) == ops.operations.map(\.id))
  }

  @Test("A live limit honoured through 3 -> 10 -> 5 with many ops (field scenario 2)")
  func liveLimitChanges() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 3)
    let log = StreamLog(queue.events)
    let probe = ConcurrencyProbe()
    let ops = GatedOps(20, on: queue, probe: probe, expectedStarts: 10)
    await log.wait(until: { $0.last?.executingCount == 3 })
    queue.maxConcurrentOperationCount = 10
    await ops.started.wait()
    #expect(probe.current == 10)
    queue.maxConcurrentOperationCount = 5
    for index in 0..<20 { await ops.finish(index) }
    let events = await log.waitForEnd(of: ops.operations)
    log.stop()
    // Replay: under each limit in force, no start took the count above it.
    for event in events where event.operationState == .executing {
      #expect(event.executingCount <= event.maxConcurrentOperationCount)
    }
    let lowered = events.firstIndex { $0.kind == .limitChanged(5) }!
    let startsAfterLowering = events[lowered...].filter { $0.operationState == .executing }
    #expect(startsAfterLowering.count == 10)
    #expect(probe.maximum == 10)
  }
}

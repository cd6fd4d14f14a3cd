import Testing

@testable import ActorQueue

/// The start rule as a value: these tests run no task.
@Suite struct SchedulerStateMachineTests {
  typealias Machine = SchedulerStateMachine<String>

  /// One worker runs every operation it can claim, one after another, ending each at once;
  /// returns them in the order they ran.
  private func runToCompletion(_ machine: inout Machine) -> [String] {
    var ran: [String] = []
    var step = machine.workerStarted()
    while let operation = step.run {
      ran.append(operation)
      machine.operationEnded()
      step = machine.workerStarted()
    }
    return ran
  }

  /// Starts a worker and lets it claim; returns what it claimed.
  private func startWorker(_ machine: inout Machine) -> String? {
    machine.workerStarted().run
  }

  @Test func firstReadyOperationAsksForOneWorker() {
    var machine = Machine(limit: 2)
    let v1 = machine.makeReady("a", order: 1, priority: .normal)
    #expect(v1.spawnWorker)
    // One worker is already starting: no second one until it claims.
    let v2 = machine.makeReady("b", order: 2, priority: .normal)
    #expect(!v2.spawnWorker)
    let step = machine.workerStarted()
    #expect(step.run == "a")
    #expect(step.spawnWorker, "a claim asks for the next worker while ready operations wait")
    let v3 = startWorker(&machine)
    #expect(v3 == "b")
    #expect(machine.executing == 2)
  }

  @Test func neverMoreThanTheLimitExecute() {
    var machine = Machine(limit: 2)
    for order in 1...5 { _ = machine.makeReady("op\(order)", order: UInt64(order), priority: .normal) }
    let first = machine.workerStarted()
    #expect(first.run == "op1")
    #expect(first.spawnWorker)
    let second = machine.workerStarted()
    #expect(second.run == "op2")
    #expect(!second.spawnWorker, "both slots are taken: no third worker")
    #expect(machine.executing == 2)
    #expect(machine.startingWorkers == 0)
    #expect(machine.readyCount == 3)
  }

  @Test func priorityThenSubmissionOrder() {
    var machine = Machine(limit: 1)
    _ = machine.makeReady("low", order: 1, priority: .low)
    _ = machine.makeReady("normal1", order: 2, priority: .normal)
    _ = machine.makeReady("veryHigh", order: 3, priority: .veryHigh)
    _ = machine.makeReady("normal2", order: 4, priority: .normal)
    _ = machine.makeReady("veryLow", order: 5, priority: .veryLow)
    _ = machine.makeReady("high", order: 6, priority: .high)
    let ran = runToCompletion(&machine)
    #expect(ran == ["veryHigh", "high", "normal1", "normal2", "low", "veryLow"])
  }

  @Test func lateReadyOperationKeepsItsSubmissionOrder() {
    // An operation submitted first but ready last (after a dependency) still goes first
    // among its priority, as in Foundation.
    var machine = Machine(limit: 1, isSuspended: true)
    _ = machine.makeReady("second", order: 2, priority: .normal)
    _ = machine.makeReady("third", order: 3, priority: .normal)
    _ = machine.makeReady("first", order: 1, priority: .normal)
    _ = machine.setSuspended(false)
    let ran = runToCompletion(&machine)
    #expect(ran == ["first", "second", "third"])
  }

  @Test func reprioritizingAWaitingOperationResortsIt() {
    var machine = Machine(limit: 1)
    _ = machine.makeReady("a", order: 1, priority: .normal)
    let b = machine.makeReady("b", order: 2, priority: .normal).stamp
    _ = machine.makeReady("c", order: 3, priority: .normal)
    _ = machine.reprioritize("b", stamp: b, order: 2, from: .normal, to: .high)
    let v6 = startWorker(&machine)
    #expect(v6 == "b")
    #expect(machine.readyCount == 2)
  }

  @Test func withdrawnOperationsNeverStart() {
    var machine = Machine(limit: 1)
    let a = machine.makeReady("a", order: 1, priority: .normal).stamp
    _ = machine.makeReady("b", order: 2, priority: .normal)
    machine.withdraw(stamp: a, priority: .normal)
    #expect(machine.readyCount == 1)
    let v7 = startWorker(&machine)
    #expect(v7 == "b")
    machine.operationEnded()
    let v8 = machine.workerStarted()
    #expect(v8.run == nil)
  }

  @Test func manyWithdrawalsAreCompactedAway() {
    var machine = Machine(limit: 1, isSuspended: true)
    var stamps: [(UInt64, Int)] = []
    for index in 0..<1_000 {
      stamps.append((machine.makeReady("op\(index)", order: UInt64(index), priority: .normal).stamp, index))
    }
    for (stamp, index) in stamps where index % 10 != 0 { machine.withdraw(stamp: stamp, priority: .normal) }
    #expect(machine.readyCount == 100)
    _ = machine.setSuspended(false)
    let ran = runToCompletion(&machine)
    #expect(ran == stride(from: 0, to: 1_000, by: 10).map { "op\($0)" })
  }

  @Test func suspensionStopsStartsAndResumingAsksForAWorker() {
    var machine = Machine(limit: 3)
    let v9 = machine.setSuspended(true)
    #expect(!v9)
    let v10 = machine.makeReady("a", order: 1, priority: .normal)
    #expect(!v10.spawnWorker)
    let v11 = machine.setSuspended(false)
    #expect(v11)
    let v12 = startWorker(&machine)
    #expect(v12 == "a")
  }

  @Test func raisingTheLimitAsksForAWorkerAndLoweringGovernsLaterStarts() {
    var machine = Machine(limit: 1)
    for order in 1...4 { _ = machine.makeReady("op\(order)", order: UInt64(order), priority: .normal) }
    let v13 = startWorker(&machine)
    #expect(v13 == "op1")
    #expect(machine.startingWorkers == 0, "the limit is 1: no worker was asked for")
    let v15 = machine.setLimit(3)
    #expect(v15)
    let v16 = startWorker(&machine)
    #expect(v16 == "op2")
    let v17 = startWorker(&machine)
    #expect(v17 == "op3")
    #expect(machine.executing == 3)
    let v18 = machine.setLimit(1)
    #expect(!v18)
    machine.operationEnded()  // op1 ends: 2 still execute, the new limit is 1
    let v19 = machine.workerStarted()
    #expect(v19.run == nil)
    machine.operationEnded()  // op2 ends
    let v20 = machine.workerStarted()
    #expect(v20.run == nil)
    machine.operationEnded()  // op3 ends: none execute
    let v21 = machine.workerStarted()
    #expect(v21.run == "op4")
  }

  @Test func anEndingWorkerIsCountedAsStartingSoDependentsNeedNoNewTask() {
    var machine = Machine(limit: 1)
    _ = machine.makeReady("a", order: 1, priority: .normal)
    let v22 = startWorker(&machine)
    #expect(v22 == "a")
    machine.operationEnded()
    // "b" becomes ready while "a"'s worker is between operations: it takes "b" itself.
    let v23 = machine.makeReady("b", order: 2, priority: .normal)
    #expect(!v23.spawnWorker)
    let v24 = startWorker(&machine)
    #expect(v24 == "b")
  }

  @Test func aRetiringWorkerIsReplacedWhenWorkWaits() {
    var machine = Machine(limit: 2)
    _ = machine.makeReady("a", order: 1, priority: .normal)
    let v25 = startWorker(&machine)
    #expect(v25 == "a")
    machine.operationEnded()
    _ = machine.makeReady("b", order: 2, priority: .normal)
    let v26 = machine.workerRetired()
    #expect(v26, "its task was cancelled; a new worker takes over")
  }
}

@Suite struct ReadyQueueTests {
  @Test func fifoWithinAPriorityAndOutOfOrderInsertions() {
    var queue = ReadyQueue<Int>()
    for order in [5, 6, 2, 9, 1, 7] { _ = queue.insert(order, order: UInt64(order), priority: .normal) }
    var popped: [Int] = []
    while let value = queue.popFirst() { popped.append(value) }
    #expect(popped == [1, 2, 5, 6, 7, 9])
    #expect(queue.isEmpty)
  }

  @Test func removingEverythingLeavesItEmpty() {
    var queue = ReadyQueue<Int>()
    let stamps = (0..<10).map { queue.insert($0, order: UInt64($0), priority: .high) }
    for stamp in stamps { queue.remove(stamp: stamp, priority: .high) }
    #expect(queue.isEmpty)
    let v27 = queue.popFirst()
    #expect(v27 == nil)
    _ = queue.insert(42, order: 100, priority: .low)
    let v28 = queue.popFirst()
    #expect(v28 == 42)
  }
}

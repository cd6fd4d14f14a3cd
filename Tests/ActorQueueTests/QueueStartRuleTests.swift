import Testing

@testable import ActorQueue

/// The events as `Scheduler` composes them: each change of the ready set or of the settings
/// is followed by one decision whether a worker is needed (at the end of the event).
extension QueueStartRule {
  fileprivate mutating func makeReady(
    _ element: Element, order: UInt64, priority: OperationPriority
  ) -> (stamp: ReadyQueue<Element>.Stamp, spawnWorker: Bool, wakeLingerer: Bool) {
    let stamp = insertReady(element, order: order, priority: priority)
    return (stamp, needsWorker(), isLingering)
  }

  fileprivate mutating func suspend(_ suspended: Bool) -> Bool {
    setSuspended(suspended)
    return needsWorker()
  }

  fileprivate mutating func changeLimit(_ limit: Int) -> Bool {
    setLimit(limit)
    return needsWorker()
  }

  fileprivate mutating func retireWorker() -> Bool {
    workerRetired()
    return needsWorker()
  }
}

/// The start rule as a value: these tests run no task.
@Suite struct QueueStartRuleTests {
  typealias Machine = QueueStartRule<String>

  /// One worker runs every operation it can claim, one after another, ending each at once;
  /// returns them in the order they ran.
  private func runToCompletion(_ machine: inout Machine) -> [String] {
    var ran: [String] = []
    var step = machine.claimForStartingWorker()
    while let operation = step.run {
      ran.append(operation)
      machine.operationEnded()
      step = machine.claimForStartingWorker()
    }
    return ran
  }

  /// Starts a worker and lets it claim; returns what it claimed.
  private func startWorker(_ machine: inout Machine) -> String? {
    machine.claimForStartingWorker().run
  }

  /// A serial queue whose worker ran "a", found nothing more, and lingers.
  private func machineWithALingeringWorker() -> Machine {
    var machine = Machine(limit: 1)
    _ = machine.makeReady("a", order: 1, priority: .normal)
    let first = startWorker(&machine)
    machine.operationEnded()
    let next = machine.claimForStartingWorker()
    let lingers = machine.lingerIfIdle()
    #expect(first == "a" && next.run == nil && lingers)
    return machine
  }

  @Test func firstReadyOperationAsksForOneWorker() {
    var machine = Machine(limit: 2)
    let v1 = machine.makeReady("a", order: 1, priority: .normal)
    #expect(v1.spawnWorker)
    // One worker is already starting: no second one until it claims.
    let v2 = machine.makeReady("b", order: 2, priority: .normal)
    #expect(!v2.spawnWorker)
    let step = machine.claimForStartingWorker()
    #expect(step.run == "a")
    #expect(step.spawnWorker, "a claim asks for the next worker while ready operations wait")
    let v3 = startWorker(&machine)
    #expect(v3 == "b")
    #expect(machine.executing == 2)
  }

  @Test func neverMoreThanTheLimitExecute() {
    var machine = Machine(limit: 2)
    for order in 1...5 { _ = machine.makeReady("op\(order)", order: UInt64(order), priority: .normal) }
    let first = machine.claimForStartingWorker()
    #expect(first.run == "op1")
    #expect(first.spawnWorker)
    let second = machine.claimForStartingWorker()
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
    _ = machine.suspend(false)
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
    let v8 = machine.claimForStartingWorker()
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
    _ = machine.suspend(false)
    let ran = runToCompletion(&machine)
    #expect(ran == stride(from: 0, to: 1_000, by: 10).map { "op\($0)" })
  }

  @Test func suspensionStopsStartsAndResumingAsksForAWorker() {
    var machine = Machine(limit: 3)
    let v9 = machine.suspend(true)
    #expect(!v9)
    let v10 = machine.makeReady("a", order: 1, priority: .normal)
    #expect(!v10.spawnWorker)
    let v11 = machine.suspend(false)
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
    let v15 = machine.changeLimit(3)
    #expect(v15)
    let v16 = startWorker(&machine)
    #expect(v16 == "op2")
    let v17 = startWorker(&machine)
    #expect(v17 == "op3")
    #expect(machine.executing == 3)
    let v18 = machine.changeLimit(1)
    #expect(!v18)
    machine.operationEnded()  // op1 ends: 2 still execute, the new limit is 1
    let v19 = machine.claimForStartingWorker()
    #expect(v19.run == nil)
    machine.operationEnded()  // op2 ends
    let v20 = machine.claimForStartingWorker()
    #expect(v20.run == nil)
    machine.operationEnded()  // op3 ends: none execute
    let v21 = machine.claimForStartingWorker()
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
    let v26 = machine.retireWorker()
    #expect(v26, "its task was cancelled; a new worker takes over")
  }

  @Test func aWorkerMayLingerOnlyOnAnIdleQueue() {
    var machine = Machine(limit: 2)
    _ = machine.makeReady("a", order: 1, priority: .normal)
    _ = machine.makeReady("b", order: 2, priority: .normal)
    let l1 = startWorker(&machine)
    let l2 = startWorker(&machine)
    #expect(l1 == "a" && l2 == "b")
    machine.operationEnded()  // "a" ends; "b" still executes
    let l3 = machine.claimForStartingWorker()
    let l4 = machine.lingerIfIdle()
    #expect(l3.run == nil)
    #expect(!l4, "an operation still executes: its worker will claim")
    machine.operationEnded()  // "b" ends: the queue is idle
    let l5 = machine.claimForStartingWorker()
    let l6 = machine.lingerIfIdle()
    #expect(l5.run == nil && l6)
    #expect(machine.isLingering && machine.startingWorkers == 1)

    var suspended = Machine(limit: 1, isSuspended: true)
    _ = suspended.makeReady("c", order: 3, priority: .normal)
    let l7 = suspended.lingerIfIdle()
    #expect(!l7, "suspended, and an operation is ready")
    var empty = Machine(limit: 1)
    _ = empty.suspend(true)
    let l8 = empty.lingerIfIdle()
    #expect(!l8, "a suspended queue starts nothing a lingering worker could take")
  }

  @Test func anOperationMadeReadyWhileAWorkerLingersIsLeftForIt() {
    var machine = machineWithALingeringWorker()
    let b = machine.makeReady("b", order: 2, priority: .normal)
    #expect(!b.spawnWorker, "the lingering worker counts as the one starting")
    #expect(b.wakeLingerer)
    let c = machine.makeReady("c", order: 3, priority: .normal)
    #expect(!c.spawnWorker && c.wakeLingerer)
    let step = machine.lingerEnded()  // the lingering worker, woken, claims
    #expect(step.run == "b")
    #expect(!step.spawnWorker, "the limit is 1")
    #expect(!machine.isLingering && machine.startingWorkers == 0)
    machine.operationEnded()
    let l9 = machine.claimForStartingWorker()
    #expect(l9.run == "c")
  }

  @Test func anotherWorkersClaimLeavesTheLingererLingering() {
    // A paused body's worker runs while the queue is idle (it holds no slot), so it can come
    // back to claim while another worker lingers: the lingerer must still be woken for the next.
    var machine = machineWithALingeringWorker()
    machine.slotlessOperationEnded()  // the paused body, cancelled, ended: its worker claims
    let other = machine.claimForStartingWorker()
    #expect(other.run == nil)
    #expect(machine.isLingering && machine.startingWorkers == 1)
    let b = machine.makeReady("b", order: 2, priority: .normal)
    #expect(b.wakeLingerer && !b.spawnWorker)
    #expect(machine.lingerEnded().run == "b")
  }

  @Test func aWokenLingererThatFindsItsOperationGoneMayLingerAgain() {
    var machine = machineWithALingeringWorker()
    let b = machine.makeReady("b", order: 2, priority: .normal)
    machine.withdraw(stamp: b.stamp, priority: .normal)  // cancelled before the lingerer looked
    let l10 = machine.lingerEnded()
    let l11 = machine.lingerIfIdle()
    #expect(l10.run == nil && l11)
    #expect(machine.startingWorkers == 1, "never more than one starting worker")
  }
}

@Suite struct SchedulerInstantTests {
  @Test("The scheduler's instants never go back, and move by durations to the nanosecond")
  func instantsAreMonotonicIntegers() {
    let first = SchedulerInstant.now()
    let second = SchedulerInstant.now()
    #expect(first <= second)
    #expect(first.advanced(by: .microseconds(100)).nanoseconds == first.nanoseconds + 100_000)
    #expect((first + .seconds(2) - .milliseconds(1)).nanoseconds == first.nanoseconds + 1_999_000_000)
    #expect(first.duration(to: first + .nanoseconds(42)) == .nanoseconds(42))
    #expect(Duration.seconds(-1).wholeNanoseconds == -1_000_000_000)
    #expect(Duration.microseconds(-250).wholeNanoseconds == -250_000)
    #expect(
      Duration(secondsComponent: 3, attosecondsComponent: 1_500_000_000).wholeNanoseconds == 3_000_000_001)
    #expect(LingerPolicy.window == .microseconds(100))
    #expect(Scheduler.storageWindow == .seconds(1))
  }
}

@Suite struct LingerPolicyTests {
  @Test func aQueueLingersOnlyAfterAShortIdleSpell() {
    var policy = LingerPolicy()
    #expect(!policy.lingerPays, "nothing is known of a new queue")
    let start = SchedulerInstant.now()
    policy.wentIdle(at: start)
    policy.workArrived(at: start.advanced(by: .microseconds(10)))
    #expect(policy.lingerPays)
    policy.wentIdle(at: start)
    policy.workArrived(at: start.advanced(by: LingerPolicy.window / 2))
    #expect(!policy.lingerPays, "half the window or more: a linger would too often run out")
    policy.wentIdle(at: start)
    policy.workArrived(at: start.advanced(by: .milliseconds(5)))
    #expect(!policy.lingerPays, "a queue fed from time to time never lingers")
  }

  @Test func aLingerThatRunsOutStopsLingeringUntilAShortSpellIsSeen() {
    var policy = LingerPolicy()
    policy.observe(idleSpell: .microseconds(5))
    #expect(policy.lingerPays)
    policy.observe(idleSpell: LingerPolicy.window)  // lingered the whole window: no work came
    #expect(!policy.lingerPays)
    // Arrivals with no idle spell on record (the queue was not idle, or a linger ran out) teach nothing.
    policy.workArrived(at: .now())
    #expect(!policy.lingerPays)
    let start = SchedulerInstant.now()
    policy.wentIdle(at: start)
    policy.workArrived(at: start.advanced(by: .microseconds(1)))
    #expect(policy.lingerPays)
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

/// Seeded random sequences of insertions, withdrawals, pops and peeks, checked step by step
/// against a sorted list: the lone entry kept aside, the lanes' FIFO arrays and heaps, the
/// marks of withdrawn entries and their compaction must together give exactly the model's order.
@Suite struct ReadyQueueRandomTests {
  private struct ModelEntry {
    let element: Int
    let order: UInt64
    let priority: OperationPriority
    let stamp: ReadyQueue<Int>.Stamp
  }

  /// Highest priority first, then lowest order: what `popFirst()` must return.
  private static func first(_ model: [ModelEntry]) -> Int? {
    model.min { a, b in a.priority != b.priority ? a.priority > b.priority : a.order < b.order }.map(
      \.element)
  }

  @Test(arguments: 0..<200)
  func agreesWithASortedListOnEveryStep(script: Int) {
    var random = SplitMix64(seed: SplitMix64.scriptSeed(run: 0x5EAD_1E55, index: script))
    var queue = ReadyQueue<Int>()
    var model: [ModelEntry] = []
    var nextOrder: UInt64 = 1_000
    var usedOrders: Set<UInt64> = []  // orders are unique, as submission orders are
    var nextElement = 0
    // Scripts differ in how full the queue runs: some stay at zero or one entry (the lone
    // entry's paths), some grow to hundreds (compaction of marks after 64 withdrawals).
    let insertPercent = random.pick([35, 50, 65])
    for step in 0..<600 {
      let roll = random.below(100)
      if roll < insertPercent {
        // Mostly in submission order; sometimes older (an operation whose dependency ended).
        var order = nextOrder
        if random.chance(20) {
          repeat { order = nextOrder - UInt64(random.below(999) + 1) } while usedOrders.contains(order)
        } else {
          nextOrder += 1
        }
        usedOrders.insert(order)
        let priority = random.pick(OperationPriority.allCases)
        let stamp = queue.insert(nextElement, order: order, priority: priority)
        model.append(ModelEntry(element: nextElement, order: order, priority: priority, stamp: stamp))
        nextElement += 1
      } else if roll < insertPercent + 15, !model.isEmpty {
        let victim = model.remove(at: random.below(model.count))
        queue.remove(stamp: victim.stamp, priority: victim.priority)
      } else if roll < insertPercent + 20 {
        let expected = Self.first(model)
        #expect(queue.peekFirst() == expected, "script \(script), step \(step): peek")
      } else {
        let expected = Self.first(model)
        let popped = queue.popFirst()
        #expect(popped == expected, "script \(script), step \(step): pop")
        if let popped { model.removeAll { $0.element == popped } }
      }
      #expect(queue.count == model.count, "script \(script), step \(step): count")
      if queue.count != model.count { return }
    }
    while let expected = Self.first(model) {
      #expect(queue.popFirst() == expected, "script \(script): draining")
      model.removeAll { $0.element == expected }
    }
    #expect(queue.isEmpty && queue.popFirst() == nil)
  }

  @Test func aLoneEntryJoinsItsLaneWhenASecondArrivesAndKeepsItsPlace() {
    var queue = ReadyQueue<Int>()
    _ = queue.insert(1, order: 10, priority: .low)  // kept aside
    _ = queue.insert(2, order: 11, priority: .low)  // the first joins the low lane, before it
    _ = queue.insert(3, order: 12, priority: .high)
    #expect(queue.popFirst() == 3)
    #expect(queue.popFirst() == 1)
    #expect(queue.popFirst() == 2)
    #expect(queue.popFirst() == nil)
    // Withdrawn while alone, then re-inserted at another priority (a reprioritisation).
    let stamp = queue.insert(4, order: 13, priority: .normal)
    queue.remove(stamp: stamp, priority: .normal)
    #expect(queue.isEmpty)
    _ = queue.insert(4, order: 13, priority: .veryHigh)
    _ = queue.insert(5, order: 14, priority: .high)
    #expect(queue.peekFirst() == 4)
    #expect(queue.popFirst() == 4)
    #expect(queue.popFirst() == 5)
  }
}

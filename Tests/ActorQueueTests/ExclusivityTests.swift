import ActorQueueTesting
import TestSupport
import Testing

@testable import ActorQueue

/// Exclusivity by key (beyond.md §1.4 d), on manual clocks and gates: no test sleeps.
@Suite("Exclusivity by key", .timeLimit(.minutes(hangLimitMinutes)))
struct ExclusivityTests {
  @Test("Operations on one key never overlap on an unlimited queue; every one ends")
  func oneKeyNeverOverlaps() async {
    let queue = ActorQueue(name: "db")
    let inside = LockedValue((now: 0, most: 0))
    let operations = (0..<200).map { number in
      queue.addOperation(name: "op\(number)", traits: [.exclusive("db")]) {
        inside.withLock {
          $0.now += 1; $0.most = max($0.most, $0.now)
        }
        await Task.yield()
        inside.withLock { $0.now -= 1 }
      }
    }
    await queue.waitUntilAllOperationsAreFinished()
    #expect(inside.withLock { $0.most } == 1)
    #expect(operations.allSatisfy { $0.state == .finished })
  }

  @Test("No head-of-line blocking: a waiter for a busy key leaves the ready set, and what follows starts")
  func noHeadOfLineBlocking() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "limit 4", maxConcurrentOperationCount: 4, clock: clock.queueClock)
    let gate = TestGate()
    let holder = queue.addOperation(name: "A", traits: [.exclusive("x")]) { await gate.wait() }
    let waiter = queue.addOperation(name: "B", traits: [.exclusive("x")]) {}
    let free = queue.addOperation(name: "D") { await gate.wait() }
    await clock.settle()
    #expect(holder.state == .executing)
    #expect(waiter.state == .pending)
    #expect(free.state == .executing)
    #expect(queue.waitReport().map(\.waitingFor) == [[.key("x", heldBy: holder.id)]])
    gate.open()
    try await waiter.value
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test("A ready operation its full or suspended queue cannot start yet lists its taken key beside slot")
  func waitReportOfAReadyOperationWhoseKeyIsTaken() async throws {
    let clock = ManualClock()
    let domain = ExclusivityDomain(name: "db")
    let full = ActorQueue(name: "serial", maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let stopped = ActorQueue(name: "stopped", clock: clock.queueClock)
    stopped.isSuspended = true
    let gate = TestGate()
    let holder = full.addOperation(name: "A", traits: [.exclusive("x", in: domain)]) { await gate.wait() }
    let behind = full.addOperation(name: "B", traits: [.exclusive("x", in: domain)]) {}
    let free = full.addOperation(name: "C", traits: [.exclusive("y", in: domain)]) {}
    let elsewhere = stopped.addOperation(name: "D", traits: [.exclusive("x", in: domain)]) {}
    await clock.settle()
    #expect(holder.state == .executing)
    #expect(behind.state == .ready)
    #expect(full.waitReport().map(\.waitingFor) == [[.slot, .key("x", heldBy: holder.id)], [.slot]])
    #expect(stopped.waitReport().map(\.waitingFor) == [[.key("x", heldBy: holder.id), .suspended]])
    gate.open()
    try await behind.value
    try await free.value
    #expect(stopped.waitReport().map(\.waitingFor) == [[.suspended]])
    stopped.isSuspended = false
    try await elsewhere.value
  }

  @Test("All or nothing: a waiter for {x, y} holds neither, so another on y runs meanwhile")
  func allOrNothing() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "keys", clock: clock.queueClock)
    let gate = TestGate()
    let onX = queue.addOperation(name: "A", traits: [.exclusive("x")]) { await gate.wait() }
    let both = queue.addOperation(name: "B", traits: [.exclusive("x", "y")]) {}
    let onY = queue.addOperation(name: "C", traits: [.exclusive("y")]) { await gate.wait() }
    await clock.settle()
    #expect(onX.state == .executing)
    #expect(both.state == .pending)
    #expect(onY.state == .executing)
    gate.open()
    try await both.value
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test("The same key on two queues excludes nothing without a shared domain, and everything with one")
  func domains() async {
    let clock = ManualClock()
    let first = ActorQueue(name: "first", clock: clock.queueClock)
    let second = ActorQueue(name: "second", clock: clock.queueClock)
    let gate = TestGate()
    let a = first.addOperation(name: "a", traits: [.exclusive("k")]) { await gate.wait() }
    let b = second.addOperation(name: "b", traits: [.exclusive("k")]) { await gate.wait() }
    await clock.settle()
    #expect(a.state == .executing)
    #expect(b.state == .executing)
    let storage = ExclusivityDomain(name: "storage")
    let c = first.addOperation(name: "c", traits: [.exclusive("k", in: storage)]) { await gate.wait() }
    let d = second.addOperation(name: "d", traits: [.exclusive("k", in: storage)]) {}
    await clock.settle()
    #expect(c.state == .executing)
    #expect(d.state == .pending)
    #expect(second.waitReport().first?.waitingFor == [.key("k", heldBy: c.id)])
    gate.open()
    await first.waitUntilAllOperationsAreFinished()
    await second.waitUntilAllOperationsAreFinished()
    #expect(d.state == .finished)
  }

  @Test("A paused holder keeps its key; cancelled, it releases it only when its body returns")
  func pausedHolderKeepsItsKey() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "pause", clock: clock.queueClock)
    let toCheckpoint = TestGate()
    let afterCheckpoint = TestGate()
    let holder = queue.addOperation(name: "holder", traits: [.exclusive("k")]) {
      await toCheckpoint.wait()
      do { try await ActorQueue.checkpoint() } catch { await afterCheckpoint.wait() }
    }
    let waiter = queue.addOperation(name: "waiter", traits: [.exclusive("k")]) {}
    await clock.settle()
    holder.pause()
    toCheckpoint.open()
    await clock.settle()
    #expect(holder.state == .paused)
    #expect(waiter.state == .pending)
    holder.cancel()
    await clock.settle()
    #expect(waiter.state == .pending)  // the body still runs, holding the key
    afterCheckpoint.open()
    try await waiter.value
  }

  @Test("Cancelling a parked waiter ends it at once; cancelAllOperations leaves no later grant")
  func cancellingWaiters() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "cancel", clock: clock.queueClock)
    let gate = TestGate()
    let holder = queue.addOperation(name: "holder", traits: [.exclusive("k")]) { await gate.wait() }
    let parked = (0..<3).map { number in
      queue.addOperation(name: "w\(number)", traits: [.exclusive("k")]) {}
    }
    await clock.settle()
    parked[0].cancel()
    #expect(parked[0].state == .cancelled)
    queue.cancelAllOperations()
    #expect(parked.allSatisfy { $0.state == .cancelled })
    gate.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(holder.state == .finished)
  }

  @Test("An empty key list changes nothing; a repeated key counts once")
  func badInput() async throws {
    let queue = ActorQueue(name: "input")
    let plain = queue.addOperation(traits: [.exclusive()]) { 1 }
    let twice = queue.addOperation(traits: [.exclusive("k", "k"), .exclusive("k")]) { 2 }
    #expect(try await plain.value == 1)
    #expect(try await twice.value == 2)
  }

  @Test("Keys and tags made from many tasks at once: equal names get equal numbers, others distinct")
  func namesInternedFromManyTasksAtOnce() async {
    // Under ThreadSanitizer (CI) this is also the check that interning's lock is one it sees.
    let names = (0..<64).map { "interned-at-once-\($0)" }
    let made = await withTaskGroup(of: [(String, UInt64, UInt64)].self) { group in
      for task in 0..<8 {
        group.addTask {
          names.indices.map { index in
            let name = names[(index * 7 + task * 13) % names.count]
            return (name, ExclusivityKey(name).id, OperationTag(name).id)
          }
        }
      }
      return await group.reduce(into: []) { $0 += $1 }
    }
    #expect(made.count == 8 * names.count)
    let keyIDs = Dictionary(grouping: made, by: \.0).mapValues { Set($0.map(\.1)) }
    let tagIDs = Dictionary(grouping: made, by: \.0).mapValues { Set($0.map(\.2)) }
    #expect(keyIDs.count == names.count && keyIDs.values.allSatisfy { $0.count == 1 })
    #expect(tagIDs.values.allSatisfy { $0.count == 1 })
    #expect(Set(keyIDs.values.compactMap(\.first)).count == names.count)
    #expect(Set(tagIDs.values.compactMap(\.first)).count == names.count)
    #expect(names.allSatisfy { ExclusivityKey(interned: ExclusivityKey($0).id).name == $0 })
  }
}

/// The rest of beyond.md §1.4 (d): grant order across queues, aging, the anchors' deadlocks,
/// retries, suspension and the excess of a lowered limit.
@Suite("Exclusivity by key: order, aging and interplay", .timeLimit(.minutes(hangLimitMinutes)))
struct ExclusivityInterplayTests {
  @Test(
    "1,000 operations over three queues (limits 4, 4, unlimited) on one shared key: one at a time, granted by priority then global submission order"
  )
  func grantOrderAcrossQueues() async {
    let clock = ManualClock()
    let queues = [4, 4, ActorQueue.defaultMaxConcurrentOperationCount].enumerated().map { number, limit in
      ActorQueue(name: "q\(number)", maxConcurrentOperationCount: limit, clock: clock.queueClock)
    }
    let database = ExclusivityDomain(name: "database")
    let gate = TestGate()
    let first = queues[0].addOperation(name: "first", traits: [.exclusive("db", in: database)]) {
      await gate.wait()
    }
    await clock.settle()
    let started = Recorder<Int>()
    let inside = LockedValue((now: 0, most: 0))
    var random = SplitMix64(seed: 1_234)
    var expected: [(priority: Int, number: Int)] = []
    for number in 0..<1_000 {
      let priority = Int(random.next() % 5)
      expected.append((priority, number))
      queues[Int(random.next() % 3)].addOperation(
        name: "\(number)", priority: OperationPriority.allCases[priority],
        traits: [.exclusive("db", in: database)]
      ) {
        inside.withLock {
          $0.now += 1; $0.most = max($0.most, $0.now)
        }
        started.append(number)
        inside.withLock { $0.now -= 1 }
      }
    }
    await clock.settle()
    #expect(queues.flatMap { $0.waitReport() }.count == 1_000)
    gate.open()
    for queue in queues { await queue.waitUntilAllOperationsAreFinished() }
    #expect(first.state == .finished)
    #expect(inside.withLock { $0.most } == 1)
    let order = expected.sorted {
      $0.priority != $1.priority ? $0.priority > $1.priority : $0.number < $1.number
    }
    #expect(started.snapshot == order.map(\.number))
  }

  @Test("Aging: a waiter for {x, y} passed over by alternating x and y streams starts within 16 + 2 grants")
  func agingStopsStarvation() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "streams", clock: clock.queueClock)
    let gates = (0..<60).map { _ in TestGate() }
    let starts = Recorder<String>()
    let x0 = queue.addOperation(name: "x0", traits: [.exclusive("x")]) {
      starts.append("x0")
      await gates[0].wait()
    }
    let both = queue.addOperation(name: "B", traits: [.exclusive("x", "y")]) { starts.append("B") }
    var stream: [QueueOperation<Void>] = [x0]
    for number in 1..<60 {
      let key: ExclusivityKey = number.isMultiple(of: 2) ? "x" : "y"
      stream.append(
        queue.addOperation(name: "s\(number)", traits: [.exclusive(key)]) {
          starts.append("s\(number)")
          await gates[number].wait()
        })
    }
    await clock.settle()
    // Opens the running stream operations one at a time, oldest first, until B has run.
    while both.state != .finished {
      guard let running = stream.indices.first(where: { stream[$0].state == .executing }) else { break }
      gates[running].open()
      await clock.settle()
    }
    #expect(both.state == .finished)
    let before = starts.snapshot.prefix { $0 != "B" }.count
    // x0 held x when B arrived; every later start before B passed it over.
    #expect(before - 1 <= ExclusivityTestLimits.aging + 2, "\(starts.snapshot.prefix(24))")
    for gate in gates { gate.open() }
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test("ProcedureKit PR 394 (acquire later): operations on one key never run together, however they arrive")
  func acquiringLaterStillExcludes() async {
    let queue = ActorQueue(name: "394")
    let other = ActorQueue(name: "394b")
    let shared = ExclusivityDomain()
    let inside = LockedValue((now: 0, most: 0))
    for number in 0..<400 {
      let target = number.isMultiple(of: 3) ? other : queue
      target.addOperation(traits: [.exclusive("k", in: shared)]) {
        inside.withLock {
          $0.now += 1; $0.most = max($0.most, $0.now)
        }
        await Task.yield()
        inside.withLock { $0.now -= 1 }
      }
    }
    await queue.waitUntilAllOperationsAreFinished()
    await other.waitUntilAllOperationsAreFinished()
    #expect(inside.withLock { $0.most } == 1)
  }

  @Test("A retry's backoff releases the key (another runs meanwhile), and the next attempt takes it again")
  func retryBackoffReleasesTheKey() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "retry", clock: clock.queueClock)
    let policy = RetryPolicy.attempts(2, backoff: .constant(.seconds(1)), jitter: .none)
    let order = Recorder<String>()
    let gate = TestGate()
    let flaky = queue.addOperation(name: "flaky", traits: [.retry(policy), .exclusive("k")]) {
      order.append("flaky \(ActorQueue.currentAttempt?.number ?? 0)")
      if ActorQueue.currentAttempt?.number == 1 { throw CancellationErrorStandIn() }
    }
    await clock.settle()
    #expect(flaky.state == .pending)
    let other = queue.addOperation(name: "other", traits: [.exclusive("k")]) {
      order.append("other")
      await gate.wait()
    }
    await clock.settle()
    #expect(other.state == .executing)
    clock.advance(by: .seconds(1))
    await clock.settle()
    #expect(flaky.state == .pending)  // its backoff is over; the key is other's
    #expect(queue.waitReport().first?.waitingFor == [.key("k", heldBy: other.id)])
    gate.open()
    try await flaky.value
    #expect(order.snapshot == ["flaky 1", "other", "flaky 2"])
  }

  @Test("A parked operation of a suspended queue does not stop another queue's operations on the key")
  func suspendedWaiterHoldsNothing() async {
    let clock = ManualClock()
    let first = ActorQueue(name: "first", clock: clock.queueClock)
    let second = ActorQueue(name: "second", clock: clock.queueClock)
    let third = ActorQueue(name: "third", clock: clock.queueClock)
    let shared = ExclusivityDomain()
    let gate = TestGate()
    let holder = second.addOperation(name: "holder", traits: [.exclusive("k", in: shared)]) {
      await gate.wait()
    }
    let parked = first.addOperation(name: "parked", traits: [.exclusive("k", in: shared)]) {}
    let later = third.addOperation(name: "later", traits: [.exclusive("k", in: shared)]) {}
    await clock.settle()
    #expect(parked.state == .pending)
    first.isSuspended = true
    gate.open()
    await second.waitUntilAllOperationsAreFinished()
    await third.waitUntilAllOperationsAreFinished()
    #expect(holder.state == .finished)
    #expect(later.state == .finished)
    #expect(parked.state == .ready)  // back in its suspended queue's ready set, holding nothing
    first.isSuspended = false
    await first.waitUntilAllOperationsAreFinished()
    #expect(parked.state == .finished)
  }

  @Test(
    "A waiter of a suspended queue is not passed over: it reserves nothing, so later operations on its key run"
  )
  func suspendedWaiterNeverReserves() async {
    let clock = ManualClock()
    let suspended = ActorQueue(name: "suspended", clock: clock.queueClock)
    let stream = ActorQueue(name: "stream", clock: clock.queueClock)
    let holderQueue = ActorQueue(name: "holder", clock: clock.queueClock)
    let shared = ExclusivityDomain()
    let gate = TestGate()
    let yHolder = holderQueue.addOperation(name: "y", traits: [.exclusive("y", in: shared)]) {
      await gate.wait()
    }
    let both = suspended.addOperation(name: "both", traits: [.exclusive("x", "y", in: shared)]) {}
    await clock.settle()
    #expect(both.state == .pending)  // parked on x and y
    suspended.isSuspended = true
    // Each of these takes x while `both` (earlier) waits for it; none may be held up by `both`.
    let later = (0..<(ExclusivityTestLimits.aging * 2)).map { number in
      stream.addOperation(name: "x\(number)", traits: [.exclusive("x", in: shared)]) {}
    }
    await stream.waitUntilAllOperationsAreFinished()
    #expect(later.allSatisfy { $0.state == .finished })
    #expect(yHolder.state == .executing)
    gate.open()
    await holderQueue.waitUntilAllOperationsAreFinished()
    suspended.isSuspended = false
    await suspended.waitUntilAllOperationsAreFinished()
    #expect(both.state == .finished)
  }

  @Test("Lowering the limit with pausingExcess: the operation paused for the excess keeps its key")
  func excessPausedKeepsItsKey() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "excess", maxConcurrentOperationCount: 2, clock: clock.queueClock)
    let toCheckpoint = TestGate()
    let gates = ["a": TestGate(), "b": TestGate()]
    let holders = ["a", "b"].map { name in
      queue.addOperation(name: name, traits: [.exclusive(ExclusivityKey(name))]) {
        await toCheckpoint.wait()
        try await ActorQueue.checkpoint()
        await gates[name]!.wait()
      }
    }
    await clock.settle()
    queue.setMaxConcurrentOperationCount(1, pausingExcess: true)
    toCheckpoint.open()
    await clock.settle()
    let paused = try #require(holders.first { $0.state == .paused })
    let running = try #require(holders.first { $0.state == .executing })
    let key = ExclusivityKey(paused.name!)
    // Ranked before the paused body, it would take the slot first if the key were free.
    let waiter = queue.addOperation(name: "waiter", priority: .veryHigh, traits: [.exclusive(key)]) {}
    gates[running.name!]!.open()
    await clock.settle()
    #expect(running.state == .finished)
    #expect(paused.state == .executing)
    #expect(waiter.state == .pending)
    #expect(queue.waitReport().map(\.waitingFor) == [[.key(key, heldBy: paused.id)]])
    gates[paused.name!]!.open()
    try await waiter.value
    await queue.waitUntilAllOperationsAreFinished()
  }
}

private struct CancellationErrorStandIn: Error {}

private enum ExclusivityTestLimits {
  static let aging = Scheduler.defaultAgingLimit
}

/// What a prepared operation's traits hold of the user's is let go of after unlocking.
@Suite("Traits kept before an operation is added", .timeLimit(.minutes(hangLimitMinutes)))
struct PreparedTraitsReleaseTests {
  /// Reads its queue when it goes: under the scheduler's lock, that read would never return.
  private final class Token: Sendable {
    let queue: ActorQueue
    let released: Gate
    init(queue: ActorQueue, released: Gate) {
      self.queue = queue
      self.released = released
    }
    deinit {
      _ = queue.operationCount
      released.open()
    }
  }

  @Test("A retry policy's closure and a domain given to a prepared operation are released outside the lock")
  func preparedTraitsAreReleasedAfterUnlocking() async throws {
    let queue = ActorQueue(name: "prepared")
    let released = Gate()
    do {
      let token = Token(queue: queue, released: released)
      let policy = RetryPolicy.attempts(2, backoff: .constant(.zero), jitter: .none) { _ in
        _ = token
        return true
      }
      let operation = QueueOperation(
        name: "prepared",
        traits: [.retry(policy), .exclusive("k", in: ExclusivityDomain()), .timeout(.seconds(60))]
      ) { 1 }
      try queue.addOperation(operation)
      #expect(try await operation.value == 1)
    }
    // Its time state's slot, reused: nothing of the first operation's is released there.
    let next = QueueOperation(name: "next", traits: [.timeout(.seconds(60))]) { 2 }
    try queue.addOperation(next)
    #expect(try await next.value == 2)
    await released.wait()
  }
}

import Testing

@testable import ActorQueue

/// An operation added with one key that another holds, to a queue that decides alone with
/// nothing ready, is parked by the add itself (`Scheduler.enqueueParkedIfBlocked`): the state it
/// reaches, its rank among the waiters and its start must be those of the general add (ready,
/// then parked by the settle). The random scripts compare both against the reference model.
@Suite("Scheduler value: an add behind a held key parks at once")
struct ArrivalParkTests {
  @Test("Parked on arrival: pending, blocked by the holder, started in turn when the key is handed on")
  func parksAndStartsInTurn() {
    var harness = SchedulerHarness()
    let queue = harness.makeQueue()
    harness.add("a", traits: [.exclusive("k")], to: queue)
    #expect(harness.running == ["a"])
    harness.add("b", traits: [.exclusive("k")], to: queue)
    harness.add("c", traits: [.exclusive("k")], to: queue)
    for name in ["b", "c"] {
      #expect(harness.state(name) == .pending)
      #expect(harness.scheduler.isParked(harness.index(name)))
      let blocking = harness.scheduler.blockingKeys(of: harness.index(name))
      #expect(blocking.map(\.key) == [ExclusivityKey("k")])
      #expect(blocking.map(\.by) == [harness.scheduler.operations[harness.index("a")].id])
    }
    harness.end("a")
    #expect(harness.running == ["b"])
    harness.end("b")
    #expect(harness.running == ["c"])
    harness.end("c")
    #expect(harness.running.isEmpty)
  }

  @Test("Waiters parked on arrival are granted by priority, then submission order")
  func rankAmongWaiters() {
    var harness = SchedulerHarness()
    let queue = harness.makeQueue()
    harness.add("holder", traits: [.exclusive("k")], to: queue)
    harness.add("low", priority: .low, traits: [.exclusive("k")], to: queue)
    harness.add("normal1", traits: [.exclusive("k")], to: queue)
    harness.add("high", priority: .high, traits: [.exclusive("k")], to: queue)
    harness.add("normal2", traits: [.exclusive("k")], to: queue)
    var order: [String] = []
    var current = "holder"
    for _ in 0..<4 {
      harness.end(current)
      #expect(harness.running.count == 1)
      guard let next = harness.running.first else { break }
      order.append(next)
      current = next
    }
    #expect(order == ["high", "normal1", "normal2", "low"])
  }

  @Test("An operation without the key beside the parked ones starts at once: nothing blocks the queue")
  func noHeadOfLineBlocking() {
    var harness = SchedulerHarness()
    let queue = harness.makeQueue(limit: 2)
    harness.add("holder", traits: [.exclusive("k")], to: queue)
    harness.add("waiter", traits: [.exclusive("k")], to: queue)
    harness.add("free", traits: [.exclusive("other")], to: queue)
    #expect(Set(harness.running) == ["holder", "free"])
    #expect(harness.scheduler.isParked(harness.index("waiter")))
    harness.end("holder")
    #expect(Set(harness.running) == ["free", "waiter"])
  }

  @Test("A key held on another queue of a shared domain parks the add too, and the end hands it over")
  func acrossQueues() {
    var harness = SchedulerHarness()
    let q1 = harness.makeQueue(limit: 1)
    let q2 = harness.makeQueue()
    let domain = ExclusivityDomain(name: "shared")
    harness.add("holder", traits: [.exclusive("k", in: domain)], to: q1)
    harness.add("waiter", traits: [.exclusive("k", in: domain)], to: q2)
    #expect(harness.running == ["holder"])
    #expect(harness.scheduler.isParked(harness.index("waiter")))
    harness.end("holder")
    #expect(harness.running == ["waiter"])
  }

  @Test("Cancelling an operation parked on arrival ends it and leaves the key's line intact")
  func cancelParked() {
    var harness = SchedulerHarness()
    let queue = harness.makeQueue()
    harness.add("holder", traits: [.exclusive("k")], to: queue)
    harness.add("gone", traits: [.exclusive("k")], to: queue)
    harness.add("next", traits: [.exclusive("k")], to: queue)
    harness.cancel("gone")
    #expect(harness.state("gone") == .cancelled)
    harness.end("holder")
    #expect(harness.running == ["next"])
  }
}

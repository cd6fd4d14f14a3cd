import Testing

@testable import ActorQueue

/// A queue with keys decides its starts itself, without arbitration's rounds, only when no other
/// queue with keys changed in the event (`Scheduler.decidesAlone`). Here one event makes a head
/// ready on each of two queues, on one key of a shared domain: the better-ranked one, on the
/// other queue, must take the key, whichever queue's worker or settle comes first.
@Suite("Scheduler value: a queue decides alone only when it alone changed")
struct ArbitrationAloneTests {
  /// `low` on q1 and `high` on q2, both on one key of a shared domain, both waiting for `d`.
  private func twoWaiters(d dependency: String, in harness: inout SchedulerHarness) throws {
    let q1 = 0
    let q2 = harness.makeQueue(limit: 1)
    precondition(q2 == 1, "the harness's queues are numbered from 0")
    let domain = ExclusivityDomain(name: "shared")
    for (name, priority, queue) in [("low", OperationPriority.low, q1), ("high", .high, q2)] {
      let handle = harness.makeOperation(name, priority: priority)
      let index = handle.recordIndex
      harness.event { scheduler, _, _ in scheduler.setTraits([.exclusive("k", in: domain)], of: index) }
      try harness.depend(handle, on: harness[dependency])
      try harness.submit([name], to: queue)
    }
    #expect(harness.state("low") == .pending && harness.state("high") == .pending)
  }

  @Test("A claim after an end that readies heads on two queues: the better-ranked head takes the key")
  func claimAfterAnEnd() throws {
    var harness = SchedulerHarness()
    let q1 = harness.makeQueue(limit: 1)
    harness.add("d", to: q1)
    #expect(harness.running == ["d"])
    try twoWaiters(d: "d", in: &harness)
    // q1's worker claims in the event that ends d, before the touched queues settle.
    harness.end("d")
    #expect(harness.running == ["high"])
    #expect(harness.state("low") == .pending && harness.scheduler.isParked(harness.index("low")))
    harness.end("high")
    #expect(harness.running == ["low"])
  }

  @Test("A settle that readies heads on two queues: the better-ranked head takes the key")
  func settleAfterACancel() throws {
    var harness = SchedulerHarness()
    _ = harness.makeQueue(limit: 1)
    harness.makeOperation("d")  // never added: cancelling it ends it
    try twoWaiters(d: "d", in: &harness)
    harness.cancel("d")
    #expect(harness.running == ["high"])
    #expect(harness.state("low") == .pending && harness.scheduler.isParked(harness.index("low")))
    harness.end("high")
    #expect(harness.running == ["low"])
  }
}

import ActorQueue
import TestSupport
import Testing

@testable import ActorQueue

/// A defect found while extending the random tester to coalescing (issue 12), each case a
/// minimal deterministic reproduction that failed then: a dependency cycle through a coalesced
/// handle was accepted, and deadlocked every operation on it.
@Suite("Reliability: dependency cycles through coalesced work", .timeLimit(.minutes(hangLimitMinutes)))
struct CoalescingCycleTests {
  // MARK: A dependency cycle through a coalesced handle is not refused

  // A caller's handle to coalesced work ends only when the shared work ends, so it waits for
  // that work; the cycle check does not know it (a handle has no dependency edges of its own,
  // and the work does not list its callers' handles as dependents). A dependency that closes a
  // cycle through a handle is accepted, and every operation on the cycle waits forever.

  @Test(
    "An op that the shared work waits for (through a barrier) cannot depend on a caller's handle: a cycle (value)"
  )
  func cycleThroughBarrierAndHandleOnTheValue() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: q, now: now, &e) }
    h.add("x", to: q)
    let barrier = h.makeOperation("barrier")
    h.event { s, now, e in s.submitBarrier(barrier, to: q, now: now, &e) }
    h.addCoalesced("caller", key: "k", to: q)  // the work waits for the barrier, which waits for x
    var refusal: ActorQueueError?
    do throws(ActorQueueError) { try h.depend(h["x"], on: h["caller"]) } catch { refusal = error }
    #expect(refusal == .dependencyCycle, "x → caller → work:k → barrier → x")
    h.event { s, now, e in s.setSuspended(false, of: q, now: now, &e) }
    #expect(h.running == ["x"], "as the refused edge leaves it: x runs first")
  }

  @Test(
    "The shared work cannot depend on a handle that joined it: a cycle (value)")
  func workOnItsOwnHandleOnTheValue() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: q, now: now, &e) }
    h.addCoalesced("caller", key: "k", to: q)
    var refusal: ActorQueueError?
    do throws(ActorQueueError) { try h.depend(h["work:k"], on: h["caller"]) } catch { refusal = error }
    #expect(refusal == .dependencyCycle, "work:k → caller → work:k")
  }

  @Test(
    "On real queues: a dependency closing a cycle through a coalesced handle is refused; nothing deadlocks")
  func cycleThroughHandleOnRealQueues() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let x = queue.addOperation { 1 }
    queue.addBarrierBlock {}
    let caller = queue.addOperation(coalescingBy: "k") { 2 }
    #expect(throws: ActorQueueError.dependencyCycle) { try x.addDependency(caller) }
    queue.isSuspended = false
    let ended = await eventuallyFreed(within: .seconds(2)) { x.state.isTerminal && caller.state.isTerminal }
    #expect(ended, "x is \(x.state), the caller's handle \(caller.state): they wait for each other")
    x.cancel()  // breaks the cycle if it formed, so the queue drains
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test(
    "On real queues: the shared work (from `operations`) cannot depend on a handle that joined it")
  func workOnItsOwnHandleOnRealQueues() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let caller = queue.addOperation(coalescingBy: "k") { 2 }
    let work = try #require(queue.operations.first)
    #expect(throws: ActorQueueError.dependencyCycle) { try work.addDependency(caller) }
    queue.isSuspended = false
    let ended = await eventuallyFreed(within: .seconds(2)) { caller.state.isTerminal }
    #expect(ended, "the work is \(work.state): it waits for its own caller's handle")
    caller.cancel()  // the last caller cancelled: the work is cancelled, the queue drains
    await queue.waitUntilAllOperationsAreFinished()
  }
}

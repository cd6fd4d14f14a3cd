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
    #expect(refusal?.cycle.map(\.id) == ["x", "caller", "work:k", "barrier"].map { h[$0].id })
    #expect(refusal?.cycle.map(\.isSharedWork) == [false, false, true, false])
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
    #expect(refusal?.cycle.map(\.id) == [h["work:k"].id, h["caller"].id])
    #expect(refusal?.cycle.map(\.isSharedWork) == [true, false])
  }

  @Test(
    "On real queues: a dependency closing a cycle through a coalesced handle is refused; nothing deadlocks")
  func cycleThroughHandleOnRealQueues() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let x = queue.addOperation { 1 }
    let barrier = queue.addBarrierBlock {}
    let caller = queue.addOperation(coalescingBy: "k") { 2 }
    let work = queue.operations.last
    let refusal = #expect(throws: ActorQueueError.dependencyCycle) { try x.addDependency(caller) }
    #expect(refusal?.cycle.map(\.id) == [x.id, caller.id, work?.id, barrier.id].compactMap { $0 })
    queue.isSuspended = false
    let ended = await eventuallyFreed { x.state.isTerminal && caller.state.isTerminal }
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
    let refusal = #expect(throws: ActorQueueError.dependencyCycle) { try work.addDependency(caller) }
    #expect(refusal?.cycle.map(\.id) == [work.id, caller.id])
    #expect(refusal?.cycle.map(\.isSharedWork) == [true, false])
    queue.isSuspended = false
    let ended = await eventuallyFreed { caller.state.isTerminal }
    #expect(ended, "the work is \(work.state): it waits for its own caller's handle")
    caller.cancel()  // the last caller cancelled: the work is cancelled, the queue drains
    await queue.waitUntilAllOperationsAreFinished()
  }

  // MARK: The refusal names the cycle, shared work included

  // Issue 25: scripts that joined coalesced work and then added dependencies across queues saw
  // refusals where the callers' own operations showed no cycle. The shared work closes it: a
  // caller's handle waits for the shared work, the work for the barrier it was added after, and
  // the barrier for what was unfinished in its queue, which may wait for another queue's
  // operations. The error names every step of it.

  @Test("Across queues: the refused cycle runs through the shared work and the barrier it was added after")
  func crossQueueCycleThroughSharedWorkAndBarrier() async throws {
    let a = ActorQueue(name: "A")
    let b = ActorQueue(name: "B")
    a.isSuspended = true
    b.isSuspended = true
    let x = a.addOperation(name: "x") { 1 }
    let y = QueueOperation(name: "y") { 2 }
    try y.addDependency(x)
    try b.addOperation(y)
    let barrier = b.addBarrierBlock(name: "barrier") {}
    let h = b.addOperation(name: "h", coalescingBy: "k") { 3 }
    let work = try #require(b.operations.last)
    #expect(work.id != h.id && work.name == "h")

    let refusal = #expect(throws: ActorQueueError.dependencyCycle) { try x.addDependency(h) }
    let cycle = try #require(refusal?.cycle)
    // x → h → shared work → barrier → y → x.
    #expect(cycle.map(\.id) == [x.id, h.id, work.id, barrier.id, y.id])
    #expect(cycle.map(\.name) == ["x", "h", "h", "barrier", "y"])
    #expect(cycle.map(\.isSharedWork) == [false, false, true, false, false])
    #expect(
      refusal?.description.contains(
        "'x' (\(x.id)) → 'h' (\(h.id)) → shared work 'h' (\(work.id)) → 'barrier' (\(barrier.id)) → "
          + "'y' (\(y.id)) → 'x' (\(x.id))") == true, "\(refusal.map { "\($0)" } ?? "")")
    #expect(x.dependencies.isEmpty, "nothing was changed")

    // Nothing deadlocks: every operation ends, in the order the edges that exist give.
    a.isSuspended = false
    b.isSuspended = false
    #expect(try await h.value == 3)
    #expect(x.state == .finished && y.state == .finished && barrier.state == .finished)
    await a.waitUntilAllOperationsAreFinished()
    await b.waitUntilAllOperationsAreFinished()
  }

  @Test("Adding an operation behind a barrier that waits for it names the cycle (value)")
  func submissionBehindABarrierNamesTheCycle() {
    var h = SchedulerHarness()
    let q = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: q, now: now, &e) }
    h.makeOperation("prepared")
    h.add("x", to: q)
    do throws(ActorQueueError) { try h.depend(h["x"], on: h["prepared"]) } catch {
      Issue.record("x may wait for a prepared operation: \(error)")
    }
    let barrier = h.makeOperation("barrier")
    h.event { s, now, e in s.submitBarrier(barrier, to: q, now: now, &e) }
    var refusal: ActorQueueError?
    do throws(ActorQueueError) { try h.submit(["prepared"], to: q) } catch { refusal = error }
    // prepared → barrier → x → prepared.
    #expect(refusal == .dependencyCycle)
    #expect(refusal?.cycle.map(\.id) == ["prepared", "barrier", "x"].map { h[$0].id })
  }
}

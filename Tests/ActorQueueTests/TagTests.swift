import ActorQueueTesting
import Foundation
import TestSupport
import Testing

@testable import ActorQueue

/// Cancel by tag (beyond.md §1.9 d), on gates: no test sleeps.
@Suite("Cancel by tag", .timeLimit(.minutes(hangLimitMinutes)))
struct TagTests {
  @Test(
    "Waiting tagged operations end before the call returns; executing ones are cancelled; others untouched")
  func cancelsTaggedOnly() async throws {
    let queue = ActorQueue(name: "screen", maxConcurrentOperationCount: 2)
    let running = CountdownGate(count: 2)
    let sawCancel = Recorder<String>()
    let release = Gate()
    let done = queue.addOperation(name: "done", traits: [.tags("screen")]) {}
    try await done.value
    let executing = queue.addOperation(name: "executing", traits: [.tags("screen")]) {
      running.signal()
      await untilCancelled()
      sawCancel.append("executing")
      try Task.checkCancellation()
    }
    let untaggedRunning = queue.addOperation(name: "untagged running") {
      running.signal()
      await release.wait()
      if Task.isCancelled { sawCancel.append("untagged running") }
    }
    await running.wait()
    let waiting = queue.addOperation(name: "waiting", traits: [.tags("screen", "avatars")]) {}
    let other = queue.addOperation(name: "other tag", traits: [.tags("settings")]) {}
    let untagged = queue.addOperation(name: "untagged") {}
    #expect(queue.operations(tagged: "screen").map(\.name) == ["executing", "waiting"])

    queue.cancelOperations(tagged: "screen")
    // Before the call returned: the waiting one ended, the executing one was told.
    #expect(waiting.state == .cancelled)
    #expect(executing.isCancelled)
    #expect(other.state == .ready && untagged.state == .ready)
    #expect(!untaggedRunning.isCancelled && done.state == .finished)
    await executing.waitUntilFinished()
    #expect(executing.state == .cancelled)
    #expect(sawCancel.snapshot == ["executing"])
    #expect(queue.operations(tagged: "screen").isEmpty)
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect([other.state, untagged.state, untaggedRunning.state] == [.finished, .finished, .finished])
    // Tags stay readable after the end.
    #expect(waiting.tags == ["screen", "avatars"])
    #expect(untagged.tags.isEmpty)
  }

  @Test("The static form reaches every queue, a group's included; the queue form only its own")
  func staticFormReachesEveryQueue() async throws {
    let first = ActorQueue(name: "first")
    let second = ActorQueue(name: "second")
    first.isSuspended = true
    second.isSuspended = true
    let a = first.addOperation(name: "a", traits: [.tags("static-leave")]) {}
    let b = second.addOperation(name: "b", traits: [.tags("static-leave")]) {}
    second.cancelOperations(tagged: "static-leave")
    #expect(a.state == .ready && b.state == .cancelled)

    let childAdded = Gate()
    let children = LockedValue<[AnyQueueOperation]>([])
    let groups = ActorQueue(name: "groups")
    let group = groups.addOperationGroup(name: "g", maxConcurrentOperationCount: 1) { group in
      let blocker = group.queue.addOperation(name: "blocker") { await untilCancelled() }
      let child = group.queue.addOperation(name: "child", traits: [.tags("static-leave")]) {}
      children.withLock { $0 = [blocker, child] }
      childAdded.open()
    }
    await childAdded.wait()
    let (blocker, child) = children.withLock { ($0[0], $0[1]) }
    // The parent queue's own call does not reach its group's children.
    groups.cancelOperations(tagged: "static-leave")
    #expect(child.state == .ready)

    ActorQueue.cancelOperations(tagged: "static-leave")
    #expect(a.state == .cancelled && child.state == .cancelled)
    #expect(blocker.state == .executing)
    blocker.cancel()
    await group.waitUntilFinished()
    #expect(group.state == .finished)
  }

  @Test("A tagged group: cancelling its tag cancels the group, and the group its children")
  func taggedGroup() async throws {
    let queue = ActorQueue(name: "screens")
    let built = Gate()
    let children = LockedValue<[AnyQueueOperation]>([])
    let group = queue.addOperationGroup(
      name: "profile", traits: [.tags("group-tag")], maxConcurrentOperationCount: 1
    ) { group in
      let running = group.queue.addOperation(name: "running") {
        await untilCancelled()
        try Task.checkCancellation()
      }
      let waiting = group.queue.addOperation(name: "waiting") {}
      children.withLock { $0 = [running, waiting] }
      built.open()
    }
    await built.wait()
    #expect(queue.operations(tagged: "group-tag").map(\.id) == [group.id])
    queue.cancelOperations(tagged: "group-tag")
    await group.waitUntilFinished()
    #expect(group.state == .cancelled)
    #expect(children.withLock { $0.map(\.state) } == [.cancelled, .cancelled])
  }

  @Test(
    "Coalesced work shows its first caller's tags; a tag reaches callers' handles, as their cancel() would")
  func coalescingTagsReachCallers() async throws {
    let queue = ActorQueue(name: "images")
    queue.isSuspended = true
    let first = queue.addOperation(traits: [.tags("first")], coalescingBy: "a.png") { 1 }
    let second = queue.addOperation(traits: [.tags("second")], coalescingBy: "a.png") { 1 }
    let third = queue.addOperation(coalescingBy: "a.png") { 1 }
    #expect(first.tags == ["first"] && second.tags == ["second"] && third.tags.isEmpty)
    let work = try #require(queue.operations.first)
    #expect(work.tags == ["first"])
    // The first caller's handle, not the shared work.
    #expect(queue.operations(tagged: "first").map(\.id) == [first.id])

    queue.cancelOperations(tagged: "second")
    queue.cancelOperations(tagged: "first")
    #expect(first.state == .cancelled && second.state == .cancelled)
    // A caller still waits: the work goes on.
    #expect(third.state == .ready && work.state == .ready)
    queue.isSuspended = false
    #expect(try await third.value == 1)
    #expect(work.state == .finished)

    // The only caller's tag: its handle ends, and with nobody waiting, the work is cancelled.
    queue.isSuspended = true
    let only = queue.addOperation(traits: [.tags("only")], coalescingBy: "b.png") { 2 }
    let alone = try #require(queue.operations.first)
    queue.cancelOperations(tagged: "only")
    #expect(only.state == .cancelled && alone.state == .cancelled)
    #expect(queue.operationCount == 0)
  }

  @Test("A prepared operation's tags apply once it is added; they cannot change afterwards")
  func preparedTagsFrozenAtEnqueue() async throws {
    let queue = ActorQueue(name: "prepared")
    queue.isSuspended = true
    let prepared = QueueOperation(name: "p", traits: [.tags("prepared-tag")]) { 7 }
    #expect(prepared.tags == ["prepared-tag"])
    // Not in a queue yet: no call reaches it.
    ActorQueue.cancelOperations(tagged: "prepared-tag")
    #expect(prepared.state == .pending && !prepared.isCancelled)
    try queue.addOperation(prepared)
    #expect(queue.operations(tagged: "prepared-tag").map(\.id) == [prepared.id])
    queue.cancelOperations(tagged: "prepared-tag")
    #expect(prepared.state == .cancelled)
  }

  @Test("Given twice or repeated, tags add up and count once; empty tags change nothing")
  func tagsAddUp() async throws {
    let queue = ActorQueue(name: "fold")
    queue.isSuspended = true
    let operation = queue.addOperation(traits: [
      .tags("a", "a"), .tags([]), .tags("b"), .deadline(in: .seconds(60)),
    ]) {
      1
    }
    let none = queue.addOperation(traits: [.tags([])]) { 2 }
    #expect(operation.tags == ["a", "b"])
    #expect(none.tags.isEmpty)
    #expect(queue.operations(tagged: "a").count == 1)
    queue.cancelOperations(tagged: "b")
    #expect(operation.state == .cancelled)
    #expect(queue.operations(tagged: "a").isEmpty)
    queue.isSuspended = false
    #expect(try await none.value == 2)
  }

  @Test("A tagged operation on an idle queue starts at once and is still reached while it executes")
  func idleStartIsListed() async throws {
    let queue = ActorQueue(name: "idle")
    let started = Gate()
    let operation = queue.addOperation(traits: [.tags("idle")]) {
      started.open()
      await untilCancelled()
      try Task.checkCancellation()
    }
    await started.wait()
    queue.cancelOperations(tagged: "idle")
    await operation.waitUntilFinished()
    #expect(operation.state == .cancelled)
  }

  @Test(
    "One tagged in 1,000 waiting (100 among 100,000; 10 among 10,000 in a debug build): the call does a unit of work for each tagged one, in one hold, whatever the backlog"
  )
  func costFollowsTheTaggedOnly() {
    var h = SchedulerHarness()
    let queue = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: queue, now: now, &e) }
    let tag = OperationTag("bulk-tag-cost")
    let count = SearchDepth.size(quick: 10_000, deep: 100_000)
    for index in 0..<count {
      let traits: [OperationTrait] = index % 1_000 == 0 ? [.tags(tag)] : []
      let name = "op\(index)"
      if traits.isEmpty { h.add(name, to: queue) } else { h.add(name, traits: traits, to: queue) }
    }
    h.scheduler.largestSlice = 0
    h.event { s, now, e in s.cancelTagged(tag.id, in: queue, now: now, &e) }
    #expect(h.scheduler.largestSlice == count / 1_000)
    #expect(h.scheduler.callsInSlices == 0)
    #expect(h.state("op0") == .cancelled && h.state("op\(count - 1_000)") == .cancelled)
    #expect(h.state("op1") == .ready)
    #expect(h.scheduler.unfinishedCount(of: queue) == count - count / 1_000)
    #expect(h.scheduler.taggedOperations.isEmpty)
  }

  @Test("A tag on 5,000 waiting operations: no hold walks more than a slice, whatever the tag's size")
  func largeTagIsWalkedInSlices() {
    var h = SchedulerHarness()
    let queue = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: queue, now: now, &e) }
    let tag = OperationTag("bulk-tag-large")
    for index in 0..<5_000 { h.add("op\(index)", traits: [.tags(tag)], to: queue) }
    // Ended ones leave dead entries the walk steps over, as units of work too; once they are most
    // of the entries, they are dropped.
    func deadCounted(_ h: SchedulerHarness) -> Bool {
      guard let members = h.scheduler.taggedOperations[tag.id] else { return false }
      return members.dead == members.order.filter { !TagMembers.isLive($0, in: h.scheduler.operations) }.count
    }
    for index in 0..<1_000 where index % 3 == 0 { h.cancel("op\(index)") }
    #expect(h.scheduler.taggedOperations[tag.id]?.order.count == 5_000 && deadCounted(h))
    for index in 1_000..<3_600 { h.cancel("op\(index)") }
    #expect(h.scheduler.taggedOperations[tag.id]!.order.count < 5_000 && deadCounted(h))
    h.scheduler.largestSlice = 0
    h.event { s, now, e in s.cancelTagged(tag.id, in: queue, now: now, &e) }
    #expect(h.scheduler.largestSlice == Scheduler.defaultSliceLimit)
    #expect((0..<5_000).allSatisfy { h.state("op\($0)") == .cancelled })
    #expect(h.scheduler.taggedOperations.isEmpty)
  }

  @Test(
    "Operations tagged while a call goes on in slices are not part of it, a prepared one created before too")
  func listedMeanwhileIsLeftAlone() {
    var h = SchedulerHarness()
    h.scheduler.sliceLimit = 2
    let queue = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: queue, now: now, &e) }
    let tag = OperationTag("meanwhile")
    // Created first (the smallest identifier), added only once the call has begun.
    let early = h.makeOperation("early")
    let earlyIndex = early.recordIndex
    h.event { s, _, _ in s.setTraits([.tags(tag)], of: earlyIndex) }
    for index in 0..<6 { h.add("t\(index)", traits: [.tags(tag)], to: queue) }
    h.continuesBulkAtOnce = false
    h.event { s, now, e in s.cancelTagged(tag.id, in: queue, now: now, &e) }
    #expect(h.state("t0") == .cancelled && h.state("t1") == .cancelled && h.state("t2") == .ready)
    try? h.event { s, now, e throws(ActorQueueError) in try s.submit([early], to: queue, now: now, &e) }
    h.add("late", traits: [.tags(tag)], to: queue)
    while h.continueBulk() {}
    h.continuesBulkAtOnce = true
    #expect((0..<6).allSatisfy { h.state("t\($0)") == .cancelled })
    #expect(h.state("early") == .ready && h.state("late") == .ready)
    #expect(h.scheduler.tagged(tag.id, in: queue).map(\.index) == [earlyIndex, h.index("late")])
  }

  @Test("More tagged operations than a slice: cancelled in slices of the lock, all before the call returns")
  func cancelsInSlices() {
    var h = SchedulerHarness()
    h.scheduler.sliceLimit = 3
    let queue = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setSuspended(true, of: queue, now: now, &e) }
    let tag = OperationTag("slices")
    for index in 0..<10 { h.add("t\(index)", traits: [.tags(tag)], to: queue) }
    h.add("plain", to: queue)
    h.scheduler.largestSlice = 0
    h.event { s, now, e in s.cancelTagged(tag.id, in: queue, now: now, &e) }
    #expect(h.scheduler.largestSlice == 3)
    #expect((0..<10).allSatisfy { h.state("t\($0)") == .cancelled })
    #expect(h.state("plain") == .ready)
  }
}

/// Cancel by tag against Foundation's stand-in: walking `operations` and testing each `name`.
@Suite("Cancel by tag against OperationQueue", .timeLimit(.minutes(hangLimitMinutes)))
struct TagFoundationTests {
  @Test("Foundation: a cancelled waiting operation stays in its suspended queue until the queue runs it")
  func foundationKeepsCancelled() {
    let foundation = OperationQueue()
    foundation.isSuspended = true
    let tagged = BlockOperation {}
    tagged.name = "screen"
    foundation.addOperation(tagged)
    foundation.addOperation(BlockOperation {})
    for operation in foundation.operations where operation.name == "screen" { operation.cancel() }
    #expect(tagged.isCancelled && !tagged.isFinished)
    #expect(foundation.operationCount == 2)  // still there until the queue runs it
    foundation.isSuspended = false
    foundation.waitUntilAllOperationsAreFinished()
    #expect(tagged.isFinished)
  }

  @Test("ActorQueue: a cancelled waiting operation ends at once and leaves its suspended queue")
  func actorQueueEndsCancelled() async {
    let queue = ActorQueue(name: "screen")
    queue.isSuspended = true
    let operation = queue.addOperation(traits: [.tags("screen")]) {}
    queue.addOperation {}
    queue.cancelOperations(tagged: "screen")
    #expect(operation.state == .cancelled)
    #expect(queue.operationCount == 1)
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
  }
}

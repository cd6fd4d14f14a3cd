import Testing

@testable import ActorQueue

/// Issue 60, item 6: the capabilities' rules on the scheduler value itself, deterministic (the
/// test is every worker and the clock), asserted only through what a user can see or derive:
/// operation states, what runs, the wait report's reasons, outcomes. No private field of the
/// scheduler is read, so these hold across the consolidation of its fields.
@Suite("Capability rules on the scheduler value")
struct CapabilityRulesOnTheValueTests {
  /// A manual clock of each test's own value.
  private static let clock: UInt64 = 1_000_001

  /// An instant of ``clock``, `seconds` after its zero.
  private static func at(_ seconds: Int) -> QueueDeadline {
    QueueDeadline(clock: QueueClock(id: clock), nanoseconds: Int64(seconds) * 1_000_000_000)
  }

  private typealias Reason = OperationWaitReport.Reason

  /// `queue`'s wait report: what each operation waits for, by its name.
  private static func waiting(_ h: SchedulerHarness, in queue: Int) -> [String: [Reason]] {
    Dictionary(uniqueKeysWithValues: h.waitReport(of: queue).map { ($0.name ?? "?", $0.waitingFor) })
  }

  /// The names in `queue`'s wait report, in its order.
  private static func waitingOrder(_ h: SchedulerHarness, in queue: Int) -> [String] {
    h.waitReport(of: queue).map { $0.name ?? "?" }
  }

  /// The error `name` ended with, if any.
  private static func error(of name: String, in h: SchedulerHarness) -> (any Error)? {
    h.scheduler.endedOutcome(of: h.index(name))?.error
  }

  /// `isCancelled` of `name`: its cancellation was asked for.
  private static func isCancelled(_ name: String, in h: SchedulerHarness) -> Bool {
    h.scheduler.isCancelRequested(h.index(name))
  }

  // MARK: Exclusivity: parking

  @Test(
    "Exclusivity: a second op on a held key waits, reported as waiting for the key and its holder; an op without the key runs meanwhile; the holder's end starts it"
  )
  func secondOnAHeldKeyWaitsForTheHolder() {
    var h = SchedulerHarness()
    let queue = h.makeQueue(limit: 4)
    h.add("first", traits: [.exclusive("k")], to: queue)
    h.add("second", traits: [.exclusive("k")], to: queue)
    h.add("free", to: queue)
    #expect(Set(h.running) == ["first", "free"])
    #expect(h.state("second") == .pending)
    #expect(Self.waiting(h, in: queue) == ["second": [.key("k", heldBy: h["first"].id)]])
    h.end("first")
    #expect(Set(h.running) == ["free", "second"])
    #expect(h.state("first") == .finished)
    #expect(Self.waiting(h, in: queue).isEmpty)
  }

  @Test(
    "Exclusivity across queues: a key of a shared domain excludes across queues; the same name in each queue's own domain does not"
  )
  func sharedDomainExcludesAcrossQueues() {
    var h = SchedulerHarness()
    let q1 = h.makeQueue()
    let q2 = h.makeQueue()
    let shared = ExclusivityDomain(name: "capability-rules")
    h.add("a", traits: [.exclusive("k", in: shared)], to: q1)
    h.add("b", traits: [.exclusive("k", in: shared)], to: q2)
    h.add("own1", traits: [.exclusive("k")], to: q1)
    h.add("own2", traits: [.exclusive("k")], to: q2)
    #expect(Set(h.running) == ["a", "own1", "own2"])
    #expect(Self.waiting(h, in: q1).isEmpty)
    #expect(Self.waiting(h, in: q2) == ["b": [.key("k", heldBy: h["a"].id)]])
    h.end("a")
    #expect(Set(h.running) == ["own1", "own2", "b"])
    #expect(Self.waiting(h, in: q2).isEmpty)
  }

  @Test("Exclusivity: waiters on a key, across queues, are granted by priority, then global submission order")
  func waitersGrantedByPriorityThenSubmissionOrder() {
    var h = SchedulerHarness()
    let q1 = h.makeQueue()
    let q2 = h.makeQueue(limit: 2)
    let shared = ExclusivityDomain(name: "capability-rules-rank")
    let key: [OperationTrait] = [.exclusive("db", in: shared)]
    h.add("holder", traits: key, to: q1)
    h.add("low", priority: .low, traits: key, to: q2)
    h.add("normal1", traits: key, to: q1)
    h.add("high", priority: .high, traits: key, to: q2)
    h.add("normal2", traits: key, to: q2)
    h.add("veryLow", priority: .veryLow, traits: key, to: q1)
    let holder = h["holder"].id
    #expect(
      Self.waiting(h, in: q1) == [
        "normal1": [.key("db", heldBy: holder)], "veryLow": [.key("db", heldBy: holder)],
      ])
    #expect(
      Self.waiting(h, in: q2) == [
        "low": [.key("db", heldBy: holder)], "high": [.key("db", heldBy: holder)],
        "normal2": [.key("db", heldBy: holder)],
      ])
    var order: [String] = []
    var current = "holder"
    for _ in 0..<5 {
      h.end(current)
      #expect(h.running.count == 1, "one holder at a time: \(h.running)")
      guard let next = h.running.first else { break }
      order.append(next)
      current = next
    }
    #expect(order == ["high", "normal1", "normal2", "low", "veryLow"])
  }

  // MARK: Exclusivity: aging

  /// "x0" holds x, "both" (submitted next) waits for x and y, then s1…s`length` alternate between
  /// y and x, all on one unlimited queue; the running stream ops end oldest first until "both"
  /// starts. Returns how many stream ops started after "both" arrived and before it started.
  private static func streamStartsBeforeTheWaiter(agingLimit: Int, length: Int) -> Int {
    var h = SchedulerHarness()
    h.scheduler.agingLimit = agingLimit
    let queue = h.makeQueue()
    h.add("x0", traits: [.exclusive("x")], to: queue)
    h.add("both", traits: [.exclusive("x", "y")], to: queue)
    for number in 1...length {
      h.add("s\(number)", traits: [.exclusive(number.isMultiple(of: 2) ? "x" : "y")], to: queue)
    }
    var started: [String] = []
    func note(_ h: SchedulerHarness) {
      for name in h.running where !started.contains(name) { started.append(name) }
    }
    note(h)
    #expect(h.state("both") == .pending)
    while !h.running.contains("both") {
      let stream = h.running.filter { $0 != "both" }
      guard let oldest = stream.min(by: { Int($0.dropFirst())! < Int($1.dropFirst())! }) else { break }
      h.end(oldest)
      note(h)
      #expect(h.running.count <= 2, "at most one holder of x and one of y: \(h.running)")
    }
    #expect(h.running.contains("both"), "the waiter started")
    return started.prefix { $0 != "both" }.count - 1  // x0 started before it arrived
  }

  @Test(
    "Aging: a waiter for {x, y} passed over by alternating x and y streams starts within agingLimit + 2 grants (beyond.md 1.4: 16 + 2)"
  )
  func agingBoundsHowLongAWaiterIsPassedOver() {
    #expect(Scheduler.defaultAgingLimit == 16)
    let passedBy = Self.streamStartsBeforeTheWaiter(agingLimit: Scheduler.defaultAgingLimit, length: 60)
    #expect(passedBy <= Scheduler.defaultAgingLimit + 2, "\(passedBy) stream starts before the waiter")
    let quickly = Self.streamStartsBeforeTheWaiter(agingLimit: 2, length: 60)
    #expect(quickly <= 2 + 2, "\(quickly) stream starts before the waiter")
  }

  @Test(
    "Aging is what ends the starvation: with no limit, the same waiter starts only once the stream has run out"
  )
  func withoutAgingTheWaiterStarves() {
    let passedBy = Self.streamStartsBeforeTheWaiter(agingLimit: .max, length: 40)
    #expect(passedBy == 40)
  }

  // MARK: Rate limits: permit grants

  /// `queue` starts through a token bucket of 1 permit a second, `burst` at once, on ``clock``.
  private static func limitStarts(_ h: inout SchedulerHarness, of queue: Int, burst: Int) {
    let rule = PermitSchedule.Rule.tokenBucket(permits: 1, interval: 1_000_000_000, burst: Int64(burst))
    let slot = h.scheduler.createLimiter(PermitSchedule(rule), clock: clock)
    h.event { s, now, e in s.setRateLimiters([slot], keeping: [], of: queue, now: now, &e) }
  }

  @Test(
    "Permits: a token bucket grants its burst at once; the next head waits ready, reported as waiting for permits until they conform, holding no slot, and starts at that instant"
  )
  func bucketGrantsItsBurstThenTheHeadWaitsForPermits() {
    var h = SchedulerHarness()
    h.registerManualClock(Self.clock)
    let queue = h.makeQueue(clock: Self.clock)
    Self.limitStarts(&h, of: queue, burst: 2)
    h.add("a", "b", "c", "d", to: queue)
    #expect(Set(h.running) == ["a", "b"])
    #expect(h.state("c") == .ready && h.state("d") == .ready)
    #expect(Self.waiting(h, in: queue) == ["c": [.permits(until: Self.at(1))], "d": [.slot]])
    h.end("a")
    h.end("b")
    #expect(h.running.isEmpty, "free slots grant no permits")
    h.advance(Self.clock, by: .milliseconds(999))
    #expect(h.running.isEmpty)
    h.advance(Self.clock, by: .milliseconds(1))
    #expect(h.running == ["c"])
    #expect(Self.waiting(h, in: queue) == ["d": [.permits(until: Self.at(2))]])
    h.advance(Self.clock, by: .seconds(1))
    #expect(Set(h.running) == ["c", "d"])
    #expect(Self.waiting(h, in: queue).isEmpty)
  }

  @Test(
    "Permits, strict order: a head whose cost is not available yet holds back a cheaper op behind it, which a permit would admit"
  )
  func costlyHeadHoldsBackCheaperOnes() {
    var h = SchedulerHarness()
    h.registerManualClock(Self.clock)
    let queue = h.makeQueue(clock: Self.clock)
    Self.limitStarts(&h, of: queue, burst: 2)
    h.add("first", to: queue)  // one permit of two left
    h.add("two", traits: [.cost(2)], to: queue)
    h.add("cheap", to: queue)
    #expect(h.running == ["first"])
    #expect(Self.waiting(h, in: queue) == ["two": [.permits(until: Self.at(1))], "cheap": [.slot]])
    h.advance(Self.clock, by: .seconds(1))
    #expect(Set(h.running) == ["first", "two"])
    #expect(Self.waiting(h, in: queue) == ["cheap": [.permits(until: Self.at(2))]])
    h.advance(Self.clock, by: .seconds(1))
    #expect(Set(h.running) == ["first", "two", "cheap"])
  }

  @Test(
    "Permits: a cost above what the limiter ever grants ends the op failed at once with RateLimitError, taking no permits"
  )
  func costAboveCapacityEndsFailed() {
    var h = SchedulerHarness()
    h.registerManualClock(Self.clock)
    let queue = h.makeQueue(clock: Self.clock)
    Self.limitStarts(&h, of: queue, burst: 2)
    h.add("huge", traits: [.cost(3)], to: queue)
    #expect(h.state("huge") == .failed)
    let error = Self.error(of: "huge", in: h) as? RateLimitError
    #expect(error?.cost == 3 && error?.capacity == 2 && error?.operationID == h["huge"].id)
    h.add("a", "b", "c", to: queue)
    #expect(Set(h.running) == ["a", "b"], "the burst is whole")
    #expect(Self.waiting(h, in: queue) == ["c": [.permits(until: Self.at(1))]])
  }

  // MARK: Conditions

  @Test(
    "A condition's not yet: the op returns to pending holding no slot and no key (another takes both), reported as waiting for the condition, and is evaluated again after the delay"
  )
  func notYetHoldsNothingUntilItsDelayEnds() {
    var h = SchedulerHarness()
    h.registerManualClock(Self.clock)
    let queue = h.makeQueue(limit: 1, clock: Self.clock)
    h.add("gated", traits: [.exclusive("k"), .condition("online") { _ in .satisfied }], to: queue)
    #expect(h.evaluating == ["gated"])
    #expect(h.state("gated") == .executing, "evaluated holding its slot (beyond.md 1.3 d7)")
    h.add("other", traits: [.exclusive("k")], to: queue)
    #expect(Self.waiting(h, in: queue) == ["other": [.slot, .key("k", heldBy: h["gated"].id)]])

    h.answer("gated", ConditionAnswer(name: "online", result: .notYet(retryAfter: .seconds(2))))
    #expect(h.state("gated") == .pending)
    #expect(h.running == ["other"])
    #expect(Self.waiting(h, in: queue) == ["gated": [.condition("online", until: Self.at(2))]])
    h.advance(Self.clock, by: .seconds(1))
    #expect(h.state("gated") == .pending)
    #expect(Self.waiting(h, in: queue) == ["gated": [.condition("online", until: Self.at(2))]])
    h.advance(Self.clock, by: .seconds(1))
    #expect(h.state("gated") == .ready)
    #expect(Self.waiting(h, in: queue) == ["gated": [.slot, .key("k", heldBy: h["other"].id)]])

    h.end("other")
    #expect(h.evaluating == ["gated"], "evaluated again")
    h.answer("gated", nil)
    #expect(h.running == ["gated"] && h.evaluating.isEmpty)
    h.end("gated")
    #expect(h.state("gated") == .finished)
  }

  @Test(
    "A condition's not yet: cancelling the op while it waits out the delay ends it at once; it still counts towards its queue's capacity until then"
  )
  func notYetIsCancelledAtOnceAndCountsTowardsCapacity() {
    var h = SchedulerHarness()
    h.registerManualClock(Self.clock)
    let queue = h.makeQueue(limit: 1, clock: Self.clock)
    h.event { s, now, e in s.setCapacity(1, of: queue, now: now, &e) }
    h.add("gated", traits: [.condition("online") { _ in .satisfied }], to: queue)
    h.answer("gated", ConditionAnswer(name: "online", result: .notYet(retryAfter: .seconds(5))))
    #expect(h.state("gated") == .pending && h.running.isEmpty)
    let whileDeferred = h.tryAdd("refused", to: queue)
    #expect(!whileDeferred, "the deferred op fills the queue")
    h.cancel("gated")
    #expect(h.state("gated") == .cancelled)
    #expect(Self.waiting(h, in: queue).isEmpty)
    h.advance(Self.clock, by: .seconds(5))
    #expect(h.state("gated") == .cancelled && h.running.isEmpty, "its delay's end starts nothing")
    let afterwards = h.tryAdd("later", to: queue)
    #expect(afterwards)
    #expect(h.running == ["later"])
  }

  @Test(
    "A condition's skip ends the op cancelled, its failure ends it failed with a ConditionFailedError; neither body runs, and the slots go to the next"
  )
  func skipCancelsAndFailureFails() {
    var h = SchedulerHarness()
    let queue = h.makeQueue(limit: 2)
    h.add("skipped", traits: [.condition("c1") { _ in .satisfied }], to: queue)
    h.add("failing", traits: [.condition("c2") { _ in .satisfied }], to: queue)
    h.add("next1", "next2", to: queue)
    #expect(Set(h.evaluating) == ["skipped", "failing"])
    h.answer("skipped", ConditionAnswer(name: "c1", result: .skip))
    #expect(h.state("skipped") == .cancelled)
    #expect(Self.isCancelled("skipped", in: h))
    #expect(Set(h.running) == ["failing", "next1"])
    struct Offline: Error {}
    h.answer("failing", ConditionAnswer(name: "c2", result: .failed(Offline())))
    #expect(h.state("failing") == .failed)
    let error = Self.error(of: "failing", in: h) as? ConditionFailedError
    #expect(error?.conditionName == "c2" && error?.underlyingError is Offline)
    #expect(Set(h.running) == ["next1", "next2"])
    #expect(h.evaluating.isEmpty)
  }

  // MARK: Groups

  @Test(
    "A group holds one slot of its parent while its children run; the children hold none of the parent's and obey the group's limit"
  )
  func groupHoldsOneParentSlot() throws {
    var h = SchedulerHarness()
    let parent = h.makeQueue(limit: 2)
    h.addGroup("group", to: parent)
    h.add("beside", "behind", to: parent)
    #expect(Set(h.running) == ["group", "beside"])
    let children = h.makeGroupQueue(of: "group", limit: 2, policy: .cancelSiblings)
    h.add("c1", "c2", "c3", to: children)
    #expect(Set(h.running) == ["group", "beside", "c1", "c2"])
    #expect(Self.waiting(h, in: children) == ["c3": [.slot]])
    #expect(Self.waiting(h, in: parent) == ["behind": [.slot]])
    h.end("c1")
    #expect(Set(h.running) == ["group", "beside", "c2", "c3"])
    h.end("c2")
    let early = h.scheduler.sealGroup(children)
    #expect(early == nil, "a child is unfinished")
    h.end("c3")
    let sealing = h.scheduler.sealGroup(children)
    let sealed = try #require(sealing)
    #expect(sealed.failures.isEmpty && !sealed.cancelled)
    #expect(
      Self.waiting(h, in: parent) == ["behind": [.slot]], "the group's slot is held until its body returns")
    h.end("group")
    #expect(h.state("group") == .finished)
    #expect(Set(h.running) == ["beside", "behind"])
  }

  @Test(
    "A group's failing child cancels its siblings (a waiting one at once, a running one asked to stop); the group, still holding its slot, learns of that child's failure only"
  )
  func failingChildCancelsSiblings() throws {
    var h = SchedulerHarness()
    let parent = h.makeQueue(limit: 1)
    h.addGroup("group", to: parent)
    h.add("behind", to: parent)
    let children = h.makeGroupQueue(of: "group", limit: 2, policy: .cancelSiblings)
    h.add("c1", "c2", "c3", to: children)
    #expect(Set(h.running) == ["group", "c1", "c2"])
    struct Broken: Error {}
    h.end("c1", with: .failure(Broken()))
    #expect(h.state("c1") == .failed)
    #expect(h.state("c3") == .cancelled)
    #expect(h.state("c2") == .executing && Self.isCancelled("c2", in: h))
    #expect(Set(h.running) == ["group", "c2"])
    let early = h.scheduler.sealGroup(children)
    #expect(early == nil, "a child is unfinished")
    h.end("c2", with: .failure(CancellationError()))
    #expect(h.state("c2") == .cancelled)
    let sealing = h.scheduler.sealGroup(children)
    let sealed = try #require(sealing)
    #expect(sealed.failures.map(\.name) == ["c1"] && sealed.failures.first?.error is Broken)
    #expect(!sealed.cancelled)
    #expect(Self.waiting(h, in: parent) == ["behind": [.slot]])
    h.end("group", with: .failure(GroupFailedError(failures: sealed.failures)))
    #expect(h.state("group") == .failed)
    #expect(h.running == ["behind"])
  }

  // MARK: Capacity

  @Test(
    "Capacity: tryAdd is refused while the queue is full; the synchronous add still accepts, and counts; space comes back as ops end"
  )
  func fullQueueRefusesTryAdd() {
    var h = SchedulerHarness()
    let queue = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setCapacity(2, of: queue, now: now, &e) }
    let first = [h.tryAdd("a", to: queue), h.tryAdd("b", to: queue), h.tryAdd("refused", to: queue)]
    #expect(first == [true, true, false])
    h.add("sync", to: queue)
    #expect(h.state("sync") == .ready)
    h.end("a")
    let whileFull = h.tryAdd("stillFull", to: queue)
    #expect(!whileFull, "b and sync are unfinished")
    h.end("b")
    let once = h.tryAdd("c", to: queue)
    #expect(once)
    #expect(h.runToCompletion() == ["sync", "c"])
  }

  @Test(
    "Capacity lines: submitters that wait are reported as waiting for capacity, holding nothing, and are added first come first served as space frees; one that stops waiting is skipped, and tryAdd never cuts the line"
  )
  func waitingSubmittersAreServedInOrder() {
    var h = SchedulerHarness()
    let queue = h.makeQueue(limit: 1)
    h.event { s, now, e in s.setCapacity(2, of: queue, now: now, &e) }
    let added = ["a", "b", "w1", "w2", "w3"].map { h.addWaitingForCapacity($0, to: queue) }
    #expect(added == [true, true, false, false, false])
    #expect(["w1", "w2", "w3"].allSatisfy { h.state($0) == .pending })
    #expect(Self.waitingOrder(h, in: queue) == ["b", "w1", "w2", "w3"])
    #expect(
      Self.waiting(h, in: queue) == ["b": [.slot], "w1": [.capacity], "w2": [.capacity], "w3": [.capacity]])
    let w2 = h.index("w2")
    h.event { s, _, e in s.stopWaitingForSpace(of: w2, in: queue, &e) }
    h.handleGone("w2")
    h.end("a")
    #expect(h.running == ["b"])
    #expect(h.state("w1") == .ready)
    #expect(Self.waitingOrder(h, in: queue) == ["w1", "w3"])
    #expect(Self.waiting(h, in: queue) == ["w1": [.slot], "w3": [.capacity]])
    let cutter = h.tryAdd("cutter", to: queue)
    #expect(!cutter)
    h.end("b")
    #expect(h.state("w3") == .ready)
    #expect(h.runToCompletion() == ["w1", "w3"])
  }

  // MARK: Tags

  @Test(
    "Cancel by tag, in slices: exactly the tagged ops are cancelled, waiting ones ended, the executing one asked to stop; untagged ones are untouched and run"
  )
  func cancelByTagInSlices() {
    var h = SchedulerHarness()
    h.scheduler.sliceLimit = 1
    h.continuesBulkAtOnce = false
    let queue = h.makeQueue(limit: 1)
    let tag = OperationTag("capability-rules-tag")
    let other = OperationTag("capability-rules-other-tag")
    h.add("t0", traits: [.tags(tag)], to: queue)
    h.add("u0", to: queue)
    h.add("t1", traits: [.tags(tag)], to: queue)
    h.add("o", traits: [.tags(other)], to: queue)
    h.add("t2", traits: [.tags(tag, other)], to: queue)
    h.add("u1", to: queue)
    #expect(h.running == ["t0"])
    h.event { s, now, e in s.cancelTagged(tag.id, in: queue, now: now, &e) }
    #expect(h.state("t2") == .ready, "the call is not done in its first slice")
    var slices = 1
    while h.continueBulk() { slices += 1 }
    #expect(slices >= 3)
    #expect(h.state("t1") == .cancelled && h.state("t2") == .cancelled)
    #expect(h.state("t0") == .executing && Self.isCancelled("t0", in: h))
    for name in ["u0", "o", "u1"] {
      #expect(h.state(name) == .ready && !Self.isCancelled(name, in: h), "\(name)")
    }
    #expect(Self.waitingOrder(h, in: queue) == ["u0", "o", "u1"])
    h.end("t0", with: .failure(CancellationError()))
    #expect(h.state("t0") == .cancelled)
    #expect(h.runToCompletion() == ["u0", "o", "u1"])
  }

  /// Known defect, left for the scheduler's consolidation: unlike `cancelAllOperations()`, a
  /// cancel by tag done in slices does not stop its queue's starts between them, so a tagged op
  /// waiting when the call began can start in between and then only be asked to stop, though the
  /// call's contract ends every waiting one before it returns. (On real queues: over 1,000 tagged
  /// ops, the default slice.) When the defect is fixed, this known issue stops appearing and the
  /// test fails: remove `withKnownIssue` then.
  @Test("A tagged op waiting when a cancel by tag began does not start between its slices")
  func cancelByTagHoldsItsQueueBetweenSlices() {
    var h = SchedulerHarness()
    h.scheduler.sliceLimit = 1
    h.continuesBulkAtOnce = false
    let queue = h.makeQueue(limit: 1)
    let tag = OperationTag("capability-rules-held-between-slices")
    h.add("u0", to: queue)
    for name in ["t1", "t2", "t3", "t4"] { h.add(name, traits: [.tags(tag)], to: queue) }
    #expect(h.running == ["u0"])
    h.event { s, now, e in s.cancelTagged(tag.id, in: queue, now: now, &e) }
    h.end("u0")  // between the call's first and second slices
    while h.continueBulk() {}
    withKnownIssue("cancel by tag lets its queue start a tagged op between slices") {
      #expect(["t1", "t2", "t3", "t4"].allSatisfy { h.state($0) == .cancelled })
      #expect(h.running.isEmpty)
    }
  }

  @Test(
    "Cancel by tag in one queue leaves the tag's ops of other queues; the call for every queue reaches them")
  func cancelByTagInOneQueueOrEvery() {
    var h = SchedulerHarness()
    let q1 = h.makeQueue()
    let q2 = h.makeQueue()
    for queue in [q1, q2] { h.event { s, now, e in s.setSuspended(true, of: queue, now: now, &e) } }
    let tag = OperationTag("capability-rules-every-queue")
    h.add("a1", traits: [.tags(tag)], to: q1)
    h.add("plain1", to: q1)
    h.add("a2", traits: [.tags(tag)], to: q2)
    h.add("plain2", to: q2)
    h.event { s, now, e in s.cancelTagged(tag.id, in: q1, now: now, &e) }
    #expect(h.state("a1") == .cancelled)
    #expect(h.state("a2") == .ready)
    h.event { s, now, e in s.cancelTagged(tag.id, in: nil, now: now, &e) }
    #expect(h.state("a2") == .cancelled)
    #expect(h.state("plain1") == .ready && h.state("plain2") == .ready)
    #expect(Self.waiting(h, in: q1) == ["plain1": [.suspended]])
    #expect(Self.waiting(h, in: q2) == ["plain2": [.suspended]])
  }
}

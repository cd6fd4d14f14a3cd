import ActorQueueTesting
import TestSupport
import Testing

@testable import ActorQueue

/// Rate limits (beyond.md §1.6 d), on manual clocks and gates: no test sleeps, and each instant
/// is exact.
@Suite("Rate limits", .timeLimit(.minutes(hangLimitMinutes)))
struct RateLimitTests {
  @Test(
    "Token bucket 10/s, burst 5: 5 start at once, then one every 100 ms exactly, also through one long advance"
  )
  func tokenBucketPaces() async {
    await #expect(processExitsWith: .success) { await Scenario.tokenBucketPaces() }
  }

  @Test("Sliding window 10/s: 25 operations start 10 at t0, 10 at 1 s, 5 at 2 s")
  func slidingWindow() async {
    await #expect(processExitsWith: .success) { await Scenario.slidingWindow() }
  }

  @Test(
    "A waiting head holds no slot and no worker; a suspended queue consumes nothing and resumes with the burst"
  )
  func waitingHoldsNothing() async {
    await #expect(processExitsWith: .success) { await Scenario.waitingHoldsNothing() }
  }

  @Test("Strict order: a head costing 3 with 2 permits holds back the cheaper operations behind it")
  func strictOrder() async {
    await #expect(processExitsWith: .success) { await Scenario.strictOrder() }
  }

  @Test("One limiter shared by two queues grants in the order of their heads")
  func sharedLimiterOrder() async {
    await #expect(processExitsWith: .success) { await Scenario.sharedLimiterOrder() }
  }

  @Test("penalize(for: 30 s): nothing starts before +30 s, then the burst")
  func penalty() async {
    await #expect(processExitsWith: .success) { await Scenario.penalty() }
  }

  @Test(
    "A cost above the burst ends the operation at once; so does a live change that makes a waiting cost impossible"
  )
  func impossibleCost() async {
    await #expect(processExitsWith: .success) { try await Scenario.impossibleCost() }
  }

  @Test("Cancelling the waiting head ends it at once, takes nothing, and the next head's timer is armed")
  func cancelWaitingHead() async {
    await #expect(processExitsWith: .success) { await Scenario.cancelWaitingHead() }
  }

  @Test("On the system clock, the timer task grants: every operation ends")
  func systemClockGrants() async {
    let queue = ActorQueue(name: "api")
    queue.rateLimiters = [.tokenBucket(permits: 1, per: .milliseconds(1), burst: 1)]
    // The burst starts one; each of the others waits for the timer task, not for an event.
    let operations = (0..<5).map { number in queue.addOperation(name: "op\(number)") {} }
    await queue.waitUntilAllOperationsAreFinished()
    #expect(operations.allSatisfy { $0.state == .finished })
  }

  @Test("Limit 2: never more than 2 execute; each attempt of a retried operation takes a permit")
  func limitAndRetry() async {
    await #expect(processExitsWith: .success) { try await Scenario.limitAndRetry() }
  }
}

/// The scenarios of the tests above, each run in a child process of its own: a queue with
/// limiters decides its starts by arbitration, which a call done in slices anywhere in the process
/// defers to its last slice, so another test's long `cancelAllOperations()` would move these
/// grants off the instants they check (as it did under the address sanitizer).
private enum Scenario {
  /// Operations that stay executing until `gate` opens.
  static func add(
    _ count: Int, to queue: ActorQueue, cost: Int? = nil, name: String = "op", gate: Gate
  ) -> [QueueOperation<Void>] {
    (0..<count).map { number in
      queue.addOperation(name: "\(name)\(number)", traits: cost.map { [.cost($0)] } ?? []) {
        await gate.wait()
      }
    }
  }

  static func started(_ operations: [QueueOperation<Void>]) -> Int {
    operations.filter { $0.state != .ready && $0.state != .pending }.count
  }

  /// The slots taken and the workers asked for in `queue` (a waiting head takes neither).
  static func slotsAndWorkers(_ queue: ActorQueue) -> (executing: Int, starting: Int) {
    let index = queue.index
    return Engine.read { ($0.queues[index].machine.executing, $0.queues[index].machine.startingWorkers) }
  }

  static func tokenBucketPaces() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "api", clock: clock.queueClock)
    queue.rateLimiters = [.tokenBucket(permits: 10, per: .seconds(1), burst: 5, clock: clock.queueClock)]
    let gate = Gate()
    let operations = add(20, to: queue, gate: gate)
    #expect(started(operations) == 5)
    clock.advance(by: .milliseconds(100) - .nanoseconds(1))
    #expect(started(operations) == 5)
    clock.advance(by: .nanoseconds(1))
    #expect(started(operations) == 6)
    clock.advance(by: .milliseconds(100))
    #expect(started(operations) == 7)
    // One advance of 800 ms grants at 300, 400, ..., 1,000 ms: 8 more (granted only at its
    // end, the bucket would give 5).
    clock.advance(by: .milliseconds(800))
    #expect(started(operations) == 15)
    // In order of submission.
    #expect(operations.prefix(15).allSatisfy { $0.state == .executing })
    #expect(queue.rateLimiters[0].availablePermits == 0)
    clock.advance(by: .seconds(1))
    #expect(started(operations) == 20)
    gate.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(operations.allSatisfy { $0.state == .finished })
  }

  static func slidingWindow() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "api", clock: clock.queueClock)
    queue.rateLimiters = [.slidingWindow(maxStarts: 10, per: .seconds(1), clock: clock.queueClock)]
    let gate = Gate()
    let operations = add(25, to: queue, gate: gate)
    #expect(started(operations) == 10)
    clock.advance(by: .seconds(1) - .nanoseconds(1))
    #expect(started(operations) == 10)
    clock.advance(by: .nanoseconds(1))
    #expect(started(operations) == 20)
    clock.advance(by: .seconds(1))
    #expect(started(operations) == 25)
    gate.open()
    await queue.waitUntilAllOperationsAreFinished()
  }

  static func waitingHoldsNothing() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "api", clock: clock.queueClock)
    let limiter = RateLimiter.tokenBucket(permits: 1, per: .seconds(1), burst: 2, clock: clock.queueClock)
    queue.rateLimiters = [limiter]
    let gate = Gate()
    let operations = add(3, to: queue, gate: gate)
    #expect(started(operations) == 2)
    #expect(operations[2].state == .ready)
    #expect(slotsAndWorkers(queue).executing == 2)
    gate.open()
    await operations[0].waitUntilFinished()
    await operations[1].waitUntilFinished()
    #expect(operations[2].state == .ready)
    #expect(slotsAndWorkers(queue) == (0, 0))

    queue.isSuspended = true
    let later = add(20, to: queue, gate: gate)
    clock.advance(by: .seconds(100))
    #expect(operations[2].state == .ready)
    #expect(limiter.availablePermits == 2)
    queue.isSuspended = false
    // The burst, not 100 seconds' worth.
    #expect(started([operations[2]] + later) == 2)
    // Then one a second: the 20th of them at +19 s.
    clock.advance(by: .seconds(19) - .nanoseconds(1))
    #expect(started(later) == 19)
    clock.advance(by: .nanoseconds(1))
    #expect(started(later) == 20)
    await queue.waitUntilAllOperationsAreFinished()
    #expect(later.allSatisfy { $0.state == .finished })
  }

  static func strictOrder() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "api", clock: clock.queueClock)
    queue.rateLimiters = [.tokenBucket(permits: 1, per: .seconds(1), burst: 3, clock: clock.queueClock)]
    let gate = Gate()
    let first = add(1, to: queue, gate: gate)
    let costly = add(1, to: queue, cost: 3, name: "costly", gate: gate)
    let cheap = add(3, to: queue, name: "cheap", gate: gate)
    let free = add(1, to: queue, cost: 0, name: "free", gate: gate)
    #expect(started(first) == 1)
    #expect(started(costly + cheap + free) == 0)
    // The wait report names the head's permits and their instant; those behind it wait in turn.
    let report = queue.waitReport()
    #expect(report.first { $0.id == costly[0].id }?.waitingFor == [.permits(until: clock.now + .seconds(1))])
    #expect(report.filter { $0.id != costly[0].id }.allSatisfy { $0.waitingFor == [.slot] })
    #expect(report.count == 5)
    #expect("\(report[0])".hasSuffix("ready: permits until \(clock.now + .seconds(1))"))
    clock.advance(by: .seconds(1) - .nanoseconds(1))
    #expect(started(costly + cheap + free) == 0)
    // The third permit: the costly head starts, then what follows it in turn.
    clock.advance(by: .nanoseconds(1))
    #expect(started(costly) == 1)
    #expect(started(cheap + free) == 0)
    clock.advance(by: .seconds(1))
    #expect(started(cheap) == 1)
    #expect(started(free) == 0)
    clock.advance(by: .seconds(2))
    #expect(started(cheap) == 3)
    #expect(started(free) == 1)
    gate.open()
    await queue.waitUntilAllOperationsAreFinished()
  }

  static func sharedLimiterOrder() async {
    let clock = ManualClock()
    let first = ActorQueue(name: "q1", clock: clock.queueClock)
    let second = ActorQueue(name: "q2", clock: clock.queueClock)
    let limiter = RateLimiter.tokenBucket(permits: 1, per: .seconds(1), burst: 1, clock: clock.queueClock)
    first.rateLimiters = [limiter]
    second.rateLimiters = [limiter]
    let gate = Gate()
    let a = add(1, to: first, name: "a", gate: gate)  // takes the burst
    let b = add(1, to: second, name: "b", gate: gate)
    let c = add(1, to: first, name: "c", gate: gate)
    let d = add(1, to: second, name: "d", gate: gate)
    #expect(started(a) == 1)
    var order: [String] = []
    for _ in 0..<3 {
      clock.advance(by: .seconds(1))
      for operation in b + c + d where operation.state == .executing && !order.contains(operation.name!) {
        order.append(operation.name!)
      }
    }
    #expect(order == ["b0", "c0", "d0"])
    gate.open()
    await first.waitUntilAllOperationsAreFinished()
    await second.waitUntilAllOperationsAreFinished()
  }

  static func penalty() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "api", clock: clock.queueClock)
    let limiter = RateLimiter.tokenBucket(permits: 10, per: .seconds(1), burst: 2, clock: clock.queueClock)
    queue.rateLimiters = [limiter]
    limiter.penalize(for: .seconds(30))
    #expect(limiter.availablePermits == 0)
    let gate = Gate()
    let operations = add(3, to: queue, gate: gate)
    clock.advance(by: .seconds(30) - .nanoseconds(1))
    #expect(started(operations) == 0)
    clock.advance(by: .nanoseconds(1))
    #expect(started(operations) == 2)
    clock.advance(by: .milliseconds(100))
    #expect(started(operations) == 3)
    gate.open()
    await queue.waitUntilAllOperationsAreFinished()
  }

  static func impossibleCost() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "api", clock: clock.queueClock)
    queue.rateLimiters = [.tokenBucket(permits: 1, per: .seconds(1), burst: 3, clock: clock.queueClock)]
    let gate = Gate()
    let tooMuch = add(1, to: queue, cost: 4, name: "tooMuch", gate: gate)[0]
    #expect(tooMuch.state == .failed)
    let error = try #require(await rateLimitError(of: tooMuch))
    #expect(error.cost == 4 && error.capacity == 3 && error.operationID == tooMuch.id)

    let blocker = add(1, to: queue, cost: 3, name: "blocker", gate: gate)[0]
    let waiting = add(1, to: queue, cost: 3, name: "waiting", gate: gate)[0]
    let small = add(1, to: queue, name: "small", gate: gate)[0]
    #expect(blocker.state == .executing && waiting.state == .ready)
    queue.rateLimiters = [.tokenBucket(permits: 1, per: .seconds(1), burst: 2, clock: clock.queueClock)]
    #expect(waiting.state == .failed)
    #expect(await rateLimitError(of: waiting)?.capacity == 2)
    #expect(small.state == .executing)
    gate.open()
    await queue.waitUntilAllOperationsAreFinished()
  }

  static func cancelWaitingHead() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "api", clock: clock.queueClock)
    let limiter = RateLimiter.tokenBucket(permits: 1, per: .seconds(1), burst: 3, clock: clock.queueClock)
    queue.rateLimiters = [limiter]
    let gate = Gate()
    let first = add(1, to: queue, cost: 2, name: "first", gate: gate)
    let costly = add(1, to: queue, cost: 3, name: "costly", gate: gate)[0]
    let next = add(1, to: queue, cost: 2, name: "next", gate: gate)[0]
    #expect(started(first) == 1)
    costly.cancel()
    #expect(costly.state == .cancelled)
    #expect(next.state == .ready)
    #expect(limiter.availablePermits == 1)
    clock.advance(by: .seconds(1))
    #expect(next.state == .executing)
    gate.open()
    await queue.waitUntilAllOperationsAreFinished()
  }

  static func limitAndRetry() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "api", maxConcurrentOperationCount: 2, clock: clock.queueClock)
    let limiter = RateLimiter.tokenBucket(permits: 100, per: .seconds(1), burst: 10, clock: clock.queueClock)
    queue.rateLimiters = [limiter]
    let gate = Gate()
    let operations = add(4, to: queue, gate: gate)
    #expect(started(operations) == 2)
    #expect(limiter.availablePermits == 8)
    let attempts = LockedValue(0)
    let retried = queue.addOperation(
      name: "retried", traits: [.retry(.attempts(3, backoff: .constant(.zero), jitter: .none))]
    ) {
      let attempt = attempts.withLock { count -> Int in
        count += 1
        return count
      }
      if attempt < 3 { throw RetryTestError() }
    }
    gate.open()
    try await retried.value
    await queue.waitUntilAllOperationsAreFinished()
    #expect(attempts.withLock { $0 } == 3)
    // 4 operations and 3 attempts, all at instant 0.
    #expect(limiter.availablePermits == 3)
    #expect(operations.allSatisfy { $0.state == .finished })
  }
}

private struct RetryTestError: Error {}

/// Reads an operation's error as the rate-limit error it must be.
private func rateLimitError(of operation: QueueOperation<some Sendable>) async -> RateLimitError? {
  await thrownError(RateLimitError.self, by: operation)
}

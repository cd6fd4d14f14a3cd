import ActorQueueTesting
import TestSupport
import Testing

@testable import ActorQueue

private struct AttemptError: Error, Equatable {
  let attempt: Int
}

/// The attempt the calling body runs (0 outside a retried operation's body).
private var attemptNumber: Int { ActorQueue.currentAttempt?.number ?? 0 }

/// Durations too large (or too far below zero) to represent in 64-bit nanoseconds saturate:
/// callers pass huge values to mean "no limit", and they must never wrap around into an instant
/// in the past (issue 59, item 2), nor trap. On a manual clock: no test sleeps.
@Suite("Duration saturation", .timeLimit(.minutes(hangLimitMinutes)))
struct DurationSaturationTests {
  /// A million seconds: far more than any test waits, far less than saturation.
  private static let longWhile = Duration.seconds(1_000_000)

  // MARK: The arithmetic

  @Test("Duration to nanoseconds saturates at both ends and keeps small values exact")
  func conversionSaturates() {
    #expect(Duration.seconds(Int64.max).wholeNanoseconds == Int64.max)
    #expect(Duration.seconds(10_000_000_000).wholeNanoseconds == Int64.max)
    #expect((Duration.seconds(Int64.max) + .seconds(Int64.max)).wholeNanoseconds == Int64.max)
    #expect(Duration.seconds(Int64.min).wholeNanoseconds == Int64.min)
    #expect(Duration.seconds(-10_000_000_000).wholeNanoseconds == Int64.min)
    #expect((Duration.seconds(Int64.min) + .seconds(Int64.min)).wholeNanoseconds == Int64.min)
    // The largest and smallest representable ones, exactly, and their neighbours.
    #expect(Duration.nanoseconds(Int64.max).wholeNanoseconds == Int64.max)
    #expect(Duration.nanoseconds(Int64.max - 1).wholeNanoseconds == Int64.max - 1)
    #expect(Duration.nanoseconds(Int64.min).wholeNanoseconds == Int64.min)
    #expect(Duration.nanoseconds(Int64.min + 1).wholeNanoseconds == Int64.min + 1)
    #expect(
      Duration(secondsComponent: 9_223_372_036, attosecondsComponent: 854_775_807_999_999_999)
        .wholeNanoseconds
        == Int64.max)
    // Below a nanosecond: rounded toward zero, either way.
    #expect(Duration(secondsComponent: 0, attosecondsComponent: 999_999_999).wholeNanoseconds == 0)
    #expect(Duration(secondsComponent: 0, attosecondsComponent: -999_999_999).wholeNanoseconds == 0)
    #expect(Duration(secondsComponent: 0, attosecondsComponent: 1_000_000_000).wholeNanoseconds == 1)
    #expect(Duration(secondsComponent: 0, attosecondsComponent: -1_000_000_001).wholeNanoseconds == -1)
    #expect(Duration.seconds(-1.5).wholeNanoseconds == -1_500_000_000)
  }

  @Test("Instants moved by huge durations saturate instead of wrapping")
  func instantsSaturate() {
    let instant = SchedulerInstant(nanoseconds: 5)
    #expect(instant.advanced(by: .seconds(Int64.max)).nanoseconds == Int64.max)
    #expect((instant + .seconds(10_000_000_000)).nanoseconds == Int64.max)
    #expect((instant - .seconds(Int64.min)).nanoseconds == Int64.max)
    let before = SchedulerInstant(nanoseconds: -5)
    #expect((before - .seconds(Int64.max)).nanoseconds == Int64.min)
    #expect((before + .seconds(Int64.min)).nanoseconds == Int64.min)
    #expect((before - .seconds(10_000_000_000)).nanoseconds == Int64.min)
    let first = SchedulerInstant(nanoseconds: Int64.min)
    let last = SchedulerInstant(nanoseconds: Int64.max)
    #expect(first.duration(to: last) == .nanoseconds(Int64.max))
    #expect(last.duration(to: first) == .nanoseconds(Int64.min))

    let clock = ManualClock()
    #expect((clock.now + .seconds(Int64.max)).nanoseconds == Int64.max)
    #expect(clock.queueClock.deadline(in: .seconds(10_000_000_000)).nanoseconds == Int64.max)
    clock.advance(by: .seconds(1))
    #expect((clock.now - .seconds(Int64.max) - .seconds(Int64.max)).nanoseconds == Int64.min)
    #expect((clock.now - .seconds(Int64.min)).nanoseconds == Int64.max)
    #expect((clock.now + .seconds(Int64.min) + .seconds(Int64.min)).nanoseconds == Int64.min)
    #expect(clock.queueClock.deadline(in: .seconds(-10_000_000_000)).nanoseconds == Int64.min + 1_000_000_000)
    let never = clock.now + .seconds(Int64.max)
    let past = clock.now + .seconds(Int64.min)
    #expect(never.nanoseconds == Int64.max && past.nanoseconds == Int64.min + 1_000_000_000)
    #expect(never > clock.now && past < clock.now)
    #expect(never.remaining == .nanoseconds(Int64.max - 1_000_000_000))
    #expect(past.remaining == .nanoseconds(Int64.min))
    #expect(past.duration(to: never) == .nanoseconds(Int64.max))
    #expect(never.duration(to: past) == .nanoseconds(Int64.min))
  }

  // MARK: Deadlines, timeouts, timed waits

  @Test(
    "A deadline too far to represent never passes: the operation runs and finishes",
    arguments: [Duration.seconds(10_000_000_000), .seconds(Int64.max)])
  func hugeDeadlineNeverPasses(duration: Duration) async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "far", clock: clock.queueClock)
    let started = Gate()
    let finish = Gate()
    let operation = queue.addOperation(traits: [.deadline(in: duration)]) { () async throws -> Int in
      started.open()
      await finish.wait()
      try Task.checkCancellation()
      return 42
    }
    try #require(operation.state != .failed, "the deadline passed at once")
    await started.wait()
    clock.advance(by: Self.longWhile)
    #expect(operation.state == .executing && !operation.isCancelled)
    finish.open()
    #expect(try await operation.value == 42)

    // The same instant given as an absolute deadline.
    let absolute = queue.addOperation(traits: [.deadline(clock.now + duration)]) { 7 }
    #expect(try await absolute.value == 7)
  }

  @Test("A deadline far below zero has passed: the operation ends at once and never runs")
  func hugeNegativeDeadlineHasPassed() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "past", clock: clock.queueClock)
    for duration in [Duration.seconds(-5), .seconds(-10_000_000_000), .seconds(Int64.min)] {
      let ran = Gate()
      let operation = queue.addOperation(traits: [.deadline(in: duration)]) { ran.open() }
      await operation.waitUntilFinished()
      #expect(operation.state == .failed, "deadline(in: \(duration))")
      #expect(await thrownError(OperationTimeoutError.self, by: operation)?.kind == .deadline)
      #expect(!ran.isOpen)
    }
  }

  @Test(
    "An execution timeout too long to represent never passes",
    arguments: [Duration.seconds(Int64.max), .seconds(10_000_000_000)])
  func hugeTimeoutNeverPasses(duration: Duration) async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "patient", clock: clock.queueClock)
    let started = Gate()
    let finish = Gate()
    let operation = queue.addOperation(traits: [.timeout(duration)]) { () async throws -> Int in
      started.open()
      await finish.wait()
      try Task.checkCancellation()
      return 42
    }
    await started.wait()
    clock.advance(by: .nanoseconds(1))
    clock.advance(by: Self.longWhile)
    #expect(operation.state == .executing && !operation.isCancelled)
    finish.open()
    #expect(try await operation.value == 42)
  }

  @Test("waitUntilFinished(timeout:) too long to represent waits for the end alone")
  func hugeTimedWait() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "waited", clock: clock.queueClock)
    let started = Gate()
    let finish = Gate()
    let running = queue.addOperation {
      started.open()
      await finish.wait()
      return 5
    }
    await started.wait()
    let waiter = Task { await running.waitUntilFinished(timeout: .seconds(Int64.max)) }
    while running.timedWaiterCount == 0 { await Task.yield() }
    clock.advance(by: .nanoseconds(1))
    clock.advance(by: Self.longWhile)
    #expect(running.timedWaiterCount == 1)
    finish.open()
    #expect(await waiter.value == true)
  }

  @Test("waitUntilFinished(timeout:) below zero returns at once, whatever its size")
  func negativeTimedWait() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "waited", clock: clock.queueClock)
    let started = Gate()
    let finish = Gate()
    let running = queue.addOperation {
      started.open()
      await finish.wait()
    }
    await started.wait()
    #expect(await running.waitUntilFinished(timeout: .seconds(-1)) == false)
    #expect(await running.waitUntilFinished(timeout: .seconds(Int64.min)) == false)
    #expect(running.timedWaiterCount == 0)
    finish.open()
    await running.waitUntilFinished()
    #expect(await running.waitUntilFinished(timeout: .seconds(Int64.min)) == true)
  }

  // MARK: Backoff

  @Test("A backoff too long to represent waits (until cancelled) instead of ending the retry")
  func hugeBackoffWaits() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "backoff", clock: clock.queueClock)
    let policies = [
      RetryPolicy.attempts(2, backoff: .constant(.seconds(Int64.max)), jitter: .none),
      .attempts(
        2, backoff: .exponential(initial: .seconds(Int64.max), maximum: .seconds(Int64.max)), jitter: .none),
      .attempts(2, backoff: .constant(.seconds(Int64.max)), jitter: .none, retryIf: { _ in true }),
      .custom(maxAttempts: 2) { _ in .retry(after: .seconds(Int64.max)) },
    ]
    // With no deadline, and with one that never comes either.
    for traits in [[], [OperationTrait.deadline(in: .seconds(Int64.max))]] {
      for policy in policies {
        let operation = queue.addOperation(traits: traits + [.retry(policy)]) { () -> Int in
          throw AttemptError(attempt: attemptNumber)
        }
        await clock.settle()
        #expect(operation.state == .pending, "\(policy), \(traits)")
        #expect(operation.attemptCount == 1)
        clock.advance(by: Self.longWhile)
        #expect(operation.state == .pending)
        operation.cancel()
        await operation.waitUntilFinished()
        #expect(operation.state == .cancelled)
      }
    }
  }

  @Test("A backoff too long to represent still stops before a deadline that does come")
  func hugeBackoffBeforeDeadline() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "backoff", clock: clock.queueClock)
    let policy = RetryPolicy.attempts(2, backoff: .constant(.seconds(Int64.max)), jitter: .none)
    let operation = queue.addOperation(traits: [.retry(policy), .deadline(in: .seconds(5))]) { () -> Int in
      throw AttemptError(attempt: attemptNumber)
    }
    await operation.waitUntilFinished()
    #expect(operation.state == .failed)
    #expect(operation.thrownError as? AttemptError == AttemptError(attempt: 1))
  }

  @Test("A custom policy sees no deadline as nil and a deadline that never comes as the longest time")
  func contextOfHugeDeadline() async {
    let clock = ManualClock()
    let queue = ActorQueue(name: "context", clock: clock.queueClock)
    let remaining = Recorder<Duration?>()
    let policy = RetryPolicy.custom(maxAttempts: 2) { context in
      remaining.append(context.timeUntilDeadline)
      return .retry(after: .zero)
    }
    let free = queue.addOperation(traits: [.retry(policy)]) { () -> Int in throw AttemptError(attempt: 1) }
    await free.waitUntilFinished()
    let far = queue.addOperation(traits: [.retry(policy), .deadline(in: .seconds(Int64.max))]) { () -> Int in
      throw AttemptError(attempt: 1)
    }
    await far.waitUntilFinished()
    #expect(remaining.snapshot == [nil, .nanoseconds(Int64.max)])
  }

  // MARK: A negative delay from a custom policy (issue 59, item 7)

  @Test("RetryDecision.retry(after:) below zero counts as zero")
  func negativeRetryDecisionIsZero() {
    #expect(RetryDecision.retry(after: .seconds(-1)) == .retry(after: .zero))
    #expect(RetryDecision.retry(after: .seconds(Int64.min)) == .retry(after: .zero))
    #expect(
      RetryDecision.retry(after: .seconds(-1)).description == RetryDecision.retry(after: .zero).description)
  }

  @Test("A custom policy that answers a negative delay retries at once, on a running queue")
  func negativeDelayRetriesAtOnce() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "negative", clock: clock.queueClock)
    let policy = RetryPolicy.custom(maxAttempts: 3) { context in
      .retry(after: .seconds(-Int64(context.attempt)))
    }
    let operation = queue.addOperation(traits: [.retry(policy)]) { () -> Int in
      guard attemptNumber == 3 else { throw AttemptError(attempt: attemptNumber) }
      return 3
    }
    // No clock advance: each retry is due at once.
    #expect(try await operation.value == 3)
    #expect(operation.attemptCount == 3)
  }

  @Test("A negative delay from a custom policy does not stop the program (exit test)")
  func negativeDelayDoesNotStop() async {
    await #expect(processExitsWith: .success) {
      let queue = ActorQueue(name: "negative")
      let policy = RetryPolicy.custom(maxAttempts: 2) { _ in .retry(after: .milliseconds(-5)) }
      let operation = queue.addOperation(traits: [.retry(policy)]) { () -> Int in
        guard attemptNumber == 2 else { throw AttemptError(attempt: attemptNumber) }
        return 2
      }
      let value = try? await operation.value
      precondition(value == 2, "the retried operation returned \(String(describing: value))")
    }
  }

  // MARK: The manual clock at the end of time

  @Test("ManualClock.advance(by:) too far stops at the last instant, where what never comes stays armed")
  func manualClockSaturates() async {
    await #expect(processExitsWith: .success) {
      let clock = ManualClock()
      let queue = ActorQueue(name: "end of time", clock: clock.queueClock)
      let finish = TestGate()
      let patient = queue.addOperation(traits: [.timeout(.seconds(Int64.max))]) { () async throws -> Int in
        await finish.wait()
        try Task.checkCancellation()
        return 1
      }
      let policy = RetryPolicy.attempts(2, backoff: .constant(.seconds(Int64.max)), jitter: .none)
      let backingOff = queue.addOperation(traits: [.retry(policy)]) { () -> Int in
        throw AttemptError(attempt: attemptNumber)
      }
      // The patient body waits at its gate, and the other waits out its backoff.
      await clock.settle()
      precondition(backingOff.state == .pending && backingOff.attemptCount == 1, "the retry ended at once")
      clock.advance(by: .seconds(Int64.max))
      precondition(clock.now.remaining == .zero)
      clock.advance(by: .seconds(1))
      clock.advance(to: clock.now + .seconds(Int64.max))
      precondition(patient.state == .executing && !patient.isCancelled, "the timeout that never comes fired")
      precondition(backingOff.state == .pending, "the backoff that never ends ended: \(backingOff.state)")
      finish.open()
      let value = try? await patient.value
      precondition(value == 1)
      backingOff.cancel()
      await backingOff.waitUntilFinished()
    }
  }
}

import ActorQueueTesting
import TestSupport
import Testing

@testable import ActorQueue

private struct AttemptError: Error, Equatable {
  let attempt: Int
}

/// The attempt the calling body runs (0 outside a retried operation's body).
private var attemptNumber: Int { ActorQueue.currentAttempt?.number ?? 0 }

/// The names of the operations that started, each start counted (a retried one starts again).
private func starts(in recorder: QueueRecorder) -> [String] {
  recorder.events.compactMap { event in
    if case .operation(_, let name, .executing) = event.kind { name ?? "?" } else { nil }
  }
}

/// Retry with backoff (beyond.md §1.1 d), on a manual clock: no test sleeps.
@Suite("Retry with backoff", .timeLimit(.minutes(hangLimitMinutes)))
struct RetryTests {
  private static let constant100ms = RetryPolicy.attempts(
    3, backoff: .constant(.milliseconds(100)), jitter: .none)

  @Test("Fails twice, then returns 42: one identity, three attempts, the events of each, one terminal state")
  func failsTwiceThenSucceeds() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "retry", clock: clock.queueClock)
    let recorder = QueueRecorder(queue)
    let seen = Recorder<Int>()
    let operation = queue.addOperation(name: "flaky", traits: [.retry(Self.constant100ms)]) { () -> Int in
      let attempt = try #require(ActorQueue.currentAttempt)
      seen.append(attempt.number)
      guard attempt.number == 3 else { throw AttemptError(attempt: attempt.number) }
      return 42
    }
    let id = operation.id
    await clock.settle()
    #expect(operation.state == .pending)
    #expect(operation.attemptCount == 1)
    clock.advance(by: .milliseconds(99))
    await clock.settle()
    #expect(operation.state == .pending)
    clock.advance(by: .milliseconds(1))
    await clock.settle()
    #expect(operation.attemptCount == 2)
    clock.advance(by: .milliseconds(100))
    #expect(try await operation.value == 42)
    #expect(operation.attemptCount == 3)
    #expect(operation.id == id)
    #expect(seen.snapshot == [1, 2, 3])
    #expect(
      story(of: operation, in: recorder) == [
        "ready", "executing", "pending", "retry after 1 at 100 ms",
        "ready", "executing", "pending", "retry after 2 at 200 ms",
        "ready", "executing", "finished",
      ])
    #expect(ActorQueue.currentAttempt == nil)
  }

  @Test(
    "Always fails: ends .failed with the last attempt's error, unwrapped; the policy is asked once per retry")
  func alwaysFails() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let contexts = Recorder<String>()
    let policy = RetryPolicy.custom(maxAttempts: 3) { context in
      let previous = context.previousErrors.map { "\(($0 as? AttemptError)?.attempt ?? -1)" }.joined(
        separator: ",")
      contexts.append(
        "\(context.attempt) [\(previous)] \(context.elapsed) \(context.timeUntilDeadline == nil)")
      return .retry(after: .seconds(1))
    }
    let operation = queue.addOperation(traits: [.retry(policy)]) { () -> Int in
      throw AttemptError(attempt: attemptNumber)
    }
    await clock.settle()
    clock.advance(by: .seconds(1))
    await clock.settle()
    clock.advance(by: .seconds(1))
    await operation.waitUntilFinished()
    #expect(operation.state == .failed)
    #expect(operation.attemptCount == 3)
    #expect(operation.thrownError as? AttemptError == AttemptError(attempt: 3))
    do {
      _ = try await operation.value
      Issue.record("a failed operation returned a value")
    } catch let error as AttemptError {
      #expect(error.attempt == 3)  // the body's own error: `catch AttemptError` works
    }
    #expect(contexts.snapshot == ["1 [] 0.0 seconds true", "2 [1] 1.0 seconds true"])
  }

  @Test(
    "A backoff holds no slot: at limit 1 the next operation starts at once; the retry needs time and a slot")
  func backoffHoldsNoSlot() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let recorder = QueueRecorder(queue)
    let policy = RetryPolicy.attempts(2, backoff: .constant(.seconds(10)), jitter: .none)
    let a = queue.addOperation(name: "A", traits: [.retry(policy)]) { () -> Int in
      if attemptNumber == 1 { throw AttemptError(attempt: 1) }
      return 1
    }
    let b = queue.addOperation(name: "B") { 2 }
    #expect(try await b.value == 2)
    #expect(a.state == .pending)
    let hold = TestGate()
    let c = queue.addOperation(name: "C") { await hold.wait() }
    await clock.settle()
    #expect(c.state == .executing)
    clock.advance(by: .seconds(10))
    await clock.settle()
    #expect(a.state == .ready)  // its time came, but the one slot is C's
    hold.open()
    #expect(try await a.value == 1)
    #expect(starts(in: recorder) == ["A", "B", "C", "A"])
    #expect(recorder.maxConcurrency(in: queue) == 1)
  }

  @Test("A retried operation competes with its original submission order, below a higher priority")
  func reentryKeepsItsOrder() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let recorder = QueueRecorder(queue)
    let policy = RetryPolicy.attempts(2, backoff: .constant(.seconds(1)), jitter: .none)
    let hold = TestGate()
    let a = queue.addOperation(name: "A", traits: [.retry(policy)]) {
      if attemptNumber == 1 { throw AttemptError(attempt: 1) }
    }
    queue.addOperation(name: "C") { await hold.wait() }
    let d = queue.addOperation(name: "D") {}
    await clock.settle()
    #expect(a.state == .pending && d.state == .ready)
    clock.advance(by: .seconds(1))
    #expect(a.state == .ready)
    let e = queue.addOperation(name: "E", priority: .high) {}
    hold.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(a.state == .finished && e.state == .finished)
    // A was submitted before D: it starts first; E's higher priority comes before both.
    #expect(starts(in: recorder) == ["A", "C", "E", "A", "D"])
  }

  @Test("cancel() during a backoff ends it at once, handlers first; the timer then does nothing")
  func cancelDuringBackoff() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let recorder = QueueRecorder(queue)
    let handled = Recorder<String>()
    let operation = queue.addOperation(traits: [.retry(Self.constant100ms)]) { () -> Int in
      throw AttemptError(attempt: attemptNumber)
    }
    operation.onCompletion { _ in handled.append("handler") }
    await clock.settle()
    #expect(operation.state == .pending)
    operation.cancel()
    #expect(operation.state == .cancelled)
    #expect(handled.snapshot == ["handler"])
    let seen = recorder.events.count
    clock.advance(by: .seconds(1))
    await clock.settle()
    #expect(recorder.events.count == seen)
    #expect(operation.attemptCount == 1)
  }

  @Test(
    "cancel() during an attempt, or a body that throws CancellationError: no further attempt, no decision")
  func cancellationDuringAnAttemptStops() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let decisions = Recorder<Int>()
    let policy = RetryPolicy.custom(maxAttempts: 5) { context in
      decisions.append(context.attempt)
      return .retry(after: .zero)
    }
    let started = TestGate()
    let release = TestGate()
    let cancelled = queue.addOperation(traits: [.retry(policy)]) { () -> Int in
      started.open()
      await release.wait()
      throw AttemptError(attempt: attemptNumber)  // ignores its cancellation, throws another error
    }
    await started.wait()
    cancelled.cancel()
    release.open()
    await cancelled.waitUntilFinished()
    #expect(cancelled.state == .cancelled)
    #expect(cancelled.attemptCount == 1)

    let throwsCancellation = queue.addOperation(traits: [.retry(policy)]) { () -> Int in
      throw CancellationError()
    }
    await throwsCancellation.waitUntilFinished()
    #expect(throwsCancellation.state == .cancelled)
    #expect(throwsCancellation.attemptCount == 1)
    #expect(decisions.snapshot.isEmpty)
  }

  @Test(
    "retryIf false stops after the first error; a zero delay still goes through the ready set and the limit")
  func predicateAndZeroDelay() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let recorder = QueueRecorder(queue)
    let never = RetryPolicy.attempts(5, backoff: .constant(.zero), jitter: .none) { _ in false }
    let stopped = queue.addOperation(name: "stopped", traits: [.retry(never)]) { () -> Int in
      throw AttemptError(attempt: attemptNumber)
    }
    await stopped.waitUntilFinished()
    #expect(stopped.attemptCount == 1)
    #expect(stopped.thrownError as? AttemptError == AttemptError(attempt: 1))

    let once = RetryPolicy.attempts(2, backoff: .constant(.zero), jitter: .none) { $0 is AttemptError }
    let retried = queue.addOperation(name: "retried", traits: [.retry(once)]) { () -> Int in
      if attemptNumber == 1 { throw AttemptError(attempt: 1) }
      return 7
    }
    let other = queue.addOperation(name: "other") { 8 }
    #expect(try await retried.value == 7)
    #expect(try await other.value == 8)
    // Back in the ready set behind nothing of higher order: it runs again before "other", as a
    // new start, and never beside it.
    #expect(starts(in: recorder) == ["stopped", "retried", "retried", "other"])
    #expect(recorder.maxConcurrency(in: queue) == 1)
    #expect(
      story(of: retried, in: recorder) == [
        "ready", "executing", "pending", "retry after 1 at 0 ms", "ready", "executing", "finished",
      ])
  }

  @Test("A next attempt that could not start before the deadline is not waited for: the last error ends it")
  func backoffPastTheDeadlineStops() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let remaining = Recorder<Duration?>()
    let policy = RetryPolicy.custom(maxAttempts: 5) { context in
      remaining.append(context.timeUntilDeadline)
      return .retry(after: .seconds(10))
    }
    let operation = queue.addOperation(traits: [.retry(policy), .deadline(in: .seconds(5))]) { () -> Int in
      throw AttemptError(attempt: attemptNumber)
    }
    await operation.waitUntilFinished()
    #expect(operation.state == .failed)
    #expect(operation.thrownError as? AttemptError == AttemptError(attempt: 1))
    #expect(remaining.snapshot == [.seconds(5)])
  }

  @Test("A deadline that passes while a retry waits fails the operation with OperationTimeoutError")
  func deadlineDuringBackoff() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let policy = RetryPolicy.attempts(5, backoff: .constant(.seconds(10)), jitter: .none)
    let operation = queue.addOperation(traits: [.deadline(in: .seconds(5)), .retry(policy)]) { () -> Int in
      throw AttemptError(attempt: attemptNumber)
    }
    // A backoff of 10 s from 0 would end after the deadline: stopped at once.
    await operation.waitUntilFinished()
    #expect(operation.thrownError as? AttemptError == AttemptError(attempt: 1))

    // A backoff that ends before the deadline, then a wait (here a pause) that does not.
    let later = queue.addOperation(traits: [.deadline(in: .seconds(15)), .retry(policy)]) { () -> Int in
      throw AttemptError(attempt: attemptNumber)
    }
    await clock.settle()
    #expect(later.state == .pending)
    later.pause()
    clock.advance(by: .seconds(14))
    await clock.settle()
    #expect(later.state == .pending)
    clock.advance(by: .seconds(1))
    #expect(later.state == .failed)
    do {
      _ = try await later.value
    } catch let error as OperationTimeoutError {
      #expect(error.kind == .deadline)
      #expect(error.hadStarted)
    }
    #expect(later.attemptCount == 1)
  }

  @Test(
    "An attempt past its execution timeout: a value still finishes it; a throw is retried on a fresh task")
  func timedOutAttempt() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let errors = Recorder<String>()
    let policy = RetryPolicy.custom(maxAttempts: 3) { context in
      errors.append("\((context.error as? OperationTimeoutError)?.kind.description ?? "\(context.error)")")
      return .retry(after: .zero)
    }
    let started = TestGate()
    let returns = queue.addOperation(traits: [.retry(policy), .timeout(.seconds(1))]) { () -> Int in
      started.open()
      await untilCancelled()
      return attemptNumber
    }
    await started.wait()
    clock.advance(by: .seconds(1))
    #expect(try await returns.value == 1)
    #expect(returns.attemptCount == 1)

    let firstStarted = TestGate()
    let cancelledFlags = Recorder<Bool>()
    let throwing = queue.addOperation(traits: [.retry(policy), .timeout(.seconds(1))]) { () -> Int in
      cancelledFlags.append(Task.isCancelled)
      guard attemptNumber == 1 else { return attemptNumber }
      firstStarted.open()
      await untilCancelled()
      throw AttemptError(attempt: 1)
    }
    await firstStarted.wait()
    clock.advance(by: .seconds(1))
    #expect(try await throwing.value == 2)
    #expect(errors.snapshot == ["executionTimeout"])
    #expect(cancelledFlags.snapshot == [false, false])

    // The CancellationError its own timeout causes is that timeout, and is retried too.
    let sleeperStarted = TestGate()
    let sleeper = queue.addOperation(traits: [.retry(policy), .timeout(.seconds(1))]) { () -> Int in
      guard attemptNumber == 1 else { return attemptNumber }
      sleeperStarted.open()
      await untilCancelled()
      try Task.checkCancellation()
      return 0
    }
    await sleeperStarted.wait()
    clock.advance(by: .seconds(1))
    #expect(try await sleeper.value == 2)
    #expect(errors.snapshot == ["executionTimeout", "executionTimeout"])
  }

  @Test("Backoff arithmetic saturates at the maximum: 10,000 failures never trap")
  func backoffSaturates() {
    let exponential = Backoff.exponential(initial: .milliseconds(1), factor: 1_000, maximum: .seconds(30))
    let linear = Backoff.linear(
      initial: .seconds(1), increment: .seconds(1_000_000_000), maximum: .seconds(60))
    let huge = Backoff.exponential(initial: .seconds(1), factor: Int.max, maximum: .seconds(Int64.max))
    var previous: Int64 = 0
    for attempt in 1...10_000 {
      #expect(exponential.delay(afterAttempt: attempt, previous: 0, jitter: .none) <= 30_000_000_000)
      #expect(linear.delay(afterAttempt: attempt, previous: 0, jitter: .none) <= 60_000_000_000)
      #expect(huge.delay(afterAttempt: attempt, previous: 0, jitter: .none) > 0)
      previous = Backoff.decorrelated(base: .seconds(1), maximum: .seconds(20))
        .delay(afterAttempt: attempt, previous: previous, jitter: .none)
      #expect((1_000_000_000...20_000_000_000).contains(previous))
    }
    #expect(exponential.delay(afterAttempt: 2, previous: 0, jitter: .none) == 1_000_000_000)
    #expect(exponential.delay(afterAttempt: 10_000, previous: 0, jitter: .none) == 30_000_000_000)
    #expect(linear.delay(afterAttempt: Int.max, previous: 0, jitter: .none) == 60_000_000_000)
    let flat = Backoff.exponential(initial: .seconds(1), factor: 1, maximum: .seconds(5))
    #expect(flat.delay(afterAttempt: Int.max, previous: 0, jitter: .none) == 1_000_000_000)
    #expect(
      Backoff.linear(initial: .zero, increment: .seconds(1), maximum: .seconds(5))
        .delay(afterAttempt: 3, previous: 0, jitter: .none) == 2_000_000_000)
  }

  @Test("Seeded jitter is reproducible; a zero-width range draws its one value")
  func jitter() {
    let backoff = Backoff.exponential(initial: .milliseconds(100), factor: 2, maximum: .seconds(10))
    func draws(_ jitter: Jitter) -> [Int64] {
      (1...20).map { backoff.delay(afterAttempt: $0, previous: 0, jitter: jitter) }
    }
    let first = draws(.full(using: SeededGenerator(seed: 7)))
    #expect(first == draws(.full(using: SeededGenerator(seed: 7))))
    #expect(first != draws(.full(using: SeededGenerator(seed: 8))))
    for (attempt, delay) in first.enumerated() {
      #expect((0...backoff.delay(afterAttempt: attempt + 1, previous: 0, jitter: .none)).contains(delay))
    }
    let equal = draws(.equal(using: SeededGenerator(seed: 7)))
    for (attempt, delay) in equal.enumerated() {
      let full = backoff.delay(afterAttempt: attempt + 1, previous: 0, jitter: .none)
      #expect((full / 2...full).contains(delay))
    }
    for jitter in [Jitter.full, .equal, .none, .full(using: SeededGenerator(seed: 1))] {
      #expect(Backoff.constant(.zero).delay(afterAttempt: 1, previous: 0, jitter: jitter) == 0)
      #expect(
        (0...1).contains(
          Backoff.constant(.nanoseconds(1)).delay(afterAttempt: 1, previous: 0, jitter: jitter)))
    }
    let decorrelated = Backoff.decorrelated(base: .seconds(1), maximum: .seconds(1))
    #expect(decorrelated.delay(afterAttempt: 4, previous: 1_000_000_000, jitter: .full) == 1_000_000_000)
  }

  @Test("A .success dependent waits through the retries and fails with the last attempt's error")
  func dependentsWaitThroughRetries() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let policy = RetryPolicy.attempts(2, backoff: .constant(.seconds(1)), jitter: .none)
    let source = queue.addOperation(name: "source") { "input" }
    let reads = Recorder<String>()
    let flaky = queue.addOperation(name: "flaky", traits: [.retry(policy)], after: source) { input -> Int in
      reads.append(input)
      throw AttemptError(attempt: attemptNumber)
    }
    let dependent = QueueOperation<Int>(name: "dependent") { 1 }
    try dependent.addDependency(flaky, requiring: .success)
    try queue.addOperation(dependent)
    await clock.settle()
    #expect(flaky.state == .pending && dependent.state == .pending)
    clock.advance(by: .seconds(1))
    await dependent.waitUntilFinished()
    #expect(dependent.state == .failed)
    do {
      _ = try await dependent.value
    } catch let error as DependencyFailedError {
      #expect(error.underlyingError as? AttemptError == AttemptError(attempt: 2))
    }
    #expect(reads.snapshot == ["input", "input"])
  }

  @Test("Coalesced work retries with the creating call's policy; its callers show .pending, and end alone")
  func coalescedWorkRetries() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let policy = RetryPolicy.attempts(2, backoff: .constant(.seconds(1)), jitter: .none)
    let runs = Recorder<Int>()
    let first = queue.addOperation(traits: [.retry(policy)], coalescingBy: "key") { () -> Int in
      runs.append(attemptNumber)
      if attemptNumber == 1 { throw AttemptError(attempt: 1) }
      return 5
    }
    await clock.settle()
    let second = queue.addOperation(coalescingBy: "key") { () -> Int in 99 }
    let third = queue.addOperation(coalescingBy: "key") { () -> Int in 99 }
    #expect(first.state == .pending && second.state == .pending && third.state == .pending)
    second.cancel()
    #expect(second.state == .cancelled)
    #expect(first.state == .pending && third.state == .pending)
    clock.advance(by: .seconds(1))
    #expect(try await first.value == 5)
    #expect(try await third.value == 5)
    #expect(first.attemptCount == 2 && third.attemptCount == 2)
    #expect(runs.snapshot == [1, 2])
  }

  @Test("pause() during a backoff holds the operation past its timer, until resume()")
  func pauseDuringBackoff() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let policy = RetryPolicy.attempts(2, backoff: .constant(.seconds(1)), jitter: .none)
    let operation = queue.addOperation(traits: [.retry(policy)]) { () -> Int in
      if attemptNumber == 1 { throw AttemptError(attempt: 1) }
      return 3
    }
    await clock.settle()
    operation.pause()
    clock.advance(by: .seconds(1))
    await clock.settle()
    #expect(operation.state == .pending)
    #expect(operation.isPaused)
    operation.resume()
    #expect(try await operation.value == 3)
    #expect(operation.attemptCount == 2)
  }

  @Test("The body is released at the operation's final end, not before")
  func bodyReleasedAtTheEnd() async throws {
    final class Captured: Sendable {}
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let policy = RetryPolicy.attempts(2, backoff: .constant(.seconds(1)), jitter: .none)
    weak var weakCaptured: Captured?
    let operation: QueueOperation<Int>
    do {
      let captured = Captured()
      weakCaptured = captured
      operation = queue.addOperation(traits: [.retry(policy)]) { () -> Int in
        _ = captured
        throw AttemptError(attempt: attemptNumber)
      }
    }
    await clock.settle()
    #expect(weakCaptured != nil)  // kept through the backoff, for the next attempt
    clock.advance(by: .seconds(1))
    await operation.waitUntilFinished()
    #expect(weakCaptured == nil)
  }

  @Test("Without .retry a handle counts one attempt once started; prepared operations take the trait too")
  func attemptCountWithoutRetry() async throws {
    let queue = ActorQueue()
    let plain = QueueOperation<Int> { 1 }
    #expect(plain.attemptCount == 0)
    try queue.addOperation(plain)
    _ = try await plain.value
    #expect(plain.attemptCount == 1)
    #expect(ActorQueue.currentAttempt == nil)

    let policy = RetryPolicy.attempts(3, backoff: .constant(.zero), jitter: .none)
    let prepared = QueueOperation<Int>(traits: [.retry(policy)]) {
      if attemptNumber < 3 { throw AttemptError(attempt: attemptNumber) }
      return attemptNumber
    }
    try queue.addOperation(prepared)
    #expect(try await prepared.value == 3)
  }

  @Test("A prepared operation dropped before it is added releases its retry policy's closures at once")
  func droppedPreparedReleasesPolicy() {
    final class Captured: Sendable {}
    // Made in a function, so that no local of this one keeps the captured object alive.
    func dropPrepared() -> WeakReference<Captured> {
      let captured = Captured()
      let policy = RetryPolicy.custom(maxAttempts: 2) { _ in
        _ = captured
        return .stop
      }
      _ = QueueOperation(traits: [.retry(policy)]) {}
      return WeakReference(captured)
    }
    let captured = dropPrepared()
    #expect(captured.isFreed)
  }
}

public import ActorQueue

/// A clock that moves only when a test moves it: give a queue its ``queueClock`` and its
/// deadlines and timeouts fire exactly when ``advance(by:)`` passes them, on the thread that
/// calls it, with no sleeping and no timing margins.
///
/// ```swift
/// let clock = ManualClock()
/// let queue = ActorQueue(maxConcurrentOperationCount: 1, clock: clock.queueClock)
/// let waiting = queue.addOperation(traits: [.deadline(in: .seconds(5))]) { 42 }
/// clock.advance(by: .seconds(5))   // waiting ended .failed before this returned
/// ```
///
/// It is a `Clock` too: code under test that takes a clock can be given this one, and a body that
/// sleeps on it (`try await clock.sleep(for: .seconds(2))`) wakes when ``advance(by:)`` passes
/// the instant, and counts as still for ``settle(timeout:sourceLocation:)`` meanwhile.
///
/// Each manual clock is its own: tests with their own clocks run in parallel without touching
/// each other. For test targets (`ActorQueueTesting` is not meant to ship in an app).
public final class ManualClock: Clock, Sendable {
  /// Durations are Swift's.
  public typealias Duration = Swift.Duration
  /// Its instants are its queue clock's deadlines: `clock.now + .seconds(5)` is a deadline an
  /// operation of its queues can be given.
  public typealias Instant = QueueDeadline

  private struct Sleeper: Sendable {
    let token: UInt64
    let deadline: QueueDeadline
    let continuation: CheckedContinuation<Void, any Error>
    /// The operation whose body sleeps, parked for `settle()` while it does.
    let operation: OperationID?
  }

  private struct Sleepers: Sendable {
    var waiting: [Sleeper] = []
    var nextToken: UInt64 = 0
  }

  /// What to pass as a queue's `clock:`.
  public let queueClock: QueueClock
  private let sleepers = LockedValue(Sleepers())

  /// A new clock at instant zero.
  public init() {
    queueClock = QueueClock.makeManual()
  }

  /// The current instant.
  public var now: QueueDeadline { queueClock.now }

  /// One nanosecond: the clock counts in whole nanoseconds.
  public var minimumResolution: Duration { .nanoseconds(1) }

  /// Moves the clock `duration` forward. Every timer due by then fires, in instant order, each
  /// with the clock at its instant, before this returns: operations whose deadline passed have
  /// ended (their completion handlers have run and their waiters are resumed), and the tasks of
  /// those that were executing are cancelled; tasks sleeping on this clock until then are
  /// resumed, each once the clock is at its instant. A `duration` too long to represent moves
  /// the clock to the last instant, where timers that never come stay armed. A negative
  /// `duration` stops the program with a message, in every build configuration.
  public func advance(by duration: Duration) {
    guard duration >= .zero else {
      fatalError(
        "ManualClock.advance(by: \(duration)): a clock cannot go back; pass a duration of zero or more")
    }
    advance(to: now + duration)
  }

  /// Moves the clock to `instant`, as ``advance(by:)``. An instant of another clock, or one
  /// earlier than ``now``, stops the program with a message, in every build configuration.
  public func advance(to instant: QueueDeadline) {
    guard instant.clock == queueClock else {
      fatalError(
        "ManualClock.advance(to: \(instant)): the instant is of another clock than this one (\(queueClock)); "
          + "make it with this clock's now + duration")
    }
    let current = now
    guard instant >= current else {
      fatalError(
        "ManualClock.advance(to: \(instant)): the instant is earlier than the clock's now (\(current)); "
          + "a clock cannot go back: pass an instant at or after now")
    }
    // Stops at each sleeper's instant on the way, so that it wakes after the timers due before
    // it and before those due after.
    while let next = sleepers.withLock({ $0.waiting.map(\.deadline).filter { $0 <= instant }.min() }) {
      if next > now { queueClock.advanceManual(to: next) }
      wake(dueBy: next)
    }
    queueClock.advanceManual(to: instant)
    // A sleeper that arrived while the clock moved, due by now.
    wake(dueBy: instant)
  }

  /// Suspends until the clock reaches `deadline` (at once if it has), as `Task.sleep` does on a
  /// real clock; `tolerance` is ignored: a manual clock is exact. An instant of another clock
  /// stops the program with a message, in every build configuration.
  ///
  /// - Throws: `CancellationError` if the task is cancelled before (or while) it sleeps.
  public func sleep(until deadline: QueueDeadline, tolerance: Duration? = nil) async throws {
    guard deadline.clock == queueClock else {
      fatalError(
        "ManualClock.sleep(until: \(deadline)): the instant is of another clock than this one (\(queueClock)); "
          + "make it with this clock's now + duration")
    }
    try Task.checkCancellation()
    guard deadline > now else { return }
    let operation = ActorQueue.currentOperationID
    let token = sleepers.withLock { state in
      state.nextToken += 1
      return state.nextToken
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        let sleeps = sleepers.withLock { state in
          // Cancelled, or the clock passed it, between the checks above and now.
          guard !Task.isCancelled, deadline > queueClock.now else { return false }
          state.waiting.append(
            Sleeper(token: token, deadline: deadline, continuation: continuation, operation: operation))
          if let operation { Parking.park(operation) }
          return true
        }
        if !sleeps {
          if Task.isCancelled {
            continuation.resume(throwing: CancellationError())
          } else {
            continuation.resume()
          }
        }
      }
    } onCancel: {
      let cancelled = sleepers.withLock { state -> Sleeper? in
        guard let index = state.waiting.firstIndex(where: { $0.token == token }) else { return nil }
        return state.waiting.remove(at: index)
      }
      if let cancelled {
        if let operation = cancelled.operation { Parking.unpark(operation) }
        cancelled.continuation.resume(throwing: CancellationError())
      }
    }
  }

  /// Tasks sleeping on this clock now (for tests of the kit).
  package var sleeperCount: Int { sleepers.withLock { $0.waiting.count } }

  /// Resumes the sleepers due by `instant`, in instant order, then arrival order.
  private func wake(dueBy instant: QueueDeadline) {
    let due = sleepers.withLock { state -> [Sleeper] in
      let due = state.waiting.filter { $0.deadline <= instant }
      state.waiting.removeAll { $0.deadline <= instant }
      return due.sorted { ($0.deadline, $0.token) < ($1.deadline, $1.token) }
    }
    // Unparked before they are resumed, so that settle() never sees a body about to move as still.
    for sleeper in due {
      if let operation = sleeper.operation { Parking.unpark(operation) }
    }
    for sleeper in due { sleeper.continuation.resume() }
  }
}

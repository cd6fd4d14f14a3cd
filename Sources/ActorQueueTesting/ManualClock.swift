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
/// Each manual clock is its own: tests with their own clocks run in parallel without touching
/// each other. For test targets (`ActorQueueTesting` is not meant to ship in an app).
public final class ManualClock: Sendable {
  /// What to pass as a queue's `clock:`.
  public let queueClock: QueueClock

  /// A new clock at instant zero.
  public init() {
    queueClock = QueueClock.makeManual()
  }

  /// The current instant.
  public var now: QueueDeadline { queueClock.now }

  /// Moves the clock `duration` forward. Every timer due by then fires, in instant order, each
  /// with the clock at its instant, before this returns: operations whose deadline passed have
  /// ended (their completion handlers have run and their waiters are resumed), and the tasks of
  /// those that were executing are cancelled. `duration` must not be negative.
  public func advance(by duration: Duration) {
    precondition(duration >= .zero, "ManualClock.advance(by: \(duration)): a clock cannot go back")
    queueClock.advanceManual(to: now + duration)
  }

  /// Moves the clock to `instant` (of this clock, not earlier than now), as ``advance(by:)``.
  public func advance(to instant: QueueDeadline) {
    precondition(instant.clock == queueClock, "ManualClock.advance(to:): \(instant) is of another clock")
    queueClock.advanceManual(to: instant)
  }
}

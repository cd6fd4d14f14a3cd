import Synchronization

/// The clock a queue measures deadlines and timeouts on: ``system`` unless the queue was created
/// with another (a test's manual clock, from the `ActorQueueTesting` library).
///
/// Each queue has one, fixed when it is created (``ActorQueue/clock``); a ``QueueDeadline`` is
/// an instant of one clock and is refused by a queue of another. The system clock is the
/// system's monotonic clock (`CLOCK_MONOTONIC`): on Apple platforms it counts the time the device
/// sleeps, on Linux it does not, so a deadline 10 minutes away on a laptop that sleeps for an
/// hour fires at once on waking on a Mac and 10 minutes after waking on Linux.
///
/// Foundation has no equivalent: an `Operation` has no deadline, and timeouts are written by
/// hand around it (`DispatchQueue.asyncAfter` that cancels, ProcedureKit's `TimeoutObserver`).
public struct QueueClock: Sendable, Hashable, CustomStringConvertible {
  /// 0: the system clock; otherwise a manual clock's number, unique in the process.
  package let id: UInt64

  package init(id: UInt64) {
    self.id = id
  }

  /// The system's monotonic clock, which every queue uses unless told otherwise.
  public static let system = QueueClock(id: 0)

  /// Whether this is the system clock (otherwise a test's manual clock).
  public var isSystem: Bool { id == 0 }

  /// The instant `duration` from now on this clock. A duration too long to represent in 64-bit
  /// nanoseconds (about 292 years) gives an instant that never comes, and one too far below zero
  /// an instant long past: neither wraps around. Cost: one read of the system's clock, or for a
  /// manual clock one short hold of the scheduler's lock.
  public func deadline(in duration: Duration) -> QueueDeadline {
    QueueDeadline(clock: self, nanoseconds: SaturatingTime.adding(nowNanoseconds, duration.wholeNanoseconds))
  }

  /// The current instant of this clock, as a deadline that has just passed.
  public var now: QueueDeadline { QueueDeadline(clock: self, nanoseconds: nowNanoseconds) }

  var nowNanoseconds: Int64 {
    if id == 0 { return SchedulerInstant.now().nanoseconds }
    return Engine.read { $0.manualNow(of: id) }
  }

  /// `system`, or `manual #n`.
  public var description: String { id == 0 ? "system" : "manual #\(id)" }

  private static let nextManual = Atomic<UInt64>(0)

  /// A new manual clock, at instant zero, whose time moves only by ``Scheduler/advance``: for
  /// the `ActorQueueTesting` library's `ManualClock`.
  package static func makeManual() -> QueueClock {
    let clock = QueueClock(id: nextManual.add(1, ordering: .relaxed).newValue)
    Engine.mutate { $0.registerManualClock(clock.id) }
    return clock
  }
}

/// An instant of one ``QueueClock``: when an operation's deadline falls.
///
/// Made by ``QueueClock/deadline(in:)`` or ``ActorQueue/deadline(in:)``, and moved with `+`
/// and `-`, which saturate (a duration too long to represent gives an instant that never comes).
/// Two deadlines compare only on the same clock (comparing those of two clocks stops the program
/// with a message, in every build configuration).
public struct QueueDeadline: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// The clock this is an instant of.
  public let clock: QueueClock
  /// Nanoseconds since the clock's origin (the system's boot, or a manual clock's creation).
  package let nanoseconds: Int64

  package init(clock: QueueClock, nanoseconds: Int64) {
    self.clock = clock
    self.nanoseconds = nanoseconds
  }

  /// Whether `lhs` comes before `rhs`; both must be of the same clock.
  public static func < (lhs: QueueDeadline, rhs: QueueDeadline) -> Bool {
    guard lhs.clock == rhs.clock else {
      fatalError(
        "ActorQueue: compared deadlines of two clocks (\(lhs.clock) and \(rhs.clock)); "
          + "make both with the same queue's or clock's deadline(in:)")
    }
    return lhs.nanoseconds < rhs.nanoseconds
  }

  /// The deadline `duration` later, saturating: past the last representable instant it is one
  /// that never comes, and before the first one long past (it never wraps around).
  public static func + (deadline: QueueDeadline, duration: Duration) -> QueueDeadline {
    QueueDeadline(
      clock: deadline.clock,
      nanoseconds: SaturatingTime.adding(deadline.nanoseconds, duration.wholeNanoseconds))
  }

  /// The deadline `duration` earlier, saturating as ``+(_:_:)`` does.
  public static func - (deadline: QueueDeadline, duration: Duration) -> QueueDeadline {
    QueueDeadline(
      clock: deadline.clock,
      nanoseconds: SaturatingTime.subtracting(deadline.nanoseconds, duration.wholeNanoseconds))
  }

  /// The time from now until this deadline on its clock (negative once it has passed),
  /// saturating at the largest and smallest 64-bit count of nanoseconds.
  public var remaining: Duration {
    .nanoseconds(SaturatingTime.subtracting(nanoseconds, clock.nowNanoseconds))
  }

  /// `12.500000000s (system)`.
  public var description: String {
    let seconds = Double(nanoseconds) / 1_000_000_000
    return "\(seconds)s (\(clock))"
  }
}

/// An instant a `Clock` can count in: `ActorQueueTesting`'s `ManualClock` is a `Clock` whose
/// instants are its queue clock's deadlines, so a body can sleep on it.
extension QueueDeadline: InstantProtocol {
  /// The instant `duration` later (``+(_:_:)``).
  public func advanced(by duration: Duration) -> QueueDeadline { self + duration }

  /// The time from this instant to `other`, of the same clock, saturating at the largest and
  /// smallest 64-bit count of nanoseconds (of two clocks: refused with a message in every build
  /// configuration, as comparing them is).
  public func duration(to other: QueueDeadline) -> Duration {
    guard clock == other.clock else {
      fatalError(
        "ActorQueue: measured the time between deadlines of two clocks (\(clock) and \(other.clock)); "
          + "make both with the same queue's or clock's deadline(in:)")
    }
    return .nanoseconds(SaturatingTime.subtracting(other.nanoseconds, nanoseconds))
  }
}

extension QueueClock {
  /// Moves a manual clock to `instant`, firing what is due (`ActorQueueTesting`'s `ManualClock`).
  package func advanceManual(to instant: QueueDeadline) {
    precondition(!isSystem, "Internal inconsistency: only a manual clock can be advanced")
    // Each stop at a permit timer's instant is an event of its own (see `advanceManualClock`).
    while Engine.run({ $0.advanceManualClock(id, to: instant.nanoseconds, now: Engine.now, &$1) }) {}
  }
}

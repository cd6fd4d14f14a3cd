#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Android)
  import Android
#else
  #error("ActorQueue needs clock_gettime on this platform")
#endif

/// An instant of the scheduler's clock: nanoseconds of the system's monotonic clock
/// (`CLOCK_MONOTONIC`, which does not jump with the wall clock), as a plain integer. Every
/// decision of the scheduler value that depends on time takes one as "now" (tests pass their
/// own); ``now()`` reads the real one.
///
/// Why not `ContinuousClock.Instant`: an idle queue's start reads the clock (the linger policy
/// measures how long the queue was idle), and that start is what a queue fed from time to time
/// pays on every operation, with cold caches and cold address translations. `ContinuousClock`
/// reads the time through the runtime (`swift_get_time`) and builds a `Duration`; the policy's
/// arithmetic on it is 128-bit and out of line (both types are resilient), in further pages of the
/// standard library; a `clock_gettime` and integer arithmetic touch far less (the Performance
/// article has the figures). The layout is also fixed (an `Int64`), so records and worker steps hold one
/// without value-witness calls, which a resilient `ContinuousClock.Instant` costs them.
struct SchedulerInstant: Comparable, Hashable, Sendable {
  /// Nanoseconds since the clock's fixed origin (the system's boot, on Linux and Darwin).
  var nanoseconds: Int64

  /// The current instant. Cost: one `clock_gettime` (no system call where the system provides
  /// the time in user space, as Linux and Darwin do).
  @inline(__always)
  static func now() -> SchedulerInstant {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return SchedulerInstant(nanoseconds: Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec))
  }

  static func < (lhs: SchedulerInstant, rhs: SchedulerInstant) -> Bool {
    lhs.nanoseconds < rhs.nanoseconds
  }

  /// The time from `self` to `other` (saturating, as ``SaturatingTime`` does).
  func duration(to other: SchedulerInstant) -> Duration {
    .nanoseconds(SaturatingTime.subtracting(other.nanoseconds, nanoseconds))
  }

  /// `self` moved by `duration` (to the nanosecond), saturating: a duration too long to
  /// represent ends at ``SaturatingTime/never``.
  func advanced(by duration: Duration) -> SchedulerInstant {
    SchedulerInstant(nanoseconds: SaturatingTime.adding(nanoseconds, duration.wholeNanoseconds))
  }

  static func + (instant: SchedulerInstant, duration: Duration) -> SchedulerInstant {
    instant.advanced(by: duration)
  }

  static func - (instant: SchedulerInstant, duration: Duration) -> SchedulerInstant {
    SchedulerInstant(nanoseconds: SaturatingTime.subtracting(instant.nanoseconds, duration.wholeNanoseconds))
  }

  static func += (instant: inout SchedulerInstant, duration: Duration) {
    instant = instant.advanced(by: duration)
  }
}

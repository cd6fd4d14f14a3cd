/// Time in 64-bit nanoseconds, saturating: the one place the library turns a `Duration` into
/// nanoseconds and moves an instant by a duration. A value too large (or too small) to
/// represent becomes `Int64.max` (`Int64.min`) instead of wrapping around, so a huge duration,
/// which callers pass to mean "no limit", is an instant that never comes, never one in the past.
///
/// An instant at ``never`` never fires: a timer armed for it waits for ever (the system clock's
/// timer task sleeps until it is replaced; a manual clock moved as far skips it). Whether an
/// operation has a deadline at all is said by an optional, never by this value.
enum SaturatingTime {
  /// The instant a duration too long to represent ends at: it never comes.
  static let never = Int64.max

  /// `duration` in whole nanoseconds, rounded toward zero, saturating at `Int64.max` and
  /// `Int64.min` (a `Duration` spans far more, and its `components` trap beyond `Int64` seconds).
  @inline(__always)
  static func nanoseconds(_ duration: Duration) -> Int64 {
    if duration >= .nanoseconds(Int64.max) { return .max }
    if duration <= .nanoseconds(Int64.min) { return .min }
    // Inside the bounds the two components have the sign of the whole and the sum fits.
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
  }

  /// `instant` moved by `nanoseconds` (either may be negative), saturating at both ends.
  @inline(__always)
  static func adding(_ instant: Int64, _ nanoseconds: Int64) -> Int64 {
    let (sum, overflow) = instant.addingReportingOverflow(nanoseconds)
    guard overflow else { return sum }
    return nanoseconds < 0 ? .min : .max
  }

  /// `instant` moved back by `nanoseconds`, or the time from `nanoseconds` to `instant` when
  /// both are instants, saturating at both ends.
  @inline(__always)
  static func subtracting(_ instant: Int64, _ nanoseconds: Int64) -> Int64 {
    let (difference, overflow) = instant.subtractingReportingOverflow(nanoseconds)
    guard overflow else { return difference }
    return nanoseconds < 0 ? .max : .min
  }
}

extension Duration {
  /// The duration in whole nanoseconds (rounded toward zero), saturating at `Int64.max` and
  /// `Int64.min`: ``SaturatingTime/nanoseconds(_:)``.
  var wholeNanoseconds: Int64 { SaturatingTime.nanoseconds(self) }
}

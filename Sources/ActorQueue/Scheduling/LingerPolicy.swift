/// When a worker whose queue went idle should linger instead of ending: a value, fed the
/// lengths of the queue's idle spells, that learns whether lingering pays.
///
/// Starting an operation on an idle queue means waking a thread of the pool, and a thread that
/// has gone to sleep takes tens of microseconds to wake (measured on the bench's two-core
/// virtual machine: 40–100 µs add→start for a bare `Task.detached`, against 3 µs when a thread
/// is still running). A worker that lingers keeps its thread running for at most ``window``,
/// yielding to other work between polls, and starts the next operation at once if it arrives
/// meanwhile. Lingering costs CPU time when nothing arrives, so a queue lingers only while its
/// last idle spell was shorter than half the window: work came back quickly and will most
/// likely come back within the window again. A queue fed from time to time (the usual app
/// case) never lingers; one fed back to back (a request/response loop, a pipeline stage)
/// starts each operation without a wake-up. At most one worker in the process lingers at a
/// time (`Engine.State.lingeringWorkers`).
struct LingerPolicy {
  /// How long a worker lingers at most: about what the wake-up it saves costs, so that a
  /// linger that goes unused costs about as much as it would have saved (spin, then block, as
  /// adaptive locks do).
  static let window: Duration = .microseconds(100)

  /// Half the window, computed once (a `Duration` division is 128-bit arithmetic).
  static let halfWindow: Duration = window / 2

  /// When the queue went idle with no worker lingering; `nil` once work arrived.
  private var idleSince: FixedInstant?
  /// Whether the next worker to find the queue idle should linger.
  private(set) var lingerPays = false

  /// The last worker ended with the queue idle, at `now`, without lingering.
  mutating func wentIdle(at now: ContinuousClock.Instant) {
    idleSince = FixedInstant(now)
  }

  /// An operation was made ready on an idle queue with no worker lingering, at `now`.
  mutating func workArrived(at now: ContinuousClock.Instant) {
    guard let idleSince else { return }
    observe(idleSpell: now - idleSince.instant)
  }

  /// The queue was idle for `idleSpell`: measured by a lingering worker that found work after
  /// that long (or the whole window when none came), or by ``workArrived(at:)``.
  mutating func observe(idleSpell: Duration) {
    idleSince = nil
    lingerPays = idleSpell < Self.halfWindow
  }
}

/// An instant of `ContinuousClock` with a layout known at compile time: its distance from a
/// fixed instant of the process, a `Duration`.
///
/// `ContinuousClock.Instant` is a resilient type, whose layout is known only at run time: a
/// scheduling record or worker step that holds one is copied, tested and switched over through
/// value-witness calls (measured: a worker step holding one made the switch over it a runtime
/// call per operation, and a queue record holding one slowed every access to the records).
struct FixedInstant: Sendable {
  /// The instant all others are measured from, taken once.
  private static let epoch = ContinuousClock.now

  private let sinceEpoch: Duration

  init(_ instant: ContinuousClock.Instant) {
    sinceEpoch = Self.epoch.duration(to: instant)
  }

  var instant: ContinuousClock.Instant { Self.epoch + sinceEpoch }
}

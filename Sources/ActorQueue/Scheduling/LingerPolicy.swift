/// When a worker whose queue went idle should linger instead of ending: a value, fed the
/// lengths of the queue's idle spells, that learns whether lingering pays.
///
/// Starting an operation on an idle queue means waking a thread of the pool, and a thread that
/// has gone to sleep takes tens of microseconds to wake, a running one a few (the Performance
/// article has the figures). A worker that lingers keeps its thread running for at most ``window``,
/// yielding to other work between polls, and starts the next operation at once if it arrives
/// meanwhile. Lingering costs CPU time when nothing arrives, so a queue lingers only while its
/// last idle spell was shorter than half the window: work came back quickly and will most
/// likely come back within the window again. A queue fed from time to time (the usual app
/// case) never lingers; one fed back to back (a request/response loop, a pipeline stage)
/// starts each operation without a wake-up. At most one worker in the process lingers at a
/// time (`Scheduler.lingeringWorkers`).
struct LingerPolicy {
  /// How long a worker lingers at most: about what the wake-up it saves costs, so that a
  /// linger that goes unused costs about as much as it would have saved (spin, then block, as
  /// adaptive locks do).
  static let window: Duration = .nanoseconds(windowNanoseconds)
  /// ``window`` in nanoseconds: what the decisions compare (integer arithmetic, see
  /// ``SchedulerInstant``).
  static let windowNanoseconds: Int64 = 100_000

  /// When the queue went idle with no worker lingering; `nil` once work arrived.
  private var idleSince: SchedulerInstant?
  /// Whether the next worker to find the queue idle should linger.
  private(set) var lingerPays = false

  /// The last worker ended with the queue idle, at `now`, without lingering.
  mutating func wentIdle(at now: SchedulerInstant) {
    idleSince = now
  }

  /// An operation was made ready on an idle queue with no worker lingering, at `now`.
  mutating func workArrived(at now: SchedulerInstant) {
    guard let idleSince else { return }
    observe(idleSpellNanoseconds: now.nanoseconds &- idleSince.nanoseconds)
  }

  /// The queue was idle for `idleSpell`: measured by a lingering worker that found work after
  /// that long (or the whole window when none came), or by ``workArrived(at:)``.
  mutating func observe(idleSpellNanoseconds idleSpell: Int64) {
    idleSince = nil
    lingerPays = idleSpell < Self.windowNanoseconds / 2
  }

  /// ``observe(idleSpellNanoseconds:)`` given a `Duration`.
  mutating func observe(idleSpell: Duration) {
    observe(idleSpellNanoseconds: idleSpell.wholeNanoseconds)
  }
}

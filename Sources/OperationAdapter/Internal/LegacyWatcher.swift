import Foundation

/// Something the watcher polls: a legacy operation whose handle waits in an ActorQueue.
protocol LegacyWatched: AnyObject, Sendable {
  /// Reads the legacy operation's state and passes on what changed; `false` when there is
  /// nothing left to watch (the handle started, ended or is gone).
  func poll() -> Bool
}

/// Notices changes a legacy operation makes to itself while its handle waits: `cancel()` called
/// by legacy code, an overridden `isReady` becoming `true`, a new `queuePriority`.
///
/// Why polling: Foundation tells nobody but the operation's own `OperationQueue` about these
/// changes. On Linux, swift-corelibs-foundation has no key-value observing at all (a
/// `didChangeValue(forKey:)` reaches only the queue the operation is in, and a wrapped operation
/// is in none); on Darwin KVO would tell, but one mechanism that works on both platforms is
/// simpler to trust. Dependencies finishing are not polled for: Foundation's dependency
/// mechanism tells the adapter at once (`LegacyRuntime.whenFinished`).
///
/// One thread of the adapter's (not the Swift cooperative pool's, so a saturated pool cannot
/// delay it) reads every watched operation every ``interval`` while any is watched, and sleeps
/// on a condition when none is. A change is noticed within ``interval`` plus one pass over the
/// watched operations; the pause between passes grows with the pass's own duration so that the
/// watcher never takes more than about 1/``maximumDutyFraction`` of one core however many
/// operations wait (10,000 waiting: a pass of about 1 ms, so one pass every 20 ms).
///
/// `@unchecked Sendable`: every mutable field is read and written only while `condition` is
/// locked.
final class LegacyWatcher: @unchecked Sendable {
  static let shared = LegacyWatcher()

  /// The pause between two passes while anything is watched.
  static let interval: TimeInterval = 0.001
  /// The pause is at least this many times the duration of the pass before it.
  static let maximumDutyFraction: Double = 20

  private let condition = NSCondition()
  /// Operations added since the last pass.
  private var added: [any LegacyWatched] = []
  /// Operations being watched, outside `added` (owned by the watcher thread between passes,
  /// counted here for ``count``).
  private var watchedCount = 0
  private var started = false

  private init() {}

  /// Starts watching `watched` until its ``LegacyWatched/poll()`` returns `false`. Cost: an
  /// array append under a lock; the thread is woken only if it was idle.
  func watch(_ watched: any LegacyWatched) {
    condition.lock()
    added.append(watched)
    let start = !started
    started = true
    if !start && added.count == 1 && watchedCount == 0 { condition.signal() }
    condition.unlock()
    if start {
      let thread = Thread { [self] in run() }
      thread.name = "OperationAdapter.watcher"
      thread.start()
    }
  }

  /// How many operations are watched now (tests and diagnostics).
  var count: Int {
    condition.lock()
    defer { condition.unlock() }
    return watchedCount + added.count
  }

  private func run() {
    var watching: [any LegacyWatched] = []
    while true {
      condition.lock()
      watchedCount = watching.count
      while watching.isEmpty && added.isEmpty { condition.wait() }
      watching += added
      added.removeAll(keepingCapacity: true)
      watchedCount = watching.count
      condition.unlock()

      let passStart = DispatchTime.now().uptimeNanoseconds
      watching.removeAll { !$0.poll() }
      let pass = Double(DispatchTime.now().uptimeNanoseconds - passStart) / 1e9
      if !watching.isEmpty {
        Thread.sleep(forTimeInterval: max(Self.interval, pass * Self.maximumDutyFraction))
      }
    }
  }
}

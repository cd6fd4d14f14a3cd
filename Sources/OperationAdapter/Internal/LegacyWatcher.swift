import Foundation

/// Something the watcher polls: a legacy operation whose handle waits in an ActorQueue.
protocol LegacyWatched: AnyObject, Sendable {
  /// Reads the legacy operation's state and passes on what changed.
  func poll() -> LegacyPoll
}

/// What one poll found.
enum LegacyPoll {
  /// Nothing changed; keep watching.
  case unchanged
  /// Something changed and was passed on; keep watching.
  case changed
  /// Nothing left to watch (the handle started, ended or is gone).
  case done
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
/// delay it) reads every watched operation, pausing between passes, and sleeps on a condition
/// when none is watched. The pause is ``interval`` after a pass that found a change or a new
/// operation, and doubles after each quiet pass up to ``longestInterval``: a change is noticed
/// within ``longestInterval`` plus one pass (about 1 ms just after a change, 4 ms at most
/// while fewer than a few thousand operations wait). The pause is also at least
/// ``maximumDutyFraction`` times the pass's own duration, to keep the watcher to a small share
/// of one core however many operations wait, but never more than ``longestDutyPause``: a pass
/// is timed on the wall clock, and one that only looked long (its thread was preempted) must not
/// leave every watched operation unnoticed for twenty times as long. None watched: nothing (the
/// thread sleeps).
///
/// `@unchecked Sendable`: every mutable field is read and written only while `condition` is
/// locked.
final class LegacyWatcher: @unchecked Sendable {
  static let shared = LegacyWatcher()

  /// The pause after a pass that found a change (or a newly watched operation).
  static let interval: TimeInterval = 0.001
  /// The longest pause between two passes while anything is watched.
  static let longestInterval: TimeInterval = 0.004
  /// The pause is at least this many times the duration of the pass before it...
  static let maximumDutyFraction: Double = 20
  /// ...up to this long.
  static let longestDutyPause: TimeInterval = 0.05

  /// The pause after a pass of `pass` seconds; `backoff` is the pause that pass's outcome
  /// calls for (``interval`` after a change, doubled after a quiet pass).
  static func pause(afterPassOf pass: TimeInterval, backoff: TimeInterval) -> TimeInterval {
    max(backoff, min(pass * maximumDutyFraction, longestDutyPause))
  }

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
    var pause = Self.interval
    while true {
      condition.lock()
      watchedCount = watching.count
      while watching.isEmpty && added.isEmpty { condition.wait() }
      if !added.isEmpty { pause = Self.interval }
      watching += added
      added.removeAll(keepingCapacity: true)
      watchedCount = watching.count
      condition.unlock()

      let passStart = DispatchTime.now().uptimeNanoseconds
      var changed = false
      watching.removeAll { watched in
        switch watched.poll() {
        case .unchanged: return false
        case .changed:
          changed = true
          return false
        case .done: return true
        }
      }
      let pass = Double(DispatchTime.now().uptimeNanoseconds - passStart) / 1e9
      pause = changed ? Self.interval : min(pause * 2, Self.longestInterval)
      if !watching.isEmpty {
        Thread.sleep(forTimeInterval: Self.pause(afterPassOf: pass, backoff: pause))
      }
    }
  }
}

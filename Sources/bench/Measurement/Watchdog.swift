import Dispatch
import Foundation
import Synchronization

/// How long the bench waits before it calls a scenario stuck: far beyond any measured time, so
/// that only a wait that would never end trips them.
enum Bounds {
  /// One sample: one op's start, stamp or end (each takes micro- to milliseconds).
  static let sample: Duration = .seconds(30)
  /// One system's run of one scenario, or one probe run (the longest take seconds: the rate
  /// scenario's 10 s backlog, OperationQueue's chain of 4,000).
  static let trial: Duration = .seconds(120)
  /// A whole `--count` workload, which Scripts/instructions.sh runs under callgrind (tens of
  /// times slower than a plain run).
  static let counted: Duration = .seconds(1_800)
}

/// Ends the bench, with a message naming the scenario, when a run outlasts its bound: a stuck
/// scenario fails instead of hanging.
///
/// The driver arms it before each run with what that run is; a thread of its own checks the
/// deadline every second, so it also catches blocking calls that have no timeout
/// (OperationQueue's waits, a child process).
enum Watchdog {
  private struct Armed {
    var what: String
    var deadline: Instant
  }

  private static let scenario = Mutex<String>("setup")
  private static let armed = Mutex<Armed?>(nil)
  private static let thread = Mutex<Thread?>(nil)

  /// Names the scenario now running, for the failure message.
  static func enter(scenario name: String) { scenario.withLock { $0 = name } }

  /// From now on, `what` must end within `bound` (until the next `arm` or `disarm`).
  static func arm(_ what: String, within bound: Duration = Bounds.trial) {
    armed.withLock { $0 = Armed(what: what, deadline: now() + bound) }
    thread.withLock { thread in
      guard thread == nil else { return }
      let watcher = Thread { watch() }
      watcher.name = "bench watchdog"
      watcher.start()
      thread = watcher
    }
  }

  /// Nothing to watch any more (the table and files are written without waits).
  static func disarm() { armed.withLock { $0 = nil } }

  /// Reports the scenario as stuck on stderr and exits with status 1.
  static func fail(_ message: String) -> Never {
    let name = scenario.withLock { $0 }
    Progress.report("error: bench: scenario \(name) is stuck: \(message)")
    exit(1)
  }

  private static func watch() {
    while true {
      Thread.sleep(forTimeInterval: 1)
      guard let overdue = armed.withLock({ $0 }), now() > overdue.deadline else { continue }
      fail("\(overdue.what) did not end within its bound")
    }
  }
}

extension DispatchSemaphore {
  /// Waits for a signal at most `bound`; `false` if it did not come.
  func wait(atMost bound: Duration) -> Bool {
    wait(timeout: .now() + bound.dispatch) == .success
  }

  /// Waits for `what` at most `bound`; a signal that does not come means a stuck scenario.
  func wait(for what: @autoclosure () -> String, atMost bound: Duration = Bounds.sample) {
    guard wait(atMost: bound) else { Watchdog.fail("waited \(Format.duration(bound.seconds)) for \(what())") }
  }
}

extension DispatchGroup {
  /// Waits for `what` at most `bound`; a group that does not empty means a stuck scenario.
  func wait(for what: @autoclosure () -> String, atMost bound: Duration = Bounds.trial) {
    guard wait(timeout: .now() + bound.dispatch) == .success else {
      Watchdog.fail("waited \(Format.duration(bound.seconds)) for \(what())")
    }
  }
}

import ActorQueue
import Foundation
import Testing

/// What a child process of the reliability suite reports through its exit code: an exit test's
/// condition can then match every outcome (`.failure`), and the parent classifies it itself.
enum ChildExit {
  /// Every script passed (never 0: see ``expectAnyExit``).
  static let passed: Int32 = 3
  /// A script broke an invariant or disagreed with the reference model.
  static let failed: Int32 = 4
  /// The watchdog fired: a deadlock or a wait that never ended.
  static let hung: Int32 = 86

  static func describe(_ status: ExitStatus) -> String {
    switch status {
    case .exitCode(passed): "passed"
    case .exitCode(failed): "failed (model or invariant)"
    case .exitCode(hung): "hung (watchdog fired: deadlock?)"
    case .exitCode(let code): "exited with code \(code)"
    case .signal(let signal): "crashed (signal \(signal))"
    @unknown default: "\(status)"
    }
  }
}

/// Writes to standard error at once (unbuffered): a child may die right after.
func childLog(_ message: String) {
  var line = message + "\n"
  line.withUTF8 { buffer in
    var offset = 0
    while offset < buffer.count {
      let written = write(2, buffer.baseAddress! + offset, buffer.count - offset)
      if written <= 0 { return }
      offset += written
    }
  }
}

/// What the child was waiting for when its watchdog fired, and what led there: lines the
/// watchdog logs after its own. Called on the watchdog's thread, so it must not take the
/// scheduler's lock (a deadlock may hold it).
let watchdogDiagnosis = LockedValue<(@Sendable () -> [String])?>(nil)

/// A watchdog inside a child process: a plain thread (not a task, so a stopped cooperative pool or
/// a held scheduler lock cannot stop it) that exits with ``ChildExit/hung`` when
/// ``reliabilityHeartbeat`` has not moved for `stallSeconds`, so a deadlock shows as a failure
/// instead of a hung test run.
func startWatchdog(stallSeconds: Double, _ what: String) {
  let thread = Thread {
    var last = reliabilityHeartbeat.load(ordering: .relaxed)
    var still = 0.0
    while true {
      Thread.sleep(forTimeInterval: 0.1)
      let now = reliabilityHeartbeat.load(ordering: .relaxed)
      if now != last {
        last = now
        still = 0
        continue
      }
      still += 0.1
      if still >= stallSeconds {
        let detail = watchdogDiagnosis.withLock { $0 }?() ?? []
        childLog(
          (["WATCHDOG: \(what) made no progress for \(stallSeconds) s (deadlock or lost wake-up)"]
            + detail.map { "  | \($0)" }).joined(separator: "\n"))
        _exit(ChildExit.hung)
      }
    }
  }
  thread.start()
}

/// Reads an integer setting from the environment.
/// The seed of a random run: `ACTORQUEUE_RANDOM_SEED`, or a fresh one (the runs print it).
func runSeed() -> UInt64 {
  if let text = ProcessInfo.processInfo.environment["ACTORQUEUE_RANDOM_SEED"], let value = UInt64(text) {
    return value
  }
  return UInt64.random(in: 1...UInt64(UInt32.max))
}

func environmentInt(_ name: String, default value: Int) -> Int {
  guard let text = ProcessInfo.processInfo.environment[name], let number = Int(text) else { return value }
  return number
}

/// True when `ACTORQUEUE_STRESS=full`: the stress tests run at full size.
var fullStress: Bool { ProcessInfo.processInfo.environment["ACTORQUEUE_STRESS"] == "full" }

/// Peak resident memory of this process in KiB (VmHWM), where the platform reports it.
func peakResidentKiB() -> Int? {
  #if os(Linux)
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
      return Int(line.split(separator: " ").dropFirst().first ?? "")
    }
    return nil
  #else
    return nil
  #endif
}

/// A watchdog for a single-scenario child: exits with ``ChildExit/hung`` after `seconds`, whatever
/// the process is doing (a deadlocked scheduler lock included).
func startDeadline(seconds: Double, _ what: String) {
  let thread = Thread {
    Thread.sleep(forTimeInterval: seconds)
    childLog("WATCHDOG: \(what) did not finish within \(seconds) s (deadlock?)")
    _exit(ChildExit.hung)
  }
  thread.start()
}

import Foundation

/// How far the searching tests go. `swift test` (a debug build) runs them quick, so that the
/// whole suite ends in minutes; a release build with assertions kept (README's deep run, a step
/// of `.ci/run`) runs them deep. `ACTORQUEUE_DEPTH=quick` or `deep` chooses either way, and a
/// count's own variable (`ACTORQUEUE_VALUE_SCRIPTS`, say) wins over both.
enum SearchDepth {
  static let isDeep: Bool = {
    switch ProcessInfo.processInfo.environment["ACTORQUEUE_DEPTH"] {
    case "quick": return false
    case "deep": return true
    default:
      #if DEBUG
        return false
      #else
        return true
      #endif
    }
  }()

  /// `quick` or `deep`, as the build and `ACTORQUEUE_DEPTH` say.
  static func size(quick: Int, deep: Int) -> Int { isDeep ? deep : quick }

  /// A count set by `variable`, else `quick` or `deep`.
  static func count(_ variable: String, quick: Int, deep: Int) -> Int {
    environmentInt(variable, default: size(quick: quick, deep: deep))
  }
}

/// The suites whose tests search (seeded random scripts against a model, stress at scale) are
/// nested here, so that their identifiers say so: `swift test --skip Searching` is the quick
/// loop, and `--filter Searching` in a release build with assertions is the deep run.
enum Searching {}

/// A line of progress for a person watching a long test: on standard error, at once, so that it
/// shows even when the output goes through a pipe.
func progress(_ message: String) { childLog(message) }

/// The time since `start`, for a person: "12.3 s".
func seconds(since start: ContinuousClock.Instant) -> String {
  let elapsed = start.duration(to: .now).components
  return String(format: "%.1f s", Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
}

/// Runs `body`, which never suspends, on a thread of its own (8 MiB of stack) and returns what
/// it returns: a long computation then leaves the cooperative pool's threads to the other tests.
func onThreadOfItsOwn<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
  await withCheckedContinuation { continuation in
    let thread = Thread { continuation.resume(returning: body()) }
    thread.stackSize = 8 << 20
    thread.start()
  }
}

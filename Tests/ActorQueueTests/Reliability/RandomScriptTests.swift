import Foundation
import Testing

/// The model-based random tester on real queues.
///
/// - `ACTORQUEUE_RANDOM_SCRIPTS`: scripts per run (default 500 in a debug build, about 20 s on 2
///   cores; 5,000 in a release build with assertions, the deep run: see ``SearchDepth``). They
///   run in child processes of 100 (500 deep) each, and a line after each batch shows progress.
/// - `ACTORQUEUE_RANDOM_SEED`: the run's seed (default: a fresh one, printed). Script `i` of a run
///   has seed `SplitMix64.scriptSeed(run:index:)`, printed with any failure.
/// - `ACTORQUEUE_RANDOM_REPLAY`: one script seed: runs only that script (then shrinks it if it fails).
/// - `ACTORQUEUE_RANDOM_REPLAY_JSON`: a script as printed with a failure (the shrunk one): runs it.
/// - `ACTORQUEUE_RANDOM_FREEING`: `step` (default), `end` or `off`: where freeing is checked.
/// - `ACTORQUEUE_SHRINK_BUDGET`, `ACTORQUEUE_SHRINK_SECONDS`: child runs and seconds the shrinker
///   may spend on one failure (default 200 runs, 40 s).
/// - `ACTORQUEUE_RANDOM_FAILURES`: how many failing scripts to report before stopping (default 1;
///   more catalogues several defects in one run).
/// - `ACTORQUEUE_RANDOM_TRACE`: set: a failure prints every step its script ran, the end's drain
///   steps too (which the printed script leaves out), and at a state that disagrees, every op's
///   state beside the model's.
///
/// Scripts run in a child process (a Swift Testing exit test) with a watchdog, so a trap or a
/// deadlock in the code under test is a reported failure with its seed, not a dead test run (a
/// watchdog's report says what the run waited for, and the last events before it). A
/// failing script is shrunk by delta debugging (each candidate in its own child process) and
/// printed step by step.
extension Searching {
  @Suite("Reliability: model-based random scripts")
  struct ReliabilityRandomScriptTests {
    static let generator = ScriptGenerator()

    @Test("random scripts agree with the reference model, keep the invariants and free everything")
    func randomScripts() async throws {
      let count = SearchDepth.count("ACTORQUEUE_RANDOM_SCRIPTS", quick: 500, deep: 5_000)
      let batch = SearchDepth.size(quick: 100, deep: 500)
      let maxFailures = environmentInt("ACTORQUEUE_RANDOM_FAILURES", default: 1)
      let seed = runSeed()
      let environment = ProcessInfo.processInfo.environment
      var replay: Script?
      if let text = environment["ACTORQUEUE_RANDOM_REPLAY"], let scriptSeed = UInt64(text) {
        replay = Self.generator.script(seed: scriptSeed)
      } else if let json = environment["ACTORQUEUE_RANDOM_REPLAY_JSON"] {
        replay = try JSONDecoder().decode(Script.self, from: Data(json.utf8))
      }
      if let script = replay {
        let outcome = await Self.runInChild([script])
        if outcome.status != .exitCode(ChildExit.passed) {
          await Self.report(script, index: 0, runSeed: seed, outcome: outcome)
        }
        return
      }
      progress("Reliability random scripts: ACTORQUEUE_RANDOM_SEED=\(seed), \(count) scripts")
      var start = 0
      var failures = 0
      while start < count && failures < maxFailures {
        let end = min(start + batch, count)
        let outcome = await Self.runBatchInChild(seed: seed, from: start, to: end, of: count)
        if outcome.status == .exitCode(ChildExit.passed) {
          start = end
          continue
        }
        guard let index = outcome.lastScript else {
          Issue.record(
            "the random-script child \(ChildExit.describe(outcome.status)) before any script:\n\(outcome.log)"
          )
          return
        }
        let script = Self.generator.script(seed: SplitMix64.scriptSeed(run: seed, index: index))
        await Self.report(script, index: index, runSeed: seed, outcome: outcome)
        failures += 1
        start = index + 1
      }
    }

    struct ChildOutcome {
      var status: ExitStatus
      var log: String
      var lastScript: Int?
    }

    /// Runs scripts `from..<to` of a run in a child; it exits at the first failure.
    static func runBatchInChild(seed: UInt64, from: Int, to: Int, of total: Int) async -> ChildOutcome {
      let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        [seed = seed as UInt64, from = from as Int, count = to as Int] in
        startWatchdog(stallSeconds: 10, "random scripts")
        let executor = RealQueueExecutor.fromEnvironment()
        let started = ContinuousClock.now
        for index in from..<count {
          let scriptSeed = SplitMix64.scriptSeed(run: seed, index: index)
          childLog("RUN \(index) \(scriptSeed)")
          let script = ReliabilityRandomScriptTests.generator.script(seed: scriptSeed)
          if let failure = await executor.run(script) {
            childLog("FAIL \(index): \(failure)")
            childLog("RAN \(from)..<\(index + 1) in \(seconds(since: started))")
            exit(ChildExit.failed)
          }
        }
        childLog("RAN \(from)..<\(count) in \(seconds(since: started))")
        exit(ChildExit.passed)
      }
      let outcome = outcome(result)
      if let ran = outcome.log.split(separator: "\n").last(where: { $0.hasPrefix("RAN ") }) {
        progress("Reliability random scripts: \(ran.dropFirst(4)) (of \(total))")
      }
      return outcome
    }

    /// Runs the given scripts (JSON) in a child; used to replay and to shrink.
    static func runInChild(_ scripts: [Script]) async -> ChildOutcome {
      let json = String(decoding: try! JSONEncoder().encode(scripts), as: UTF8.self)
      let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        [json = json as String] in
        startWatchdog(stallSeconds: 3, "a replayed script")
        let scripts = try! JSONDecoder().decode([Script].self, from: Data(json.utf8))
        let executor = RealQueueExecutor.fromEnvironment()
        for (index, script) in scripts.enumerated() {
          childLog("RUN \(index) \(script.seed)")
          if let failure = await executor.run(script) {
            childLog("FAIL \(index): \(failure)")
            exit(ChildExit.failed)
          }
        }
        exit(ChildExit.passed)
      }
      return outcome(result)
    }

    private static func outcome(_ result: ExitTest.Result?) -> ChildOutcome {
      guard let result else { return ChildOutcome(status: .exitCode(-1), log: "no exit test result") }
      let log = String(decoding: result.standardErrorContent, as: UTF8.self)
      let last = log.split(separator: "\n").last { $0.hasPrefix("RUN ") }
      let index = last.flatMap { Int($0.split(separator: " ")[1]) }
      return ChildOutcome(status: result.exitStatus, log: log, lastScript: index)
    }

    /// The child's own explanation: the failure line, or the last lines before a crash.
    private static func reason(_ outcome: ChildOutcome) -> String {
      let lines = outcome.log.split(separator: "\n", omittingEmptySubsequences: true)
      if let failure = lines.last(where: { $0.hasPrefix("FAIL ") }) { return String(failure) }
      let stop = lines.last { line in
        ["Fatal error", "Precondition failed", "Assertion failed", "WATCHDOG"].contains { line.contains($0) }
      }
      if let stop {
        // A watchdog's diagnosis follows its line.
        let after = lines.drop { $0 != stop }.dropFirst().prefix { $0.hasPrefix("  | ") }
        return ([stop] + after).joined(separator: "\n")
      }
      let afterLastRun = lines.reversed().prefix { !$0.hasPrefix("RUN ") }.reversed()
      return afterLastRun.suffix(6).joined(separator: "\n")
    }

    /// The same kind of failure: the same exit status, and for a model failure the same first words.
    private static func kind(_ outcome: ChildOutcome) -> String {
      let status = ChildExit.describe(outcome.status)
      guard outcome.status == .exitCode(ChildExit.failed) else { return status }
      let text = reason(outcome)
      let message = text.split(separator: ":", maxSplits: 2).dropFirst().joined(separator: ":")
      // "step 7: op3 ..." -> keep what follows the step's description, without op numbers.
      let words = message.split(separator: " ").filter { !$0.hasPrefix("op") && Int($0) == nil }
      return status + " " + words.suffix(4).joined(separator: " ")
    }

    private static func json(_ script: Script) -> String {
      let encoder = JSONEncoder()
      encoder.outputFormatting = .sortedKeys
      return String(decoding: (try? encoder.encode(script)) ?? Data(), as: UTF8.self)
    }

    static func report(_ script: Script, index: Int, runSeed: UInt64, outcome: ChildOutcome) async {
      let original = kind(outcome)
      if traceScripts {
        let trace = outcome.log.split(separator: "\n").filter {
          $0.hasPrefix("STEP ") || $0.hasPrefix("  op") || $0.hasPrefix("  model:")
        }
        print(trace.joined(separator: "\n"))
      }
      let clock = ContinuousClock()
      let deadline = clock.now + .seconds(environmentInt("ACTORQUEUE_SHRINK_SECONDS", default: 40))
      let shrunk = await shrink(script, budget: environmentInt("ACTORQUEUE_SHRINK_BUDGET", default: 200)) {
        candidate in
        // Out of time: keep what was found so far (each hanging candidate costs its watchdog).
        guard clock.now < deadline else { return false }
        let probe = await runInChild([candidate])
        return probe.status != .exitCode(ChildExit.passed) && kind(probe) == original
      }
      let replay = await runInChild([shrunk])
      Issue.record(
        """
        Random script \(index) of run ACTORQUEUE_RANDOM_SEED=\(runSeed) \(ChildExit.describe(outcome.status)).
        Replay it alone: ACTORQUEUE_RANDOM_REPLAY=\(script.seed) swift test --filter ReliabilityRandomScriptTests
        \(reason(outcome))
        Shrunk from \(script.steps.count) to \(shrunk.steps.count) steps (\(ChildExit.describe(replay.status))):
        \(shrunk)
        \(reason(replay))
        Replay the shrunk script: ACTORQUEUE_RANDOM_REPLAY_JSON='\(json(shrunk))' \\
          swift test --filter ReliabilityRandomScriptTests
        """)
    }
  }
}

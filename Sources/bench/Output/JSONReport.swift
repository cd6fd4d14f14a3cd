import Foundation

/// The `--json` file: every row of every repeat, every goal, the machine and the options.
///
/// Schema (`schemaVersion` 2; README's "Benchmarks" section shows an example):
/// - top level: `schemaVersion`, `command`, `machine` {`cores`, `operatingSystem`, `swift`},
///   `loadAverageBefore` and `loadAverageAfter` {`oneMinute`, `fiveMinutes`,
///   `fifteenMinutes`} (absent where unknown), `runs`, `warmups`, `repeats`, `quick`,
///   `spinIterations` (the calibrated length of a "2 µs CPU" body), `rows`, `goals`.
/// - a row: `kind` (`throughput`, `latency`, `cpuPerOp`, `duration`, `memory`), `scenario`,
///   `variant` (optional), `metric`, `system`, `n`, `runs`, `repetition` (1…`repeats`), then by
///   kind: `medianSeconds`/`minSeconds`/`maxSeconds` (every kind but memory) or
///   `medianBytesPerOp`/`minBytesPerOp`/`maxBytesPerOp` (memory); `opsPerSecond`,
///   `secondsPerOp` and `vsLowerBound` (throughput only); `vsOperationQueue`, `vsTaskPerOp` where
///   that reference was measured in the same scenario; `goals` (strings, as in the table) and
///   `note`, when present; `missedSamples` (timers): samples of the measured runs that yielded
///   no value, 0 included. A value that could not be measured is absent.
/// - every ratio (`vs…`): the reference's median / this row's, of the same metric; above 1, this
///   row's system is cheaper (faster, quicker to start, smaller).
/// - a goal: `goal`, `threshold` (the ratio must be at least this), `ratios` (one per repeat),
///   `n`, `verdict` (`PASS`, `MISS`, or `within noise` when the threshold lies between the
///   smallest and largest ratio of the repeats).
struct JSONReport: Encodable {
  struct Machine: Encodable {
    let cores: Int
    let operatingSystem: String
    let swift: String
  }

  let schemaVersion = 2
  let command: String
  let machine: Machine
  let loadAverageBefore: LoadAverage?
  let loadAverageAfter: LoadAverage?
  let runs: Int
  let warmups: Int
  let repeats: Int
  let quick: Bool
  let spinIterations: Int
  let rows: [Row]
  let goals: [GoalCheck]

  func write(to path: String) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    let data = try encoder.encode(self)
    try data.write(to: URL(fileURLWithPath: path))
  }
}

extension JSONReport.Machine {
  static var current: Self {
    #if swift(>=6.3)
      let swift = "6.3+"
    #else
      let swift = "<6.3"
    #endif
    return .init(
      cores: ProcessInfo.processInfo.activeProcessorCount,
      operatingSystem: ProcessInfo.processInfo.operatingSystemVersionString, swift: swift)
  }
}

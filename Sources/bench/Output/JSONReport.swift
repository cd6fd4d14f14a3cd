import Foundation

/// The `--json` file: every row and every goal, with the machine and the options.
struct JSONReport: Encodable {
  struct Machine: Encodable {
    let cores: Int
    let operatingSystem: String
    let swift: String
    /// The 1-minute load average when the bench started (Linux), so noise from other work on
    /// the machine is on record.
    let loadAverageAtStart: Double?
  }

  let command: String
  let machine: Machine
  let runs: Int
  let warmups: Int
  let quick: Bool
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
      operatingSystem: ProcessInfo.processInfo.operatingSystemVersionString, swift: swift,
      loadAverageAtStart: loadAverage())
  }

  /// The 1-minute load average from /proc/loadavg; `nil` elsewhere.
  static func loadAverage() -> Double? {
    #if os(Linux)
      guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
        let first = text.split(separator: " ").first
      else { return nil }
      return Double(first)
    #else
      return nil
    #endif
  }
}

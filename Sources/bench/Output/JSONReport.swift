import Foundation

/// The `--json` file: every row and every goal, with the machine and the options.
struct JSONReport: Encodable {
  struct Machine: Encodable {
    let cores: Int
    let operatingSystem: String
    let swift: String
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
      operatingSystem: ProcessInfo.processInfo.operatingSystemVersionString, swift: swift)
  }
}

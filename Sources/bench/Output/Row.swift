/// One line of the results: one system in one scenario (and variant, and metric).
struct Row: Sendable, Encodable {
  enum Unit: String, Sendable, Encodable {
    case seconds
    case bytes
  }

  var scenario: String
  /// e.g. "unlimited", "max 4", "serial"; `nil` when the scenario has one form.
  var variant: String?
  /// "time", or what else is measured ("p50", "p99", "3→10", "bytes/op").
  var metric: String
  var system: System
  var n: Int
  var runs: Int
  var unit: Unit
  var median: Double?
  var min: Double?
  var max: Double?
  /// Ops per second (n / median), for time rows that process `n` ops.
  var opsPerSecond: Double?
  /// OperationQueue's median / this one's (higher: this system is better).
  var versusOperationQueue: Double?
  /// This system's throughput / the floor's (= floor's median / this one's).
  var versusFloor: Double?
  /// Goals checked on this row, as printed ("≥1.5x OQ PASS").
  var goals: [String] = []
  var note: String?

  /// The label in the table's first column.
  var label: String {
    [scenario, variant, metric == "time" ? nil : metric].compactMap { $0 }.joined(separator: " ")
  }

  /// Median cost per op, in seconds (time rows only).
  var secondsPerOp: Double? {
    guard unit == .seconds, let median, n > 0 else { return nil }
    return median / Double(n)
  }

  private enum CodingKeys: String, CodingKey {
    case scenario, variant, metric, system, n, runs
    case medianSeconds, minSeconds, maxSeconds, opsPerSecond
    case bytesPerOp, minBytesPerOp, maxBytesPerOp
    case speedupVsOperationQueue, throughputVsFloor, goals, note
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(scenario, forKey: .scenario)
    try container.encodeIfPresent(variant, forKey: .variant)
    try container.encode(metric, forKey: .metric)
    try container.encode(system, forKey: .system)
    try container.encode(n, forKey: .n)
    try container.encode(runs, forKey: .runs)
    switch unit {
    case .seconds:
      try container.encodeIfPresent(median, forKey: .medianSeconds)
      try container.encodeIfPresent(min, forKey: .minSeconds)
      try container.encodeIfPresent(max, forKey: .maxSeconds)
    case .bytes:
      try container.encodeIfPresent(median, forKey: .bytesPerOp)
      try container.encodeIfPresent(min, forKey: .minBytesPerOp)
      try container.encodeIfPresent(max, forKey: .maxBytesPerOp)
    }
    try container.encodeIfPresent(opsPerSecond, forKey: .opsPerSecond)
    try container.encodeIfPresent(versusOperationQueue, forKey: .speedupVsOperationQueue)
    try container.encodeIfPresent(versusFloor, forKey: .throughputVsFloor)
    if !goals.isEmpty { try container.encode(goals, forKey: .goals) }
    try container.encodeIfPresent(note, forKey: .note)
  }
}

/// Turns the samples of one scenario into rows, one per system, with both ratios.
///
/// - Parameters:
///   - ops: the number of ops one run processes, for ops/s; `nil` when a rate means nothing
///     (latency percentiles, memory).
func makeRows(
  scenario: String, variant: String? = nil, metrics: [String], n: Int, ops: Int?, unit: Row.Unit = .seconds,
  samples: [System: [[Double]]], runs: Int, note: String? = nil
) -> [Row] {
  var rows: [Row] = []
  for (index, metric) in metrics.enumerated() {
    var stats: [System: Statistics] = [:]
    for (system, values) in samples { stats[system] = Statistics(values[index]) }
    for system in System.allCases where samples[system] != nil {
      var row = Row(
        scenario: scenario, variant: variant, metric: metric, system: system, n: n, runs: runs, unit: unit,
        note: note)
      if let own = stats[system] {
        row.median = own.median
        row.min = own.min
        row.max = own.max
        if let ops, unit == .seconds { row.opsPerSecond = Double(ops) / own.median }
        if system != .operationQueue, let reference = stats[.operationQueue] {
          row.versusOperationQueue = reference.median / own.median
        }
        if system != .operationQueue && system != .floor, let floor = stats[.floor] {
          row.versusFloor = floor.median / own.median
        }
      } else if row.note == nil {
        row.note = "not measured in any run"
      }
      rows.append(row)
    }
  }
  return rows
}

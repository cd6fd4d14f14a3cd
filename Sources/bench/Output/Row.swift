/// One line of the results: one system in one scenario (and variant, and metric).
///
/// Every ratio reads the same way: the reference system's value divided by this row's
/// (`reference / this`, over the medians of the same metric in the same run). Above 1, this
/// row's system is cheaper: faster, quicker to start, or smaller, by that factor.
struct Row: Sendable, Encodable {
  /// What the value of a row is; it decides the fields a row carries (see the JSON schema in
  /// `JSONReport`).
  enum Kind: String, Sendable, Encodable {
    /// Seconds to process `n` ops: has ops/s and the ratio against every reference measured.
    case throughput
    /// A latency percentile, in seconds (`n`: the samples per run).
    case latency
    /// CPU time of the whole process per op, in seconds.
    case cpuPerOp
    /// Seconds until something happened, not per op (`n`: the scenario's size).
    case duration
    /// Resident bytes per waiting op.
    case memory

    var isBytes: Bool { self == .memory }
  }

  var scenario: String
  /// e.g. "max 4, trivial"; `nil` when the scenario has one form.
  var variant: String?
  /// "time", or what else is measured ("p50", "p99", "3→10", "bytes/op").
  var metric: String
  var system: System
  var n: Int
  var runs: Int
  var kind: Kind
  var median: Double?
  var min: Double?
  var max: Double?
  /// Ops per second (n / median): throughput rows only.
  var opsPerSecond: Double?
  /// OperationQueue's median / this one's (above 1: this system is cheaper).
  var versusOperationQueue: Double?
  /// The task-per-op baseline's median / this one's.
  var versusTaskPerOp: Double?
  /// The lower bound's (reused tasks) median / this one's: at most about 1.
  var versusLowerBound: Double?
  /// Goals checked on this row, as printed ("≥4x OQ PASS").
  var goals: [String] = []
  var note: String?
  /// Samples of the measured runs that yielded no value (the timers scenario: an op that ended
  /// before its body ran); `nil` where every sample yields one.
  var missedSamples: Int?
  /// Which repeat of the comparison (`--repeat`) this row comes from, from 1.
  var repetition = 1

  init(
    scenario: String, variant: String?, metric: String, system: System, n: Int, runs: Int, kind: Kind,
    note: String? = nil
  ) {
    self.scenario = scenario
    self.variant = variant
    self.metric = metric
    self.system = system
    self.n = n
    self.runs = runs
    self.kind = kind
    self.note = note
  }

  /// The label in the table's first column.
  var label: String {
    [scenario, variant, metric == "time" ? nil : metric].compactMap { $0 }.joined(separator: " ")
  }

  /// Median cost per op, in seconds (throughput rows only).
  var secondsPerOp: Double? {
    guard kind == .throughput, let median, n > 0 else { return nil }
    return median / Double(n)
  }

  private enum CodingKeys: String, CodingKey {
    case kind, scenario, variant, metric, system, n, runs, repetition
    case medianSeconds, minSeconds, maxSeconds, opsPerSecond, secondsPerOp
    case medianBytesPerOp, minBytesPerOp, maxBytesPerOp
    case vsOperationQueue, vsTaskPerOp, vsLowerBound, goals, note, missedSamples
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(kind, forKey: .kind)
    try container.encode(scenario, forKey: .scenario)
    try container.encodeIfPresent(variant, forKey: .variant)
    try container.encode(metric, forKey: .metric)
    try container.encode(system, forKey: .system)
    try container.encode(n, forKey: .n)
    try container.encode(runs, forKey: .runs)
    try container.encode(repetition, forKey: .repetition)
    if kind.isBytes {
      try container.encodeIfPresent(median, forKey: .medianBytesPerOp)
      try container.encodeIfPresent(min, forKey: .minBytesPerOp)
      try container.encodeIfPresent(max, forKey: .maxBytesPerOp)
    } else {
      try container.encodeIfPresent(median, forKey: .medianSeconds)
      try container.encodeIfPresent(min, forKey: .minSeconds)
      try container.encodeIfPresent(max, forKey: .maxSeconds)
    }
    if kind == .throughput {
      try container.encodeIfPresent(opsPerSecond, forKey: .opsPerSecond)
      try container.encodeIfPresent(secondsPerOp, forKey: .secondsPerOp)
      try container.encodeIfPresent(versusLowerBound, forKey: .vsLowerBound)
    }
    try container.encodeIfPresent(versusOperationQueue, forKey: .vsOperationQueue)
    try container.encodeIfPresent(versusTaskPerOp, forKey: .vsTaskPerOp)
    if !goals.isEmpty { try container.encode(goals, forKey: .goals) }
    try container.encodeIfPresent(note, forKey: .note)
    try container.encodeIfPresent(missedSamples, forKey: .missedSamples)
  }
}

/// Turns the samples of one scenario into rows, one per system, with the ratios that apply.
///
/// Ratios: against OperationQueue on every other system's row; against task per op on the
/// rows of ActorQueue and the adapter; against the lower bound (throughput only) on the rows of
/// ActorQueue and task per op.
///
/// - Parameters:
///   - ops: the number of ops one run processes, for ops/s (throughput rows); `nil` when a
///     rate means nothing.
///   - kinds: each metric's kind; default: throughput when `ops` is given, else duration.
func makeRows(
  scenario: String, variant: String? = nil, metrics: [String], n: Int, ops: Int?, kinds: [Row.Kind]? = nil,
  samples: [System: [[Double]]], runs: Int, note: String? = nil
) -> [Row] {
  var rows: [Row] = []
  for (index, metric) in metrics.enumerated() {
    let kind = kinds?[index] ?? (ops == nil ? .duration : .throughput)
    var stats: [System: Statistics] = [:]
    for (system, values) in samples { stats[system] = Statistics(values[index]) }
    for system in System.allCases where samples[system] != nil {
      var row = Row(
        scenario: scenario, variant: variant, metric: metric, system: system, n: n, runs: runs, kind: kind,
        note: note)
      if let own = stats[system] {
        row.median = own.median
        row.min = own.min
        row.max = own.max
        if let ops, kind == .throughput { row.opsPerSecond = Double(ops) / own.median }
        if system != .operationQueue, let reference = stats[.operationQueue] {
          row.versusOperationQueue = reference.median / own.median
        }
        if system == .actorQueue || system == .adapter, let reference = stats[.taskPerOp] {
          row.versusTaskPerOp = reference.median / own.median
        }
        if kind == .throughput, system == .actorQueue || system == .taskPerOp,
          let reference = stats[.reusedTasks]
        {
          row.versusLowerBound = reference.median / own.median
        }
      } else if row.note == nil {
        row.note = "not measured in any run"
      }
      rows.append(row)
    }
  }
  return rows
}

import Foundation

/// The readable table printed on stdout.
enum Table {
  /// The legend printed above every table: what the ratio columns mean.
  static let legend = """
    Every ratio is the reference's median / this row's (time, latency, CPU or bytes): above 1,
    this row's system is cheaper by that factor. vs OQ: against OperationQueue; vs task/op:
    against a task per op (a TaskGroup child per op, a sliding window of `limit` when limited;
    Task.detached for latency; a Task per graph node), the plain-Swift baseline; vs bound (with
    --wide): against the lower bound, `limit` reused tasks (one per core when unlimited) running
    the bodies in a loop from a shared atomic counter, no queue at all.
    """

  /// The width the default output fits.
  static let narrowWidth = 100

  /// The table; `wide`: every column, else those that fit ``narrowWidth`` (scenario, system,
  /// n, median and the two ratios against OperationQueue and a task per op).
  static func render(_ rows: [Row], header: String, wide: Bool) -> String {
    let all: [(title: String, width: Int, right: Bool, narrow: Bool)] = [
      ("scenario", wide ? 38 : 36, false, true), ("system", 16, false, true), ("n", 9, true, true),
      ("median", 10, true, true), ("ops/s", 10, true, false), ("vs OQ", 7, true, true),
      ("vs task/op", 10, true, true), ("vs bound", 8, true, false), ("min – max", 23, true, false),
      ("goal", 0, false, false),
    ]
    func line(_ cells: [String]) -> String {
      zip(all, cells).filter { column, _ in wide || column.narrow }.map { column, cell in
        let cell = column.width > 0 && !wide ? Format.truncate(cell, column.width) : cell
        return column.width == 0 ? cell : Format.pad(cell, column.width, right: column.right)
      }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }
    var output = [header, "", line(all.map(\.title))]
    output.append(String(repeating: "─", count: wide ? 160 : 98))
    var previous: String?
    var notes: [String] = []
    for row in rows {
      let group = row.scenario + (row.variant ?? "")
      if let previous, previous != group { output.append("") }
      previous = group
      var median = Format.value(row.median, kind: row.kind)
      if row.median == nil, let note = row.note {
        median = note.hasPrefix("cut off") ? "cut off" : "—"
      }
      let range =
        row.min.map { "\(Format.value($0, kind: row.kind)) – \(Format.value(row.max, kind: row.kind))" } ?? ""
      output.append(
        line([
          row.label, row.system.rawValue, Format.count(row.n), median, Format.rate(row.opsPerSecond),
          Format.ratio(row.versusOperationQueue), Format.ratio(row.versusTaskPerOp),
          Format.ratio(row.versusLowerBound), range, row.goals.joined(separator: "; "),
        ]))
      if let note = row.note, !notes.contains(note) { notes.append(note) }
      if let missed = row.missedSamples, missed > 0 {
        let note =
          "\([row.scenario, row.variant].compactMap { $0 }.joined(separator: " ")), \(row.system.rawValue): "
          + "missed \(Format.count(missed)) of \(Format.count(row.n * row.runs)) samples"
        if !notes.contains(note) { notes.append(note) }
      }
    }
    if !notes.isEmpty {
      output.append("")
      output.append("Notes:")
      output += notes.flatMap { note in
        wide
          ? ["  - \(note)"]
          : Format.wrap(note, width: narrowWidth - 4).enumerated().map { index, text in
            (index == 0 ? "  - " : "    ") + text
          }
      }
    }
    return output.joined(separator: "\n")
  }

  /// The goals, each with its ratio (its spread over the repeats with `--repeat`) and verdict.
  static func renderGoals(_ goals: [GoalCheck], repeats: Int, wide: Bool) -> String {
    guard !goals.isEmpty else { return "" }
    let intro =
      "Goals (ActorQueue): each ratio is the reference's cost / ActorQueue's, as in the table; it must be at least "
      + "the threshold."
      + (repeats > 1
        ? " Measured: min – max over \(repeats) repeats; within noise: the threshold lies inside that spread."
        : "")
    var output = [""] + (wide ? [intro] : Format.wrap(intro, width: narrowWidth))
    for goal in goals {
      let measured =
        goal.ratios.count > 1
        ? "\(Format.ratio(goal.min)) – \(Format.ratio(goal.max))" : Format.ratio(goal.ratios.first)
      if wide {
        output.append(
          "  \(Format.pad(goal.verdict.rawValue.uppercased(), 12))  \(Format.pad(goal.goal, 66))  "
            + "≥ \(Format.pad(Format.ratio(goal.threshold), 6, right: true))   measured \(measured)"
            + " (n=\(Format.count(goal.n)))")
      } else {
        output.append(
          "  \(Format.pad(goal.verdict.rawValue.uppercased(), 12)) \(Format.pad(Format.truncate(goal.goal, 52), 52)) "
            + "≥\(Format.pad(Format.ratio(goal.threshold), 6, right: true))  \(measured)")
      }
    }
    let passed = goals.filter { $0.verdict == .pass }.count
    let noise = goals.filter { $0.verdict == .withinNoise }.count
    output.append(
      "  \(passed)/\(goals.count) goals met"
        + (noise > 0 ? ", \(noise) within noise" : "") + ", \(goals.count - passed - noise) missed")
    return output.joined(separator: "\n")
  }

  /// Per-op cost against N for the scaling scenarios: one column per system.
  static func renderScaling(_ rows: [Row], wide: Bool) -> String? {
    let (label, column) = wide ? (22, 28) : (20, 20)
    let scaling = rows.filter { $0.scenario.hasPrefix("scaling") }
    guard !scaling.isEmpty else { return nil }
    var output = [
      "", "Scaling: median cost per op against N (growth: per-op cost / per-op cost at the smallest N)",
    ]
    for scenario in uniqued(scaling.map(\.scenario)) {
      let subset = scaling.filter { $0.scenario == scenario }
      let systems = System.allCases.filter { system in subset.contains { $0.system == system } }
      output.append("")
      output.append(
        Format.pad(scenario, label) + systems.map { Format.pad($0.rawValue, column, right: true) }.joined())
      var base: [System: Double] = [:]
      for n in uniqued(subset.map(\.n)) {
        var cells = Format.pad("  N = \(Format.count(n))", label)
        for system in systems {
          let row = subset.first { $0.n == n && $0.system == system }
          var cell = "—"
          if let perOp = row?.secondsPerOp {
            if base[system] == nil { base[system] = perOp }
            cell = "\(Format.duration(perOp))/op (\(Format.ratio(perOp / base[system]!)))"
          } else if let note = row?.note, note.hasPrefix("cut off") {
            cell = "cut off"
          }
          cells += Format.pad(cell, column, right: true)
        }
        output.append(cells)
      }
    }
    return output.joined(separator: "\n")
  }

  private static func uniqued<T: Hashable>(_ values: [T]) -> [T] {
    var seen = Set<T>()
    return values.filter { seen.insert($0).inserted }
  }
}

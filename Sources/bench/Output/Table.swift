import Foundation

/// The readable table printed on stdout.
enum Table {
  static func render(_ rows: [Row], goals: [GoalCheck], header: String) -> String {
    let columns: [(title: String, width: Int, right: Bool)] = [
      ("scenario", 26, false), ("system", 16, false), ("n", 9, true), ("median", 10, true),
      ("ops/s", 10, true), ("vs OQ", 8, true), ("vs floor", 9, true), ("min – max", 23, true),
      ("goal", 0, false),
    ]
    func line(_ cells: [String]) -> String {
      zip(columns, cells).map { column, cell in
        column.width == 0 ? cell : Format.pad(cell, column.width, right: column.right)
      }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }
    var output = [header, "", line(columns.map(\.title))]
    output.append(String(repeating: "─", count: 130))
    var previous: String?
    var notes: [String] = []
    for row in rows {
      let group = row.scenario + (row.variant ?? "")
      if let previous, previous != group { output.append("") }
      previous = group
      var median = Format.value(row.median, unit: row.unit)
      if row.median == nil, let note = row.note {
        median = note.hasPrefix("cut off") ? "cut off" : "—"
      }
      let range =
        row.min.map { "\(Format.value($0, unit: row.unit)) – \(Format.value(row.max, unit: row.unit))" } ?? ""
      output.append(
        line([
          row.label, row.system.rawValue, Format.count(row.n), median, Format.rate(row.opsPerSecond),
          Format.ratio(row.versusOperationQueue), Format.ratio(row.versusFloor), range,
          row.goals.joined(separator: "; "),
        ]))
      if let note = row.note, !notes.contains(note) { notes.append(note) }
    }
    if !notes.isEmpty {
      output.append("")
      output.append("Notes:")
      output += notes.map { "  - \($0)" }
    }
    if !goals.isEmpty {
      output.append("")
      output.append("Goals (ActorQueue):")
      for goal in goals {
        output.append(
          "  \(goal.pass ? "PASS" : "MISS")  \(Format.pad(goal.goal, 52))  measured \(goal.measured)")
      }
      let missed = goals.filter { !$0.pass }.count
      output.append("  \(goals.count - missed)/\(goals.count) goals met")
    }
    return output.joined(separator: "\n")
  }

  /// Per-op cost against N for the scaling scenarios: one column per system.
  static func renderScaling(_ rows: [Row]) -> String? {
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
        Format.pad(scenario, 22) + systems.map { Format.pad($0.rawValue, 28, right: true) }.joined())
      var base: [System: Double] = [:]
      for n in uniqued(subset.map(\.n)) {
        var cells = Format.pad("  N = \(Format.count(n))", 22)
        for system in systems {
          let row = subset.first { $0.n == n && $0.system == system }
          var cell = "—"
          if let perOp = row?.secondsPerOp {
            if base[system] == nil { base[system] = perOp }
            cell = "\(Format.duration(perOp))/op (\(Format.ratio(perOp / base[system]!)))"
          } else if let note = row?.note, note.hasPrefix("cut off") {
            cell = "cut off"
          }
          cells += Format.pad(cell, 28, right: true)
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

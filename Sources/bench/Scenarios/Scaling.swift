import Foundation

/// The scaling curves: the independent (unlimited) and chain scenarios at growing N, so the
/// growth of the per-op cost is visible (flat: linear total cost).
///
/// Time bound: OperationQueue runs a size only while its run time there, extrapolated from
/// its two previous sizes (at the measured growth exponent, at least linear; quadratic from a
/// single size), stays under `Sizes.scalingBoundSeconds` (5 s; `--quick`: 1.5 s). Its chain
/// is quadratic on Linux (8,000 ops took 4.4 s), so it is cut off early; larger sizes are
/// reported as cut off.
enum Scaling {
  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    curve(
      "scaling independent", systems: [.operationQueue, .actorQueue, .taskPerOp, .reusedTasks], sizes: sizes,
      options: options
    ) { system, n in
      switch system {
      case .operationQueue: Independent.operationQueue(n: n, limit: nil)
      case .actorQueue: Independent.actorQueue(n: n, limit: nil)
      case .taskPerOp: Independent.taskPerOp(n: n, limit: nil)
      default: Independent.reusedTasks(n: n, limit: nil)
      }
    }
      + curve(
        "scaling chain", systems: [.operationQueue, .actorQueue, .taskPerOp], sizes: sizes, options: options
      ) {
        system, n in
        Graphs.run(.chain(n), on: system)
      }
  }

  private static func curve(
    _ scenario: String, systems: [System], sizes: Sizes, options: Options,
    measure: @escaping (System, Int) -> Double
  ) -> [Row] {
    var rows: [Row] = []
    var history = GrowthModel()  // OperationQueue's medians
    var cutOff: String?
    for n in sizes.scaling {
      if cutOff == nil, let projection = history.project(to: n), projection > sizes.scalingBoundSeconds {
        cutOff =
          "cut off: OperationQueue's run time is projected beyond the \(Format.duration(sizes.scalingBoundSeconds)) "
          + "bound per run from N = \(Format.count(n)) on (\(Format.duration(projection)) there)"
      }
      let active = systems.filter { $0 != .operationQueue || cutOff == nil }
      let samples = runInterleaved(
        "\(scenario) n=\(n)", active.map { system in Contender(system: system) { [measure(system, n)] } },
        metrics: 1, options: options)
      var measured = makeRows(
        scenario: scenario, metrics: ["time"], n: n, ops: n, samples: samples, runs: options.runs)
      if let cutOff {
        measured.insert(
          Row(
            scenario: scenario, variant: nil, metric: "time", system: .operationQueue, n: n, runs: 0,
            kind: .throughput,
            note: cutOff), at: 0)
      } else if let median = measured.first(where: { $0.system == .operationQueue })?.median {
        history.add(n: n, seconds: median)
      }
      rows += measured
    }
    return rows
  }
}

// `swift run -c release bench`: ActorQueue against OperationQueue and the floor of Swift
// concurrency. See `--help`, and Options.swift for the flags.
//
// Layout: CLI/ (options, sizes), Measurement/ (clock, statistics, interleaved runner, PRNG),
// Scenarios/ (one file per scenario family; Memory.swift also holds the child process),
// Output/ (rows, table, goals, JSON, SVG).
import Foundation

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
if let child = options.memoryChild { Memory.child(child.system, child.count) }

#if DEBUG
  Progress.report("warning: a debug build measures nothing useful; run `swift run -c release bench`")
  let build = "debug build"
#else
  let build = "release"
#endif

let sizes = Sizes(quick: options.quick)
let machine = JSONReport.Machine.current
if let load = machine.loadAverageAtStart, load > Double(machine.cores) / 2 {
  Progress.report(
    "warning: load average \(load) on \(machine.cores) cores: other work on this machine will add noise to the numbers"
  )
}
var rows: [Row] = []
for scenario in options.selected {
  Progress.report("scenario \(scenario.rawValue): \(scenario.summary)")
  switch scenario {
  case .independent: rows += Independent.run(options, sizes)
  case .latency: rows += Latency.run(options, sizes)
  case .chain, .fanIn, .fanOut, .dag: rows += Graphs.run(scenario, options, sizes)
  case .cancel: rows += Cancellation.run(options, sizes)
  case .limitChange: rows += LimitChange.run(options, sizes)
  case .memory: rows += Memory.run(options, sizes)
  case .adapter:
    rows += AdapterScenario.run(options, sizes)
  case .adapterBlocking: rows += AdapterBlocking.run(options, sizes)
  case .scaling: rows += Scaling.run(options, sizes)
  }
}

let goals = checkGoals(&rows, sizes: sizes)
let header = """
  ActorQueue bench — \(machine.cores) cores, \(machine.operatingSystem), Swift \(machine.swift), \(build)\
  \(machine.loadAverageAtStart.map { String(format: " (load average %.2f at start)", $0) } ?? ""); \
  median of \(options.runs) runs after \(options.warmups) warm-up\(options.warmups == 1 ? "" : "s")\
  \(options.quick ? ", --quick sizes" : "")
  vs OQ: OperationQueue's median / ActorQueue's (higher is better); vs floor: throughput / the floor's
  floor: a bare TaskGroup (sliding window when limited); a Task per op for latency and graphs
  """
print(Table.render(rows, goals: goals, header: header))
if let scaling = Table.renderScaling(rows) { print(scaling) }

do {
  if let path = options.jsonPath {
    try JSONReport(
      command: CommandLine.arguments.joined(separator: " "), machine: machine, runs: options.runs,
      warmups: options.warmups, quick: options.quick, rows: rows, goals: goals
    ).write(to: path)
    Progress.report("wrote \(path)")
  }
  if let path = options.svgPath {
    let subtitle =
      "\(machine.cores) cores, \(machine.operatingSystem), \(build), median of \(options.runs) runs"
    try ScalingChart.render(rows, subtitle: subtitle).write(toFile: path, atomically: true, encoding: .utf8)
    Progress.report("wrote \(path)")
  }
} catch {
  Progress.report("error: \(error)")
  exit(1)
}

// `swift run -c release bench`: ActorQueue against OperationQueue and against plain Swift
// concurrency (a task per op, and reused tasks as the lower bound). See `--help`, and
// Options.swift for the flags.
//
// Layout: CLI/ (options, sizes), Measurement/ (clock, statistics, interleaved runner, bodies,
// load average, PRNG), Scenarios/ (one file per scenario family; Memory.swift also holds the
// child process), Output/ (rows, table, goals, JSON, SVG).
import Foundation

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
if let child = options.memoryChild { Memory.child(child.system, child.count, variant: child.variant) }
if let counted = options.counted {
  Watchdog.enter(scenario: "--count \(counted.workload.rawValue)")
  counted.workload.run(counted.count)
  exit(0)
}

#if DEBUG
  Progress.report("warning: a debug build measures nothing useful; run `swift run -c release bench`")
  let build = "debug build"
#else
  let build = "release"
#endif

let sizes = Sizes(quick: options.quick)
let machine = JSONReport.Machine.current
let loadBefore = LoadAverage.current()
if let load = loadBefore, load.oneMinute > Double(machine.cores) / 2 {
  Progress.report(
    "warning: load average \(load.description) on \(machine.cores) cores: other work on this machine will add noise"
  )
}
let spin = Calibration.spinIterations()
Progress.report(
  "calibrated: \(spin.iterations) xorshift steps ≈ \(Format.duration(Double(spin.iterations) * spin.secondsPerIteration))"
)

/// Runs every selected scenario once.
func runComparison() -> [Row] {
  var rows: [Row] = []
  for scenario in options.selected {
    Progress.report("scenario \(scenario.rawValue): \(scenario.summary)")
    Watchdog.enter(scenario: scenario.rawValue)
    Watchdog.arm("its setup")
    switch scenario {
    case .independent: rows += Independent.run(options, sizes, spinIterations: spin.iterations)
    case .latency: rows += Latency.run(options, sizes)
    case .timers: rows += Timers.run(options, sizes)
    case .retry: rows += Retry.run(options, sizes)
    case .exclusive: rows += Exclusive.run(options, sizes)
    case .rate: rows += RateScenario.run(options, sizes)
    case .group: rows += GroupScenario.run(options, sizes)
    case .tags: rows += TagScenario.run(options, sizes)
    case .capacity: rows += CapacityScenario.run(options, sizes)
    case .progress: rows += ProgressReports.run(options, sizes)
    case .chain, .fanIn, .fanOut, .dag: rows += Graphs.run(scenario, options, sizes)
    case .cancel: rows += Cancellation.run(options, sizes)
    case .queues: rows += ManyQueues.run(options, sizes)
    case .limitChange: rows += LimitChange.run(options, sizes)
    case .pause: rows += PauseScenario.run(options, sizes)
    case .checkpoint: rows += Checkpoint.run(options, sizes)
    case .memory: rows += Memory.run(options, sizes)
    case .adapter:
      rows += AdapterScenario.run(options, sizes)
    case .adapterBlocking: rows += AdapterBlocking.run(options, sizes)
    case .scaling: rows += Scaling.run(options, sizes)
    }
  }
  return rows
}

/// The table's header; `load`: the load average when this repeat started.
func header(load: LoadAverage?) -> String {
  """
  ActorQueue bench — \(machine.cores) cores, \(machine.operatingSystem), Swift \(machine.swift), \(build)
  median of \(options.runs) runs after \(options.warmups) warm-up\(options.warmups == 1 ? "" : "s")\
  \(options.quick ? ", --quick sizes" : "")
  load average at the start\(options.repeats > 1 ? " of this repeat" : ""): \(load?.description ?? "unknown")
  \(Table.legend)
  """
}
var rows: [Row] = []
var measurements: [[GoalMeasurement]] = []
for repetition in 1...options.repeats {
  if options.repeats > 1 { Progress.report("repeat \(repetition)/\(options.repeats)") }
  let load = repetition == 1 ? loadBefore : LoadAverage.current()
  var repeatRows = runComparison()
  Watchdog.disarm()
  measurements.append(checkGoals(&repeatRows, sizes: sizes))
  for index in repeatRows.indices { repeatRows[index].repetition = repetition }
  let title = options.repeats > 1 ? "\n== repeat \(repetition) of \(options.repeats)\n" : ""
  print(title + Table.render(repeatRows, header: header(load: load), wide: options.wide))
  if let scaling = Table.renderScaling(repeatRows, wide: options.wide) { print(scaling) }
  rows += repeatRows
}
let goals = GoalCheck.summarize(measurements)
let loadAfter = LoadAverage.current()
print(Table.renderGoals(goals, repeats: options.repeats, wide: options.wide))
print(
  "\nload average before: \(loadBefore?.description ?? "unknown"); after: \(loadAfter?.description ?? "unknown")"
)
// Beside the verdict too: whoever reads only the end of the output must see that it was noisy.
if [loadBefore, loadAfter].contains(where: { $0.map { $0.oneMinute > Double(machine.cores) / 2 } ?? false }) {
  print(
    "warning: the load average passed \(Double(machine.cores) / 2) on \(machine.cores) cores during this run: "
      + "other work moved these figures; compare systems within this run only, or run again on a quiet machine"
  )
}
var more: [String] = []
if options.jsonPath == nil { more.append("--json PATH keeps every row") }
if options.svgPath == nil { more.append("--svg PATH draws the scaling chart") }
if !options.wide { more.append("--wide prints every column") }
if !more.isEmpty {
  print(
    Format.wrap(more.joined(separator: "; ") + "; --help lists the rest.", width: Table.narrowWidth).joined(
      separator: "\n"))
}

do {
  if let path = options.jsonPath {
    try JSONReport(
      command: CommandLine.arguments.joined(separator: " "), machine: machine, loadAverageBefore: loadBefore,
      loadAverageAfter: loadAfter, runs: options.runs, warmups: options.warmups, repeats: options.repeats,
      quick: options.quick, spinIterations: spin.iterations, rows: rows, goals: goals
    ).write(to: path)
    Progress.report("wrote \(path)")
  }
  if let path = options.svgPath {
    let subtitle =
      "\(machine.cores) cores, \(machine.operatingSystem), \(build), median of \(options.runs) runs"
    try ScalingChart.render(rows.filter { $0.repetition == options.repeats }, subtitle: subtitle)
      .write(toFile: path, atomically: true, encoding: .utf8)
    Progress.report("wrote \(path)")
  }
} catch {
  Progress.report("error: \(error)")
  exit(1)
}

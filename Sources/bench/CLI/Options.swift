import Foundation

/// Every scenario the bench knows, in the order a full run executes them.
enum ScenarioName: String, CaseIterable, Sendable {
  case independent
  case latency
  case chain
  case fanIn = "fan-in"
  case fanOut = "fan-out"
  case dag
  case cancel
  case queues
  case limitChange = "limit-change"
  case pause
  case checkpoint
  case memory
  case adapter
  case adapterBlocking = "adapter-blocking"
  case scaling
  case timers
  case retry
  case exclusive
  case rate
  case group
  case tags
  case capacity
  case progress

  var summary: String {
    switch self {
    case .independent:
      "ops without dependencies, unlimited, max 4 and serial; bodies: trivial, ~2 µs of CPU, one Task.yield()"
    case .latency:
      "add→start latency (p50, p99) and CPU per op: back to back, and one op every 1 ms and 10 ms"
    case .chain: "linear chain (4,000 ops; and 64,000 for ActorQueue alone)"
    case .fanIn: "10,000 independent ops → 1 op that depends on all of them"
    case .fanOut: "1 op → 10,000 ops that each depend on it"
    case .dag: "random DAG: 100,000 ops, about 3 edges each, seeded"
    case .cancel: "cancel 100,000 waiting ops in a suspended queue: time until all are terminal"
    case .queues:
      "1…16 queues at once (max 4 each, a feeder each); and cancelling 100,000 ops beside a served queue"
    case .limitChange: "download manager: limit 3 → 10 → 5 under load; time until the limit is honoured"
    case .pause:
      "download manager: 1,000 transfers at limit 10, 20% paused 1 ms mid-way; pause→next start and throughput"
    case .checkpoint: "ns per ActorQueue.checkpoint() that finds nothing to do, inside and outside a body"
    case .memory: "resident memory per waiting op (100,000 in a suspended queue), a child process each"
    case .adapter: "10,000 trivial BlockOperations through OperationAdapter vs OperationQueue directly"
    case .adapterBlocking: "legacy ops whose main() blocks 1 ms, with async Swift work alongside: its delay"
    case .scaling: "chain and independent at N = 1k…256k: per-op cost against N (also: --scaling)"
    case .timers: "lateness of a deadline on the system clock (p50, p99) against a bare Task.sleep"
    case .retry: "100,000 ops at limit 4 failing once, retried at once, against the same ops succeeding"
    case .exclusive:
      "100,000 ops with a key each at limit 4 against no keys; all on one key, unlimited, against a serial "
        + "queue; 30,000 ops on 1,000 keys over 3 queues against no keys"
    case .rate:
      "a token bucket of 100/s, burst 10, on the system clock for 10 s: lateness of each start against a bare "
        + "Task.sleep; starts used; a polling bucket in front of OperationQueue"
    case .group:
      "a group of 10,000 trivial children at limit 4 against the same ops on a plain queue and a wait for all"
    case .tags:
      "cancelOperations(tagged:) for 100 tagged ops among 100,000 waiting, against the same call among 1,000"
    case .capacity:
      "100,000 ops at limit 4 added with addOperationWaitingForCapacity (space free) against addOperation"
    case .progress: "ns per ProgressReporter.complete() in a body, against a Foundation Progress's increment"
    }
  }
}

/// The command line, parsed.
struct Options: Sendable {
  var runs = 5
  var warmups = 1
  /// How many times the whole comparison runs (`--repeat`): each goal is reported with the
  /// spread of its ratio over the repeats.
  var repeats = 1
  var quick = false
  var scenarios: [ScenarioName] = []  // empty: every scenario except scaling
  var scaling = false
  var jsonPath: String?
  var svgPath: String?
  /// Every column (ops/s, vs bound, min – max, goal): lines up to about 250 columns. Without it
  /// the output fits 100 columns.
  var wide = false
  /// Systems to run; empty: all (restricting them drops the ratios; for profiling one system).
  var systems: [System] = []
  /// Hidden: `--memory-child SYSTEM[+deadline|+backoff] N` measures one system's memory (its
  /// operations each with a deadline that never fires, for `+deadline`; each waiting out a retry's
  /// backoff, for `+backoff`) and prints bytes/op.
  var memoryChild: (system: System, count: Int, variant: Memory.Variant)?
  /// Hidden: `--count WORKLOAD N` runs one workload N times and exits (Scripts/instructions.sh).
  var counted: (workload: CountedWorkload, count: Int)?

  /// The scenarios to run, in order.
  var selected: [ScenarioName] {
    var chosen = scenarios.isEmpty ? ScenarioName.allCases.filter { $0 != .scaling } : scenarios
    if (scaling || svgPath != nil) && !chosen.contains(.scaling) { chosen.append(.scaling) }
    return ScenarioName.allCases.filter { chosen.contains($0) }
  }

  static let usage = """
    USAGE: swift run -c release bench [options]

    Compares ActorQueue with Foundation's OperationQueue and with plain Swift concurrency:
      task per op     the baseline: a new task per op, as code without a queue writes it (a
                      TaskGroup child per op, a sliding window of `limit` children when limited:
                      one task adds a child per body and, once `limit` are in flight, awaits
                      next(); Task.detached for latency; a Task per node for graphs)
      reused tasks    the lower bound, where one exists (independent ops): `limit` long-lived
                      tasks (one per core when unlimited) run the same bodies in a loop, taking
                      indices from a shared atomic counter; no queue at all
    Systems are interleaved, warm-up rounds then several measured runs in one process; the
    median is quoted with min–max. The machine's load average is printed before and after.

    OPTIONS:
      --runs N           measured runs per scenario (default 5; --quick: 3)
      --warmups N        warm-up rounds before measuring (default 1)
      --repeat K         run the whole comparison K times (default 1): a table per repeat, and
                         each goal's ratio as its spread (min – max) over the K repeats; a goal
                         whose threshold lies inside that spread is "within noise", not PASS/MISS
      --quick            smaller sizes and 3 runs: about a minute on 2 cores (for CI)
      --scenario NAME    run only this scenario (repeatable, or comma-separated)
      --scaling          also run the scaling curves (chain and independent at N = 1k…256k)
      --json PATH        write every row and goal as JSON (schemaVersion 2; see README)
      --svg PATH         write a log–log chart of the scaling curves (implies --scaling)
      --wide             print every column (ops/s, vs bound, min – max, goals per row); the
                         default output fits 100 columns
      --system NAME      run only this system: oq, aq, task, reused, adapter (repeatable; for
                         profiling; restricting them drops the ratios)
      -h, --help         show this help

    SCENARIOS:
    \(ScenarioName.allCases.map { "  " + $0.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0) + $0.summary }.joined(separator: "\n"))

    INDEPENDENT: ActorQueue's side is one task that adds every op with addOperation, then awaits
    waitUntilAllOperationsAreFinished(); OperationQueue's, the driver thread (a blocking wait).
    The "2 µs CPU" body is a fixed xorshift loop, calibrated once at start (printed on stderr).

    LATENCY: every system is waited for the same way: the body stamps its start and signals one
    semaphore the driver thread waits on. Back to back: the next op is added as soon as the
    previous body ran (ActorQueue's lingering workers are built for this). Every 1 ms / 10 ms:
    ops arrive on a fixed schedule, so no worker lingers and the pool's threads may sleep.

    PAUSE: every fifth transfer is paused by its user after 2 of its 4 chunks (100 µs each, on
    DispatchQueue timers in both systems) and resumed 1 ms later. ActorQueue's pause→start: from
    the paused transfer's onPause to the first instruction of the transfer that took its slot
    (read from the queue's events). OperationQueue cannot free a paused operation's slot: it
    runs the same script holding the slot while paused, so it has a time row and no pause→start
    figures.

    CHECKPOINT: 1,000,000 calls of ActorQueue.checkpoint() that find nothing to do, in a loop, in
    an operation's body (also with onPause/onResume) and outside any body: the median time in ms
    is the cost per call in ns; cpu/call is the process's CPU time per call, which other work on
    the machine inflates less (the time spent waiting for a core is not counted).

    QUEUES: one scheduler lock serves every ActorQueue in the process. 1, 2, 4, 8, 16 queues
    (max 4 each), each fed by its own thread (OperationQueue) or task (ActorQueue) in bursts of
    4 trivial ops, each burst waited for: total throughput, add→start p99, and the addOperation
    call's p99 and max. Then one queue cancels 100,000 waiting ops while another serves
    back-to-back requests: the served queue's add→start p99 before, and p99 and max during.

    TIME BOUNDS: OperationQueue's dependency handling is quadratic on Linux. Where its run is
    projected (from probe runs at doubling sizes) beyond 3 s per run (graphs; --quick: 1.5 s), it is
    compared at the largest size that fits and its full-size row is marked "cut off"; the
    chain at 4,000 (a goal's size) is always run. In --scaling it runs a size only while its
    projected run time stays under 5 s (--quick: 1.5 s).

    OUTPUT: a table on stdout, then the goals. Every ratio, in the table and the goals, reads
    the same way: the reference's median / this row's (time, latency, CPU or bytes); above 1,
    this row's system is cheaper by that factor. A goal is such a ratio for ActorQueue that must
    be at least a threshold ("costs at most 1.5x" is "≥ 0.67x"). Goals are reported, not enforced:
    the exit status is 0 whatever they show. Progress goes to stderr. A wait that outlasts its
    bound (30 s for one sample, 120 s for one system's run of a scenario) means a stuck scenario:
    the bench names it on stderr and exits with status 1.
    """

  /// Parses `arguments` (without the program name); exits with a message on a usage error.
  static func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var explicitRuns = false
    var rest = arguments[...]
    func value(for flag: String) -> String {
      guard let next = rest.popFirst() else { fail("\(flag) needs a value") }
      return next
    }
    func integer(for flag: String, atLeast minimum: Int) -> Int {
      let text = value(for: flag)
      guard let number = Int(text), number >= minimum else {
        fail("\(flag): expected an integer ≥ \(minimum), got '\(text)'")
      }
      return number
    }
    while let argument = rest.popFirst() {
      switch argument {
      case "-h", "--help":
        print(usage)
        exit(0)
      case "--runs":
        options.runs = integer(for: argument, atLeast: 1)
        explicitRuns = true
      case "--warmups": options.warmups = integer(for: argument, atLeast: 0)
      case "--repeat": options.repeats = integer(for: argument, atLeast: 1)
      case "--quick": options.quick = true
      case "--scaling": options.scaling = true
      case "--json": options.jsonPath = value(for: argument)
      case "--svg": options.svgPath = value(for: argument)
      case "--wide": options.wide = true
      case "--scenario":
        for name in value(for: argument).split(separator: ",") {
          guard let scenario = ScenarioName(rawValue: String(name)) else {
            fail(
              "unknown scenario '\(name)'; one of: \(ScenarioName.allCases.map(\.rawValue).joined(separator: ", "))"
            )
          }
          options.scenarios.append(scenario)
        }
      case "--system":
        guard let system = System(rawValue: value(for: argument)) else {
          fail("--system: one of \(System.allCases.map(\.flag).joined(separator: ", "))")
        }
        options.systems.append(system)
      case "--memory-child":
        let parts = value(for: argument).split(separator: "+", maxSplits: 1).map(String.init)
        guard let system = System(rawValue: parts[0]),
          let variant = parts.count == 1 ? .plain : Memory.Variant(rawValue: parts[1])
        else {
          fail("--memory-child: unknown system or variant")
        }
        options.memoryChild = (system, integer(for: argument, atLeast: 1), variant)
      case "--count":
        guard let workload = CountedWorkload(rawValue: value(for: argument)) else {
          fail("--count: one of \(CountedWorkload.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        options.counted = (workload, integer(for: argument, atLeast: 1))
      default:
        fail("unknown option '\(argument)' (see --help)")
      }
    }
    if options.quick && !explicitRuns { options.runs = 3 }
    return options
  }

  private static func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bench: \(message)\n".utf8))
    exit(2)
  }
}

import ActorQueue
import Foundation

/// A dependency graph, in topological order: `dependencies[i]` are the ops op `i` waits for,
/// all with smaller indices.
struct Graph: Sendable {
  let dependencies: [[Int]]
  var count: Int { dependencies.count }
  var edges: Int { dependencies.reduce(0) { $0 + $1.count } }

  /// 0 → 1 → … → n-1.
  static func chain(_ n: Int) -> Graph {
    Graph(dependencies: (0..<n).map { $0 == 0 ? [] : [$0 - 1] })
  }

  /// `n` independent ops, then one that waits for all of them.
  static func fanIn(_ n: Int) -> Graph {
    Graph(dependencies: Array(repeating: [], count: n) + [Array(0..<n)])
  }

  /// One op, then `n` ops that each wait for it.
  static func fanOut(_ n: Int) -> Graph {
    Graph(dependencies: [[]] + Array(repeating: [0], count: n))
  }

  /// `n` ops; each waits for `edges` distinct ops drawn uniformly from the 1,000 before it
  /// (fewer for the first ops), so the graph is both wide and deep. Seeded: every run and
  /// every system gets the same graph.
  static func random(_ n: Int, edges: Int, seed: UInt64 = 0x5EED_DA6) -> Graph {
    var generator = SplitMix64(seed: seed)
    let window = 1_000
    var dependencies: [[Int]] = []
    dependencies.reserveCapacity(n)
    for index in 0..<n {
      let low = max(0, index - window)
      var chosen: [Int] = []
      let wanted = min(edges, index - low)
      while chosen.count < wanted {
        let candidate = Int.random(in: low..<index, using: &generator)
        if !chosen.contains(candidate) { chosen.append(candidate) }
      }
      dependencies.append(chosen)
    }
    return Graph(dependencies: dependencies)
  }
}

/// Runs a dependency graph to the end in each system. The clock covers creating the ops,
/// declaring every dependency, submitting, and waiting for the last op: what a user pays.
enum Graphs {
  static let taskPerOpNote =
    "graphs' task per op: a Task per op that awaits the Tasks of its dependencies (no limit), the plain Swift way"

  static func run(_ scenario: ScenarioName, _ options: Options, _ sizes: Sizes) -> [Row] {
    switch scenario {
    case .chain:
      // No time bound here: the goal is defined at this size (OperationQueue: about 1–4 s).
      return measure("chain", .chain(sizes.chain), options: options)
        + measure("chain", .chain(sizes.longChain), options: options, systems: [.actorQueue])
    case .fanIn: return bounded("fan-in", n: sizes.fan, Graph.fanIn, options: options, sizes: sizes)
    case .fanOut: return bounded("fan-out", n: sizes.fan, Graph.fanOut, options: options, sizes: sizes)
    case .dag:
      let edges = sizes.dagEdgesPerOp
      return bounded("dag", n: sizes.dag, { .random($0, edges: edges) }, options: options, sizes: sizes)
    default: preconditionFailure("Internal inconsistency: \(scenario) is not a graph scenario")
    }
  }

  /// Measures every system on `make(n)`, unless OperationQueue's run there is projected beyond
  /// `Sizes.graphBoundSeconds`: then every system is compared at the largest size that fits,
  /// and ActorQueue and task per op also run the full size, OperationQueue's row marked cut off.
  /// The projection comes from probe runs of OperationQueue at doubling sizes (not recorded).
  static func bounded(
    _ scenario: String, n: Int, _ make: (Int) -> Graph, options: Options, sizes: Sizes
  ) -> [Row] {
    let all: [System] = [.operationQueue, .actorQueue, .taskPerOp]
    guard options.systems.isEmpty || options.systems.contains(.operationQueue) else {
      return measure(scenario, make(n), options: options, systems: all)
    }
    // Probe sizes double from 250 until a probe takes a quarter of the bound (or reaches n):
    // the last two probes, close to the bound, give the growth (small probes understate it).
    var model = GrowthModel()
    var probe = min(250, n)
    while probe < n {
      Watchdog.arm("OperationQueue's probe run of \(scenario) at n=\(probe)")
      model.add(n: probe, seconds: operationQueue(make(probe)))
      if let last = model.points.last, last.seconds > sizes.graphBoundSeconds / 4 { break }
      probe *= 2
    }
    guard let projected = model.project(to: n), projected > sizes.graphBoundSeconds,
      let fitting = model.largestSize(within: sizes.graphBoundSeconds), fitting < n
    else {
      return measure(scenario, make(n), options: options, systems: all)
    }
    Progress.report(
      "\(scenario): OperationQueue projected at \(Format.duration(projected)) per run for n=\(n): comparing at n=\(fitting)"
    )
    var rows = measure(scenario, make(fitting), options: options, systems: all)
    rows.append(
      Row(
        scenario: scenario, variant: nil, metric: "time", system: .operationQueue, n: make(n).count, runs: 0,
        kind: .throughput,
        note:
          "cut off: OperationQueue's \(scenario) is projected at \(Format.duration(projected)) per run at this size "
          + "(bound \(Format.duration(sizes.graphBoundSeconds)), growth ~N^\(String(format: "%.1f", model.exponent))); "
          + "compared at the largest size that fits instead"))
    rows += measure(scenario, make(n), options: options, systems: [.actorQueue, .taskPerOp])
    return rows
  }

  static func measure(
    _ scenario: String, _ graph: Graph, options: Options,
    systems: [System] = [.operationQueue, .actorQueue, .taskPerOp]
  ) -> [Row] {
    let contenders = systems.map { system in
      Contender(system: system) { [run(graph, on: system)] }
    }
    let samples = runInterleaved(
      "\(scenario) n=\(graph.count) edges=\(graph.edges)", contenders, metrics: 1, options: options)
    return makeRows(
      scenario: scenario, metrics: ["time"], n: graph.count, ops: graph.count, samples: samples,
      runs: options.runs, note: systems.contains(.taskPerOp) ? taskPerOpNote : nil)
  }

  static func run(_ graph: Graph, on system: System) -> Double {
    switch system {
    case .operationQueue: operationQueue(graph)
    case .actorQueue: actorQueue(graph)
    case .taskPerOp: taskPerOp(graph)
    case .adapter, .reusedTasks: preconditionFailure("\(system) has no graph scenario")
    }
  }

  static func operationQueue(_ graph: Graph) -> Double {
    let counter = Counter()
    let queue = OperationQueue()
    let start = now()
    let operations = (0..<graph.count).map { _ in BlockOperation { counter.increment() } }
    for (index, dependencies) in graph.dependencies.enumerated() {
      for dependency in dependencies { operations[index].addDependency(operations[dependency]) }
    }
    queue.addOperations(operations, waitUntilFinished: true)
    let elapsed = secondsSince(start)
    verify(counter.count == graph.count, "OperationQueue ran \(counter.count) of \(graph.count) ops")
    return elapsed
  }

  static func actorQueue(_ graph: Graph) -> Double {
    blocking {
      let counter = Counter()
      let queue = ActorQueue()
      let start = now()
      var operations: [AnyQueueOperation] = (0..<graph.count).map { _ in
        QueueOperation { counter.increment() }
      }
      do {
        for (index, dependencies) in graph.dependencies.enumerated() {
          for dependency in dependencies { try operations[index].addDependency(operations[dependency]) }
        }
        try queue.addOperations(operations)
      } catch {
        preconditionFailure("ActorQueue refused the graph: \(error)")
      }
      await queue.waitUntilAllOperationsAreFinished()
      let elapsed = secondsSince(start)
      verify(counter.count == graph.count, "ActorQueue ran \(counter.count) of \(graph.count) ops")
      await releaseFromTheEnd(&operations)
      return elapsed
    }
  }

  /// Releases the ops last first, each once nothing but this array holds it (not timed).
  ///
  /// An op keeps its dependencies after they end (in both systems, as `dependencies` lists
  /// them), so a long chain is a linked list of strong references: if the last reference to
  /// its tail were dropped while the rest of the chain is otherwise unreferenced, the chain
  /// would be freed recursively, one deinit inside the other, and overflow the stack (seen
  /// from 64,000 ops, on the worker that ended the last op: reported to the core). Waiting until
  /// each op is uniquely held here, then releasing from the end, frees one op at a time.
  static func releaseFromTheEnd(_ operations: inout [AnyQueueOperation]) async {
    while !operations.isEmpty {
      while !isKnownUniquelyReferenced(&operations[operations.count - 1]) { await Task.yield() }
      operations.removeLast()
    }
  }

  static func taskPerOp(_ graph: Graph) -> Double {
    blocking {
      let counter = Counter()
      let start = now()
      var tasks: [Task<Void, Never>] = []
      tasks.reserveCapacity(graph.count)
      for dependencies in graph.dependencies {
        let inputs = dependencies.map { tasks[$0] }
        tasks.append(
          Task {
            for input in inputs { await input.value }
            counter.increment()
          })
      }
      for task in tasks { await task.value }
      let elapsed = secondsSince(start)
      verify(counter.count == graph.count, "task per op ran \(counter.count) of \(graph.count) ops")
      return elapsed
    }
  }
}

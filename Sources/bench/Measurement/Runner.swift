import Foundation

/// The systems compared.
///
/// The two Swift-concurrency references are not ActorQueue's competitors but its bounds:
/// `taskPerOp` is what code without a queue writes (a new task per op: a `TaskGroup` child,
/// with a sliding window of `limit` children when limited; `Task.detached` for latency; a
/// `Task` per graph node), a baseline that ActorQueue, which reuses its worker tasks, should
/// beat. `reusedTasks` is the true lower bound where one exists: the same bodies run in a loop
/// by `limit` long-lived tasks pulling indices from a shared atomic counter, no queue at all.
enum System: String, CaseIterable, Sendable, Codable {
  case operationQueue = "OperationQueue"
  case actorQueue = "ActorQueue"
  case taskPerOp = "task per op"
  case reusedTasks = "reused tasks"
  /// Legacy `Operation`s run through OperationAdapter (see Scenarios/Adapter.swift).
  case adapter = "OperationAdapter"

  /// The name used on the command line (memory child processes).
  init?(rawValue: String) {
    guard let system = Self.allCases.first(where: { $0.rawValue == rawValue || $0.flag == rawValue }) else {
      return nil
    }
    self = system
  }

  var flag: String {
    switch self {
    case .operationQueue: "oq"
    case .actorQueue: "aq"
    case .taskPerOp: "task"
    case .reusedTasks: "reused"
    case .adapter: "adapter"
    }
  }
}

/// One system's way to run one scenario once: returns one value per metric (seconds, or
/// bytes for memory), `.nan` for a value that could not be measured in this run.
struct Contender {
  let system: System
  let trial: () -> [Double]
}

/// Runs `contenders` interleaved: warm-up rounds, then measured rounds; each round runs every
/// system once, starting with a different one each round so no system always goes first.
/// Returns the samples per system, per metric.
func runInterleaved(
  _ label: String, _ contenders: [Contender], metrics: Int, options: Options
) -> [System: [[Double]]] {
  let contenders = contenders.filter { options.systems.isEmpty || options.systems.contains($0.system) }
  guard !contenders.isEmpty else { return [:] }
  var samples: [System: [[Double]]] = [:]
  for contender in contenders { samples[contender.system] = Array(repeating: [], count: metrics) }
  let rounds = options.warmups + options.runs
  for round in 0..<rounds {
    let warmUp = round < options.warmups
    let run = warmUp ? "warm-up" : "run \(round - options.warmups + 1)/\(options.runs)"
    Progress.report("\(label): \(run)")
    for index in contenders.indices {
      let contender = contenders[(index + round) % contenders.count]
      Watchdog.arm("\(contender.system.rawValue)'s \(run) of \(label)")
      let values = contender.trial()
      precondition(
        values.count == metrics, "Internal inconsistency: \(label) returned \(values.count) metrics")
      guard !warmUp else { continue }
      for metric in 0..<metrics { samples[contender.system]![metric].append(values[metric]) }
    }
  }
  return samples
}

/// Progress lines on stderr, so that stdout stays the table.
enum Progress {
  private static let origin = now()

  /// Writes `message` after the time elapsed, wrapped to fit 100 columns.
  static func report(_ message: String) {
    let elapsed = String(format: "%6.1f", secondsSince(origin))
    let lines = Format.wrap(message, width: Table.narrowWidth - 10)
    let text = lines.enumerated().map { index, line in
      (index == 0 ? "[\(elapsed)s] " : String(repeating: " ", count: 10)) + line
    }.joined(separator: "\n")
    FileHandle.standardError.write(Data((text + "\n").utf8))
  }
}

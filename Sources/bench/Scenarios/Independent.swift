import ActorQueue
import Foundation

/// N ops with no dependencies, submitted one by one, then waited for: the cost of the machinery
/// per op, for three kinds of body (`BodyKind`: trivial, ~2 µs of CPU, one `Task.yield()`),
/// unlimited, max 4 and serial.
///
/// How each system runs them; the clock covers submitting every op and waiting for the last:
/// - OperationQueue: `addOperation` from the driver thread (its users are synchronous code),
///   then `waitUntilAllOperationsAreFinished()`, which blocks that thread.
/// - ActorQueue: one task adds every op with `addOperation`, then awaits
///   `waitUntilAllOperationsAreFinished()`.
/// - task per op (baseline): one task adds a `TaskGroup` child per body; when limited, a
///   sliding window: once `limit` children are in flight it awaits `next()` before adding one.
///   Unlimited: a discarding group.
/// - reused tasks (lower bound): `limit` tasks (unlimited: one per core) each run bodies in a
///   loop, taking the next index from a shared atomic counter: no queue, no task per op.
enum Independent {
  static let limits: [(name: String, limit: Int?)] = [("unlimited", nil), ("max 4", 4), ("serial", 1)]

  static func variant(_ limitName: String, _ body: BodyKind) -> String { "\(limitName), \(body.rawValue)" }

  static func run(_ options: Options, _ sizes: Sizes, spinIterations: Int) -> [Row] {
    var rows: [Row] = []
    let n = sizes.independent
    for body in BodyKind.allCases {
      let work = Workload(kind: body, iterations: spinIterations)
      for (limitName, limit) in limits {
        var contenders = [
          Contender(system: .actorQueue) { [actorQueue(n: n, limit: limit, work)] },
          Contender(system: .taskPerOp) { [taskPerOp(n: n, limit: limit, work)] },
          Contender(system: .reusedTasks) { [reusedTasks(n: n, limit: limit, work)] },
        ]
        if body != .yield {
          contenders.insert(
            Contender(system: .operationQueue) { [operationQueue(n: n, limit: limit, work)] }, at: 0)
        }
        let name = variant(limitName, body)
        let samples = runInterleaved("independent \(name) n=\(n)", contenders, metrics: 1, options: options)
        rows += makeRows(
          scenario: "independent", variant: name, metrics: ["time"], n: n, ops: n, samples: samples,
          runs: options.runs, note: note(body, spinIterations: spinIterations))
      }
    }
    return rows
  }

  static func note(_ body: BodyKind, spinIterations: Int) -> String {
    switch body {
    case .trivial:
      "independent: task per op = a TaskGroup child per op (sliding window of `limit` when limited); "
        + "reused tasks = `limit` tasks (unlimited: one per core) looping over a shared atomic counter"
    case .spin:
      "independent, 2 µs CPU: each body runs \(Format.count(spinIterations)) xorshift steps, calibrated at start"
    case .yield:
      "independent, yield: each body awaits Task.yield() once; OperationQueue's synchronous bodies cannot"
    }
  }

  static func operationQueue(n: Int, limit: Int?, _ work: Workload = .trivial) -> Double {
    let counter = Counter()
    guard let body = work.synchronous(counter) else {
      preconditionFailure("Internal inconsistency: OperationQueue given a body that suspends")
    }
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = limit ?? OperationQueue.defaultMaxConcurrentOperationCount
    let start = now()
    for _ in 0..<n { queue.addOperation(body) }
    queue.waitUntilAllOperationsAreFinished()
    let elapsed = secondsSince(start)
    verify(counter.count == n, "OperationQueue ran \(counter.count) of \(n) ops")
    return elapsed
  }

  static func actorQueue(
    n: Int, limit: Int?, _ work: Workload = .trivial, limiters: [RateLimiter] = []
  ) -> Double {
    blocking {
      let counter = Counter()
      let body = work.asynchronous(counter)
      let queue = ActorQueue(
        maxConcurrentOperationCount: limit ?? ActorQueue.defaultMaxConcurrentOperationCount)
      if !limiters.isEmpty { queue.rateLimiters = limiters }
      let start = now()
      for _ in 0..<n { queue.addOperation(body) }
      await queue.waitUntilAllOperationsAreFinished()
      let elapsed = secondsSince(start)
      verify(counter.count == n, "ActorQueue ran \(counter.count) of \(n) ops")
      return elapsed
    }
  }

  /// The baseline: a task per op, as a TaskGroup. Unlimited: a discarding group (the cheapest
  /// structured form). Limited: a sliding window of `limit` child tasks, the next added as soon
  /// as one ends.
  static func taskPerOp(n: Int, limit: Int?, _ work: Workload = .trivial) -> Double {
    blocking {
      let counter = Counter()
      let body = work.asynchronous(counter)
      let start = now()
      if let limit {
        await withTaskGroup(of: Void.self) { group in
          var inFlight = 0
          for _ in 0..<n {
            if inFlight == limit {
              await group.next()
              inFlight -= 1
            }
            group.addTask(operation: body)
            inFlight += 1
          }
          await group.waitForAll()
        }
      } else {
        await withDiscardingTaskGroup { group in
          for _ in 0..<n { group.addTask(operation: body) }
        }
      }
      let elapsed = secondsSince(start)
      verify(counter.count == n, "task per op ran \(counter.count) of \(n) ops")
      return elapsed
    }
  }

  /// The lower bound: `limit` reused tasks (unlimited: one per core), each running bodies in a
  /// loop while the shared counter hands out indices below `n`.
  static func reusedTasks(n: Int, limit: Int?, _ work: Workload = .trivial) -> Double {
    blocking {
      let counter = Counter()
      let body = work.asynchronous(counter)
      let tickets = Tickets()
      let tasks = limit ?? ProcessInfo.processInfo.activeProcessorCount
      let start = now()
      await withDiscardingTaskGroup { group in
        for _ in 0..<tasks {
          group.addTask {
            while tickets.take() < n { await body() }
          }
        }
      }
      let elapsed = secondsSince(start)
      verify(counter.count == n, "reused tasks ran \(counter.count) of \(n) ops")
      return elapsed
    }
  }
}

extension Workload {
  static let trivial = Workload(kind: .trivial, iterations: 0)
}

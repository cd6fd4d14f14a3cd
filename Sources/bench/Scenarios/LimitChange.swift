import ActorQueue
import Foundation
import Synchronization

/// The download manager script (a live limit change under load): transfers of 20–40 ms
/// (seeded) on a queue limited to 3; after 100 ms the limit is raised to 10, after another
/// 100 ms lowered to 5. Measured: the time from each change until the executing count honours
/// it (reaches 10; falls to 5 or below). Lowering never interrupts a running transfer, in
/// either system, so its time is bounded below by the transfers still running.
///
/// The executing count: ActorQueue's own, from `QueueEvent.executingCount` as received by a
/// `queue.events` subscriber (so it includes event delivery); OperationQueue has no such
/// report, so its transfers count themselves. Transfers wait without holding a thread in both:
/// `Task.sleep` in an ActorQueue body; in OperationQueue, the asynchronous `Operation`
/// subclass its users write for downloads (`isAsynchronous`, KVO on `isExecuting`/`isFinished`)
/// that finishes from a timer. (A synchronous body that blocks in `usleep` would measure
/// libdispatch's thread pool instead: on 2 cores it never reached 10 running transfers in
/// 100 ms.) No task-per-op baseline: a TaskGroup has no live limit.
enum LimitChange {
  static let phase = Duration.milliseconds(100)

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    var generator = SplitMix64(seed: 0xD0_0AD5)
    let durations = (0..<sizes.transfers).map { _ in UInt32.random(in: 20_000...40_000, using: &generator) }
    let samples = runInterleaved(
      "limit-change transfers=\(durations.count)",
      [
        Contender(system: .operationQueue) { operationQueue(durations) },
        Contender(system: .actorQueue) { actorQueue(durations) },
      ], metrics: 2, options: options)
    return makeRows(
      scenario: "limit-change", metrics: ["3→10", "10→5"], n: durations.count, ops: nil, samples: samples,
      runs: options.runs,
      note: "limit-change: time from setting the limit until the executing count honours it; n = transfers")
  }

  /// A log of (time, executing count) changes.
  typealias Log = [(Instant, Int)]

  static func operationQueue(_ durations: [UInt32]) -> [Double] {
    let state = Mutex<(executing: Int, log: Log)>((0, []))
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 3
    let record: @Sendable (Int) -> Void = { change in
      state.withLock { state in
        state.executing += change
        state.log.append((now(), state.executing))
      }
    }
    queue.addOperations(
      durations.map { TransferOperation(microseconds: $0, record: record) }, waitUntilFinished: false)
    Thread.sleep(forTimeInterval: phase.seconds)
    let raised = now()
    queue.maxConcurrentOperationCount = 10
    Thread.sleep(forTimeInterval: phase.seconds)
    let lowered = now()
    queue.maxConcurrentOperationCount = 5
    queue.waitUntilAllOperationsAreFinished()
    let log = state.withLock { $0.log }
    return [
      honoured(log, from: raised, before: lowered) { $0 >= 10 },
      honoured(log, from: lowered, before: nil) { $0 <= 5 },
    ]
  }

  static func actorQueue(_ durations: [UInt32]) -> [Double] {
    blocking {
      let queue = ActorQueue(maxConcurrentOperationCount: 3)
      let events = queue.events
      let count = durations.count
      let observer = Task {
        var log: Log = []
        var ended = 0
        for await event in events {
          log.append((now(), event.executingCount))
          if event.operationState?.isTerminal == true {
            ended += 1
            if ended == count { break }
          }
        }
        return log
      }
      for duration in durations {
        queue.addOperation { try? await Task.sleep(for: .microseconds(duration)) }
      }
      try? await Task.sleep(for: phase)
      let raised = now()
      queue.maxConcurrentOperationCount = 10
      try? await Task.sleep(for: phase)
      let lowered = now()
      queue.maxConcurrentOperationCount = 5
      await queue.waitUntilAllOperationsAreFinished()
      let log = await observer.value
      return [
        honoured(log, from: raised, before: lowered) { $0 >= 10 },
        honoured(log, from: lowered, before: nil) { $0 <= 5 },
      ]
    }
  }

  /// Seconds from `start` until the logged executing count satisfies `condition` (0 if it
  /// already did at `start`); `.nan` if it never did before `end`.
  static func honoured(_ log: Log, from start: Instant, before end: Instant?, _ condition: (Int) -> Bool)
    -> Double
  {
    let sorted = log.sorted { $0.0 < $1.0 }
    if let current = sorted.last(where: { $0.0 < start }), condition(current.1) { return 0 }
    guard let reached = sorted.first(where: { $0.0 >= start && condition($0.1) }) else { return .nan }
    if let end, reached.0 > end { return .nan }
    return (reached.0 - start).seconds
  }
}

/// A simulated transfer as OperationQueue users write one: an asynchronous `Operation` whose
/// work completes later, from a timer, holding no thread meanwhile; it reports its start (+1)
/// and end (-1) to `record`.
private final class TransferOperation: AsynchronousOperation, @unchecked Sendable {
  // `@unchecked Sendable`: as its base class; its own fields are immutable.
  private let microseconds: UInt32
  private let record: @Sendable (Int) -> Void

  init(microseconds: UInt32, record: @escaping @Sendable (Int) -> Void) {
    self.microseconds = microseconds
    self.record = record
  }

  override func work() {
    record(+1)
    DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int(microseconds))) {
      self.record(-1)
      self.finish()
    }
  }
}

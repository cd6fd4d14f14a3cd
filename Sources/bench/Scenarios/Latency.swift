import ActorQueue
import Dispatch
import Foundation

/// Add→start latency: the time from the submitting call to the first instruction of the body,
/// one op at a time, under three arrival patterns:
/// - back to back: each op is added as soon as the previous body has run (a request/response
///   loop). This is what ActorQueue's lingering workers are built for (see `LingerPolicy`): a
///   worker that just ran a body is most likely still awake when the next op arrives.
/// - every 1 ms, every 10 ms: ops arrive on a fixed schedule, far apart enough that no worker
///   lingers (ActorQueue's linger window is 100 µs) and the pool's threads may sleep: the
///   latency of a queue fed from time to time, the usual app case.
///
/// Every system is driven and waited for the same way, from the driver thread: take the time,
/// submit, then wait on one semaphore, which the body signals right after stamping its start
/// time. The next op does not wait for the previous one's bookkeeping to end in any system.
///
/// Spaced arrivals are taken with the systems in turn (OperationQueue, ActorQueue, task per
/// op, OperationQueue, …), each start after the same quiet spell, so that every system meets
/// every phase of a machine whose speed drifts: on the bench's two-core virtual machine, the
/// p50 of a block of 200 starts 10 ms apart moved by 10 µs and more from one block to the next,
/// as much as the systems differ, while the systems' medians taken in turn moved by 1–2 µs. The
/// quiet before each start is the spacing; a system's own previous start was one round of
/// systems earlier. Back to back stays a block per system (the point is its own previous op).
/// The task-per-op baseline is `Task.detached` (the cheapest way to start work on the pool
/// from a thread). Per run: the p50 and p99 of the samples, and the process's CPU time per
/// sample (every thread, user and system; the driver's own share is the same for every
/// system), which shows what a latency costs: a lingering worker's polling is counted here.
/// The table shows the median over runs.
enum Latency {
  /// The arrival patterns: `nil`: back to back.
  static func arrivals(_ sizes: Sizes) -> [(name: String, spacing: Duration?, samples: Int)] {
    [
      ("back to back", nil, sizes.latencySamples),
      ("every 1 ms", .milliseconds(1), sizes.latencySamplesEvery1ms),
      ("every 10 ms", .milliseconds(10), sizes.latencySamplesEvery10ms),
    ]
  }

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    var rows: [Row] = []
    for (name, spacing, count) in arrivals(sizes) {
      let samples: [System: [[Double]]]
      if let spacing {
        samples = runInTurn("latency \(name) samples=\(count)", count, spacing: spacing, options: options)
      } else {
        samples = runInterleaved(
          "latency \(name) samples=\(count)",
          [
            Contender(system: .operationQueue) {
              let queue = OperationQueue()
              return percentiles(count, spacing: nil) { queue.addOperation($0) }
            },
            Contender(system: .actorQueue) {
              let queue = ActorQueue()
              return percentiles(count, spacing: nil) { queue.addOperation($0) }
            },
            Contender(system: .taskPerOp) {
              percentiles(count, spacing: nil) { Task.detached(operation: $0) }
            },
          ], metrics: 3, options: options)
      }
      rows += makeRows(
        scenario: "latency", variant: name, metrics: ["p50", "p99", "cpu/op"], n: count, ops: nil,
        kinds: [.latency, .latency, .cpuPerOp], samples: samples, runs: options.runs,
        note: "latency: add→start, one op at a time, each system waited for by one semaphore the body "
          + "signals; spaced arrivals: the systems in turn, each start after the same quiet spell; "
          + "n is the number of samples per system per run; cpu/op: the process's CPU time (all threads) per sample; "
          + "task per op: Task.detached")
    }
    return rows
  }

  /// Spaced arrivals with the systems in turn: warm-up rounds, then `options.runs` measured
  /// rounds, each taking `count` samples of every system, one start per system in turn, each
  /// after `spacing` of quiet. Returns per system, per metric, one value per measured round.
  private static func runInTurn(
    _ label: String, _ count: Int, spacing: Duration, options: Options
  ) -> [System: [[Double]]] {
    var samples: [System: [[Double]]] = [:]
    for round in 0..<(options.warmups + options.runs) {
      let warmUp = round < options.warmups
      let run = warmUp ? "warm-up" : "run \(round - options.warmups + 1)/\(options.runs)"
      Progress.report("\(label): \(run)")
      Watchdog.arm("the \(run) of \(label)")
      let operationQueue = OperationQueue()
      let actorQueue = ActorQueue()
      let submitters: [(system: System, submit: (@escaping @Sendable () -> Void) -> Void)] = [
        (.operationQueue, { operationQueue.addOperation($0) }),
        (.actorQueue, { actorQueue.addOperation($0) }),
        (.taskPerOp, { Task.detached(operation: $0) }),
      ].filter { options.systems.isEmpty || options.systems.contains($0.system) }
      guard !submitters.isEmpty else { return [:] }
      // A different system starts each round, as in `runInterleaved`.
      let rotated = Array(
        submitters[(round % submitters.count)...] + submitters[..<(round % submitters.count)])
      let values = percentilesInTurn(count, spacing: spacing, rotated)
      guard !warmUp else { continue }
      for (system, metrics) in values {
        if samples[system] == nil { samples[system] = Array(repeating: [], count: metrics.count) }
        for (metric, value) in metrics.enumerated() { samples[system]![metric].append(value) }
      }
    }
    return samples
  }

  /// Measures `count` add→start latencies of each of `submitters`, one start of each in turn,
  /// each `spacing` after the one before; returns per system [p50, p99, CPU time per sample] in
  /// seconds. A sample's CPU time runs from just before its start to just before the next start
  /// (of another system), so it holds what the system did after the body ran (a worker's end,
  /// its retirement), and the quiet spell, in which nothing else runs.
  private static func percentilesInTurn(
    _ count: Int, spacing: Duration,
    _ submitters: [(system: System, submit: (@escaping @Sendable () -> Void) -> Void)]
  ) -> [System: [Double]] {
    let started = Box<Instant?>(nil)
    let ran = DispatchSemaphore(value: 0)
    let body: @Sendable () -> Void = {
      started.set(now())
      ran.signal()
    }
    var latencies = Array(repeating: [Double](), count: submitters.count)
    var cpu = Array(repeating: 0.0, count: submitters.count)
    for index in latencies.indices { latencies[index].reserveCapacity(count) }
    var due = now()
    var previous: (index: Int, cpu: Double)?
    for sample in 0...(count * submitters.count) {
      due += spacing
      let wait = now().duration(to: due)
      if wait > .zero { Thread.sleep(forTimeInterval: wait.seconds) }
      let cpuNow = processCPUSeconds()
      if let previous { cpu[previous.index] += cpuNow - previous.cpu }
      // One more quiet spell after the last start, to close its CPU sample.
      guard sample < count * submitters.count else { break }
      let index = sample % submitters.count
      previous = (index, cpuNow)
      started.set(nil)
      let submitted = now()
      submitters[index].submit(body)
      ran.wait(for: "the start of \(submitters[index].system.rawValue)'s op")
      guard let start = started.get() else { preconditionFailure("Internal inconsistency: no start time") }
      latencies[index].append((start - submitted).seconds)
    }
    var result: [System: [Double]] = [:]
    for (index, submitter) in submitters.enumerated() {
      let sorted = latencies[index].sorted()
      result[submitter.system] = [
        Statistics.percentile(0.5, ofSorted: sorted), Statistics.percentile(0.99, ofSorted: sorted),
        cpu[index] / Double(count),
      ]
    }
    return result
  }

  /// Measures `count` add→start latencies with `submit`, an op added `spacing` after the
  /// previous one was (or at once, once the previous body ran, when `nil`); returns [p50, p99,
  /// CPU time per sample] in seconds.
  private static func percentiles(
    _ count: Int, spacing: Duration?, submit: (@escaping @Sendable () -> Void) -> Void
  ) -> [Double] {
    let started = Box<Instant?>(nil)
    let ran = DispatchSemaphore(value: 0)
    let body: @Sendable () -> Void = {
      started.set(now())
      ran.signal()
    }
    var latencies: [Double] = []
    latencies.reserveCapacity(count)
    let cpuAtStart = processCPUSeconds()
    var due = now()
    for _ in 0..<count {
      if let spacing {
        due += spacing
        let wait = now().duration(to: due)
        if wait > .zero { Thread.sleep(forTimeInterval: wait.seconds) }
      }
      let submitted = now()
      submit(body)
      ran.wait(for: "the start of an op")
      guard let start = started.get() else { preconditionFailure("Internal inconsistency: no start time") }
      latencies.append((start - submitted).seconds)
    }
    let cpuPerSample = (processCPUSeconds() - cpuAtStart) / Double(count)
    latencies.sort()
    return [
      Statistics.percentile(0.5, ofSorted: latencies), Statistics.percentile(0.99, ofSorted: latencies),
      cpuPerSample,
    ]
  }
}

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
      let samples = runInterleaved(
        "latency \(name) samples=\(count)",
        [
          Contender(system: .operationQueue) {
            let queue = OperationQueue()
            return percentiles(count, spacing: spacing) { queue.addOperation($0) }
          },
          Contender(system: .actorQueue) {
            let queue = ActorQueue()
            return percentiles(count, spacing: spacing) { queue.addOperation($0) }
          },
          Contender(system: .taskPerOp) {
            percentiles(count, spacing: spacing) { Task.detached(operation: $0) }
          },
        ], metrics: 3, options: options)
      rows += makeRows(
        scenario: "latency", variant: name, metrics: ["p50", "p99", "cpu/op"], n: count, ops: nil,
        kinds: [.latency, .latency, .cpuPerOp], samples: samples, runs: options.runs,
        note: "latency: add→start, one op at a time, each system waited for by one semaphore the body "
          + "signals; n is the number of samples per run; cpu/op: the process's CPU time (all threads) per sample; "
          + "task per op: Task.detached")
    }
    return rows
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
      ran.wait()
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

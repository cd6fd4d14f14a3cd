import ActorQueue
import Dispatch
import Foundation

/// Add→start latency on an idle queue: the time from the submitting call to the first
/// instruction of the body, one op at a time (the next is added once the previous body ran).
///
/// Every system is driven the same way, from the driver thread: take the time, submit, the
/// body takes the time and signals a semaphore. The floor is `Task.detached` (the cheapest way
/// to start work on the pool from a thread). Per run: the p50 and p99 of `latencySamples`
/// samples, and the process's CPU time per sample (every thread, user and system), which shows
/// what a latency costs: ActorQueue's workers linger briefly on a queue fed back to back
/// (see `LingerPolicy`), and that time is counted here. The table shows the median over runs.
enum Latency {
  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let count = sizes.latencySamples
    let samples = runInterleaved(
      "latency samples=\(count)",
      [
        Contender(system: .operationQueue) {
          let queue = OperationQueue()
          return percentiles(count) { body in
            queue.addOperation(body)
            return { queue.waitUntilAllOperationsAreFinished() }
          }
        },
        Contender(system: .actorQueue) {
          let queue = ActorQueue()
          return percentiles(count) { body in
            let ended = DispatchSemaphore(value: 0)
            queue.addOperation(body).onCompletion { _ in ended.signal() }
            return { ended.wait() }
          }
        },
        Contender(system: .floor) {
          percentiles(count) { body in
            Task.detached(operation: body)
            return {}
          }
        },
      ], metrics: 3, options: options)
    return makeRows(
      scenario: "latency", metrics: ["p50", "p99", "cpu/op"], n: count, ops: nil, samples: samples,
      runs: options.runs,
      note: "latency: add→start on an idle queue, one op at a time; n is the number of samples per run; "
        + "cpu/op: the process's CPU time (all threads) per sample")
  }

  /// Measures `count` add→start latencies with `submit`; returns [p50, p99, CPU time per
  /// sample] in seconds.
  /// `submit` returns a wait for the op's end, so that each op starts on an idle queue.
  private static func percentiles(
    _ count: Int, submit: (@escaping @Sendable () -> Void) -> () -> Void
  ) -> [Double] {
    let started = Box<Instant?>(nil)
    let ran = DispatchSemaphore(value: 0)
    var latencies: [Double] = []
    latencies.reserveCapacity(count)
    let cpuAtStart = processCPUSeconds()
    for _ in 0..<count {
      let submitted = now()
      let idle = submit {
        started.set(now())
        ran.signal()
      }
      ran.wait()
      idle()
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

import ActorQueue
import Foundation

/// What a progress report costs (issue 33): N `complete()` calls on an operation's
/// `ProgressReporter` in its body, timed, against the same N increments of a Foundation
/// `Progress`'s `completedUnitCount` (its OperationQueue row: the object an `Operation` reports
/// through). A report takes no lock; issue 33 bounds it at 50 ns (the `time` row's goal) and in
/// instructions (≤ 60: Scripts/instructions.sh, `progress-report`). As `checkpoint`'s rows: `time`
/// per 1,000,000 calls in ms reads as ns per call, and `cpu/call` is the process's CPU time per call.
enum ProgressReports {
  static let variant = "complete() in a body"

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let n = sizes.checkpointCalls
    let samples = runInterleaved(
      "progress \(variant) calls=\(n)",
      [
        Contender(system: .operationQueue) { foundation(n) },
        Contender(system: .actorQueue) { actorQueue(n) },
      ], metrics: 2, options: options)
    return makeRows(
      scenario: "progress", variant: variant, metrics: ["time", "cpu/call"], n: n, ops: n,
      kinds: [.throughput, .cpuPerOp], samples: samples, runs: options.runs,
      note:
        "progress: ProgressReporter.complete() calls in an operation's body, n = calls (time per 1,000,000 calls "
        + "in ms = ns per call); OperationQueue: the same increments of a Foundation Progress's completedUnitCount"
    )
  }

  /// [seconds, CPU seconds per call] for `n` reports in one operation's body.
  static func actorQueue(_ n: Int) -> [Double] {
    blocking {
      let queue = ActorQueue(name: "progress")
      let operation = queue.addOperation(reportingProgress: { progress -> [Double] in
        progress.setTotal(n)
        let cpu = processCPUSeconds()
        let start = now()
        for _ in 0..<n { progress.complete() }
        let elapsed = secondsSince(start)
        return [elapsed, (processCPUSeconds() - cpu) / Double(n)]
      })
      do {
        let measured = try await operation.value
        verify(
          operation.progress.completed == n,
          "ActorQueue counted \(operation.progress.completed) of \(n) reports")
        return measured
      } catch {
        preconditionFailure("bench: a reporting body threw \(error)")
      }
    }
  }

  /// [seconds, CPU seconds per call] for `n` increments of a `Progress`.
  static func foundation(_ n: Int) -> [Double] {
    let progress = Foundation.Progress(totalUnitCount: Int64(n))
    let cpu = processCPUSeconds()
    let start = now()
    for _ in 0..<n { progress.completedUnitCount += 1 }
    let elapsed = secondsSince(start)
    verify(
      progress.completedUnitCount == Int64(n), "Foundation counted \(progress.completedUnitCount) of \(n)")
    return [elapsed, (processCPUSeconds() - cpu) / Double(n)]
  }

  /// One operation that reports `n` times (`--count progress-report`).
  static func count(_ n: Int) {
    let queue = ActorQueue(name: "progress")
    let done = DispatchSemaphore(value: 0)
    let operation = queue.addOperation(reportingProgress: { progress in
      progress.setTotal(n)
      for _ in 0..<n { progress.complete() }
    })
    operation.onCompletion { _ in done.signal() }
    done.wait(for: "the reporting op's end", atMost: Bounds.counted)
  }
}

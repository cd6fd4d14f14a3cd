import ActorQueue
import Dispatch
import Foundation
import Synchronization

/// Timer lateness on the system clock: how long after its instant a deadline acts, against a
/// bare `Task.sleep(until:tolerance: .zero)` measured in the same run (issue 28). One timer at a
/// time, each 2 ms ahead, from the driver thread; lateness is read on the same clock the
/// deadline is an instant of (`QueueClock.system`), in the callback that sees the deadline act:
/// - waiting op's end: an op in a suspended queue whose deadline passes; its completion handler
///   stamps (the time until a waiting operation's end);
/// - executing op's cancellation: a body that sleeps until cancelled; the task's cancellation
///   handler stamps (the time until the body sees its deadline). An op that has not started by
///   its deadline ends failed without running its body: its completion handler records the
///   sample as missed.
/// The task-per-op row is the bare sleep: a detached task that sleeps until the instant, then
/// stamps. Per run: p50 and p99 of the samples stamped, and how many were missed.
enum Timers {
  static let variants = ["waiting op's end", "executing op's cancellation"]

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    var rows: [Row] = []
    let count = sizes.timerSamples
    for (index, variant) in variants.enumerated() {
      let label = "timers \(variant) samples=\(count)"
      let samples = runInterleaved(
        label,
        [
          Contender(system: .taskPerOp) {
            percentiles(count, label) { sample in sleep(until: sample.due, then: sample.stamp) }
          },
          Contender(system: .actorQueue) {
            index == 0 ? waitingEnds(count, label) : executingCancellations(count, label)
          },
        ], metrics: 3, options: options)
      var variantRows = makeRows(
        scenario: "timers", variant: variant, metrics: ["p50", "p99"], n: count, ops: nil,
        kinds: [.latency, .latency], samples: samples.mapValues { Array($0.prefix(2)) }, runs: options.runs,
        note: "timers: lateness of a deadline 2 ms ahead on the system clock, one at a time; task per op: "
          + "Task.sleep(until:tolerance: .zero) in a detached task, stamped when it wakes; a sample whose op "
          + "ended before its body ran (its deadline passed before it started) is missed, not a lateness")
      for row in variantRows.indices {
        variantRows[row].missedSamples = samples[variantRows[row].system].map { Int($0[2].reduce(0, +)) }
      }
      rows += variantRows
    }
    return rows
  }

  /// The bare sleep: a detached task sleeps until `due`, then stamps.
  private static func sleep(until due: QueueDeadline, then stamp: @escaping @Sendable () -> Void) {
    Task.detached {
      try? await Task.sleep(for: due.remaining, tolerance: .zero)
      stamp()
    }
  }

  private static func waitingEnds(_ count: Int, _ label: String) -> [Double] {
    let queue = ActorQueue(name: "timers")
    queue.isSuspended = true
    return percentiles(count, label) { sample in
      // In a suspended queue, the deadline is the only way the op can end.
      queue.addOperation(traits: [.deadline(sample.due)]) {}.onCompletion { _ in sample.stamp() }
    }
  }

  private static func executingCancellations(_ count: Int, _ label: String) -> [Double] {
    let queue = ActorQueue(name: "timers")
    return percentiles(count, label) { sample in
      queue.addOperation(traits: [.deadline(sample.due)]) {
        sample.bodyStarted()
        await withTaskCancellationHandler {
          try? await Task.sleep(for: .seconds(60))
        } onCancel: {
          sample.stamp()
        }
      }.onCompletion { result in
        // Every end resolves the sample: a body that ran has stamped by now (its handler runs
        // before the body returns); one that never ran, its deadline passed first, is missed.
        if sample.hasBodyStarted {
          sample.stamp()
        } else {
          sample.miss("the op ended before its body ran: \(result)")
        }
      }
    }
  }

  /// One lateness sample: a deadline 2 ms ahead, and how the op given it ended, recorded once by
  /// whichever callback comes first; the driver waits for it.
  final class Sample: Sendable {
    enum Outcome: Sendable {
      /// How late the deadline acted.
      case late(Duration)
      /// Why nothing stamped.
      case missed(String)
    }

    let due = QueueClock.system.deadline(in: .milliseconds(2))
    private let outcome = Mutex<Outcome?>(nil)
    private let started = Atomic<Bool>(false)
    private let resolved = DispatchSemaphore(value: 0)

    /// Records how late the deadline acted (now), unless the sample already has an outcome.
    func stamp() { resolve(.late(.zero - due.remaining)) }

    /// Records that no lateness can be read, unless the sample already has an outcome.
    func miss(_ reason: String) { resolve(.missed(reason)) }

    func bodyStarted() { started.store(true, ordering: .releasing) }
    var hasBodyStarted: Bool { started.load(ordering: .acquiring) }

    private func resolve(_ value: Outcome) {
      let first = outcome.withLock { outcome in
        guard outcome == nil else { return false }
        outcome = value
        return true
      }
      if first { resolved.signal() }
    }

    /// The outcome, once a callback recorded it; a stuck scenario if none does in time.
    func wait(_ what: @autoclosure () -> String) -> Outcome {
      resolved.wait(for: what())
      guard let outcome = outcome.withLock({ $0 }) else {
        preconditionFailure("Internal inconsistency: a signal without an outcome")
      }
      return outcome
    }
  }

  /// Measures `count` latenesses: for each, `arm` gives a new sample's deadline to the system,
  /// whose callbacks resolve it; returns [p50, p99, samples missed] (seconds, seconds, count).
  private static func percentiles(_ count: Int, _ label: String, arm: (Sample) -> Void) -> [Double] {
    var latenesses: [Double] = []
    latenesses.reserveCapacity(count)
    var missed: [String] = []
    for index in 0..<count {
      let sample = Sample()
      arm(sample)
      switch sample.wait("the end of sample \(index + 1) of \(label)") {
      case .late(let lateness): latenesses.append(lateness.seconds)
      case .missed(let reason): missed.append(reason)
      }
    }
    if let first = missed.first {
      Progress.report("\(label): missed \(missed.count) of \(count) samples (first: \(first))")
    }
    guard !latenesses.isEmpty else { return [.nan, .nan, Double(missed.count)] }
    latenesses.sort()
    return [
      Statistics.percentile(0.5, ofSorted: latenesses), Statistics.percentile(0.99, ofSorted: latenesses),
      Double(missed.count),
    ]
  }
}

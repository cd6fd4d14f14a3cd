import ActorQueue
import Dispatch
import Foundation

/// Timer lateness on the system clock: how long after its instant a deadline acts, against a
/// bare `Task.sleep(until:tolerance: .zero)` measured in the same run (issue 28). One timer at a
/// time, each 2 ms ahead, from the driver thread; lateness is read on the same clock the
/// deadline is an instant of (`QueueClock.system`), in the callback that sees the deadline act:
/// - waiting op's end: an op in a suspended queue whose deadline passes; its completion handler
///   stamps (the time until a waiting operation's end);
/// - executing op's cancellation: a body that sleeps until cancelled; the task's cancellation
///   handler stamps (the time until the body sees its deadline).
/// The task-per-op row is the bare sleep: a detached task that sleeps until the instant, then
/// stamps. Per run: p50 and p99 of the samples.
enum Timers {
  static let variants = ["waiting op's end", "executing op's cancellation"]

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    var rows: [Row] = []
    let count = sizes.timerSamples
    for (index, variant) in variants.enumerated() {
      let samples = runInterleaved(
        "timers \(variant) samples=\(count)",
        [
          Contender(system: .taskPerOp) {
            percentiles(count) { due, stamp in sleep(until: due, then: stamp) }
          },
          Contender(system: .actorQueue) {
            index == 0 ? waitingEnds(count) : executingCancellations(count)
          },
        ], metrics: 2, options: options)
      rows += makeRows(
        scenario: "timers", variant: variant, metrics: ["p50", "p99"], n: count, ops: nil,
        kinds: [.latency, .latency], samples: samples, runs: options.runs,
        note: "timers: lateness of a deadline 2 ms ahead on the system clock, one at a time; task per op: "
          + "Task.sleep(until:tolerance: .zero) in a detached task, stamped when it wakes")
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

  private static func waitingEnds(_ count: Int) -> [Double] {
    let queue = ActorQueue(name: "timers")
    queue.isSuspended = true
    return percentiles(count) { due, stamp in
      queue.addOperation(traits: [.deadline(due)]) {}.onCompletion { _ in stamp() }
    }
  }

  private static func executingCancellations(_ count: Int) -> [Double] {
    let queue = ActorQueue(name: "timers")
    return percentiles(count) { due, stamp in
      queue.addOperation(traits: [.deadline(due)]) {
        await withTaskCancellationHandler {
          try? await Task.sleep(for: .seconds(60))
        } onCancel: {
          stamp()
        }
      }
    }
  }

  /// Measures `count` latenesses: for each, a deadline 2 ms ahead is given to `arm`, whose
  /// callback stamps how late it came; returns [p50, p99] in seconds.
  private static func percentiles(
    _ count: Int, arm: (QueueDeadline, @escaping @Sendable () -> Void) -> Void
  ) -> [Double] {
    let late = Box<Duration?>(nil)
    let stamped = DispatchSemaphore(value: 0)
    var latenesses: [Double] = []
    latenesses.reserveCapacity(count)
    for _ in 0..<count {
      let due = QueueClock.system.deadline(in: .milliseconds(2))
      late.set(nil)
      arm(due) {
        late.set(.zero - due.remaining)
        stamped.signal()
      }
      stamped.wait(for: "the stamp of a timer 2 ms ahead")
      guard let lateness = late.get() else { preconditionFailure("Internal inconsistency: no stamp") }
      latenesses.append(lateness.seconds)
    }
    latenesses.sort()
    return [
      Statistics.percentile(0.5, ofSorted: latenesses), Statistics.percentile(0.99, ofSorted: latenesses),
    ]
  }
}

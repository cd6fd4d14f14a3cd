import ActorQueue
import Dispatch
import Foundation
import OperationAdapter

/// What the adapter exists for: legacy operations whose `main()` blocks (1 ms `Thread.sleep`,
/// standing for synchronous I/O or a semaphore wait), run alongside async Swift work in the same
/// process. Measures how long the Swift work is delayed while they run.
///
/// The Swift work is a stream of probes, one after another from the driver thread: a
/// `Task.detached` whose body records when it started; its delay is start minus creation. Probes
/// run from the moment the legacy operations are submitted until they have all finished.
/// - OperationQueue (default, unlimited): on Linux its threads are Dispatch's global pool,
///   which the Swift cooperative executor shares, so blocked `main()`s hold the threads the
///   probes need until Dispatch adds threads.
/// - OperationAdapter (an unlimited ActorQueue): the `main()`s block the adapter's own threads.
/// - "TaskGroup floor" row: the probes with no legacy work at all (the delay of an idle pool).
///
/// Metrics per run: the probes' p50, p99 and maximum delay, and the time until every legacy
/// operation finished.
enum AdapterBlocking {
  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let count = options.quick ? 100 : 400
    let samples = runInterleaved(
      "adapter-blocking n=\(count)",
      [
        Contender(system: .operationQueue) {
          let queue = OperationQueue()
          return measure(count) { operations in
            queue.addOperations(operations, waitUntilFinished: false)
            return { queue.waitUntilAllOperationsAreFinished() }
          }
        },
        Contender(system: .adapter) {
          let queue = ActorQueue()
          return measure(count) { operations in
            do {
              try queue.addOperations(legacy: operations)
            } catch {
              preconditionFailure("bench: fresh BlockOperations were refused by the adapter: \(error)")
            }
            return { blocking { await queue.waitUntilAllOperationsAreFinished() } }
          }
        },
        Contender(system: .taskPerOp) { measure(0) { _ in {} } },
      ], metrics: 4, options: options)
    return makeRows(
      scenario: "adapter-blocking", metrics: ["swift p50", "swift p99", "swift max", "legacy done"], n: count,
      ops: nil, samples: samples, runs: options.runs,
      note: "adapter-blocking: n legacy ops whose main() sleeps 1 ms, and async probes meanwhile; "
        + "swift p50/p99/max: delay of a Task.detached probe; task per op row: the same probes with no "
        + "legacy work (the baseline)")
  }

  /// Submits `count` blocking operations with `submit` (which returns a blocking wait for them
  /// all), probes the Swift pool until they have finished (at least 200 probes for the floor),
  /// and returns [p50, p99, max probe delay, time until the operations finished] in seconds.
  private static func measure(_ count: Int, submit: ([Operation]) -> @Sendable () -> Void) -> [Double] {
    let operations: [Operation] = (0..<count).map { _ in
      BlockOperation { Thread.sleep(forTimeInterval: 0.001) }
    }
    let finished = Box<Double?>(nil)
    let allDone = DispatchSemaphore(value: 0)
    let start = now()
    let wait = submit(operations)
    let waiter = Thread {
      wait()
      finished.set(secondsSince(start))
      allDone.signal()
    }
    waiter.start()

    let started = Box<Instant?>(nil)
    let ran = DispatchSemaphore(value: 0)
    var delays: [Double] = []
    while finished.get() == nil || (count == 0 && delays.count < 200) {
      let created = now()
      Task.detached {
        started.set(now())
        ran.signal()
      }
      ran.wait(for: "the start of a probe task")
      guard let probeStart = started.get() else {
        preconditionFailure("Internal inconsistency: no start time")
      }
      delays.append((probeStart - created).seconds)
    }
    allDone.wait(for: "the blocking wait for the legacy ops", atMost: Bounds.trial)
    delays.sort()
    return [
      Statistics.percentile(0.5, ofSorted: delays), Statistics.percentile(0.99, ofSorted: delays),
      delays.last ?? .nan, finished.get() ?? .nan,
    ]
  }
}

import ActorQueue
import Dispatch
import Foundation
import Synchronization

/// Many queues at once. ActorQueue's scheduler has one lock for every queue in the process
/// (dependencies may join any two queues), so queues that share nothing still take turns on
/// it; OperationQueue has a lock per queue. Two measurements:
///
/// 1. 1, 2, 4, 8, 16 queues (max 4 each), each fed by its own feeder (OperationQueue: a thread,
///    its users' way; ActorQueue: a task) with independent trivial ops, `total` ops in all. A
///    feeder adds 4 ops (the limit), waits for its queue to finish them, and repeats, so every
///    op is added to a queue with a free slot and its add→start latency is the scheduling
///    delay, not a backlog. Reported: the total throughput; the add→start p99 over every op;
///    the p99 and the longest `addOperation` call (the time a submitter can be held up,
///    waiting for the lock).
/// 2. One queue cancels `cancel` waiting ops (`cancelAllOperations()`, from another thread)
///    while another queue serves back-to-back requests from the driver thread (add one op,
///    wait for its body to signal, repeat). Reported: the other queue's add→start p99 before
///    the cancel, and its p99 and max for the requests that overlap the cancel (from the call
///    until every cancelled op is terminal; OperationQueue must be resumed for that).
enum ManyQueues {
  static let queueCounts = [1, 2, 4, 8, 16]
  static let limit = 4

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    var rows: [Row] = []
    for queues in queueCounts {
      let perQueue = sizes.manyQueuesOps / queues / limit * limit
      let n = perQueue * queues
      let samples = runInterleaved(
        "queues \(queues) n=\(n)",
        [
          Contender(system: .operationQueue) { operationQueues(queues, perQueue: perQueue) },
          Contender(system: .actorQueue) { actorQueues(queues, perQueue: perQueue) },
        ], metrics: 4, options: options)
      rows += makeRows(
        scenario: "queues", variant: queues == 1 ? "1 queue" : "\(queues) queues",
        metrics: ["time", "add→start p99", "addOperation p99", "addOperation max"], n: n, ops: n,
        kinds: [.throughput, .latency, .latency, .latency], samples: samples, runs: options.runs,
        note:
          "queues: N queues (max 4 each), each fed by its own thread (OperationQueue) or task (ActorQueue) "
          + "in bursts of 4 trivial ops, waiting for each burst; n = ops in all")
    }
    let count = sizes.cancel
    let samples = runInterleaved(
      "queues: cancel \(count) beside a served queue",
      [
        Contender(system: .operationQueue) { cancelBeside(OperationQueueSide(count)) },
        Contender(system: .actorQueue) { cancelBeside(ActorQueueSide(count)) },
      ], metrics: 3, options: options)
    rows += makeRows(
      scenario: "queues", variant: "cancel beside",
      metrics: ["p99 before", "p99 during", "max during"], n: count, ops: nil,
      kinds: [.latency, .latency, .latency], samples: samples, runs: options.runs,
      note:
        "queues cancel beside: one queue cancels n waiting ops while another serves back-to-back requests; "
        + "p99 before / p99 during / max during: the served queue's add→start latency before the cancel, and for "
        + "the requests that overlap it (from the call until every cancelled op is terminal)")
    return rows
  }

  // MARK: Many queues

  /// Per op: when `addOperation` was called, how long it took, and when the body started.
  /// `@unchecked Sendable`: each slot is written by one thread (the feeder, or the body), and
  /// read only after every feeder has ended, which orders those writes before the reads.
  final class Stamps: @unchecked Sendable {
    let submitted: UnsafeMutableBufferPointer<Instant>
    let started: UnsafeMutableBufferPointer<Instant>
    let adding: UnsafeMutableBufferPointer<Double>

    init(_ count: Int) {
      let origin = now()
      submitted = .allocate(capacity: count)
      submitted.initialize(repeating: origin)
      started = .allocate(capacity: count)
      started.initialize(repeating: origin)
      adding = .allocate(capacity: count)
      adding.initialize(repeating: 0)
    }

    deinit {
      submitted.deallocate()
      started.deallocate()
      adding.deallocate()
    }

    /// [seconds, add→start p99, addOperation p99, addOperation max].
    func metrics(elapsed: Double) -> [Double] {
      let latencies = (0..<started.count).map { (started[$0] - submitted[$0]).seconds }.sorted()
      let adds = adding.sorted()
      return [
        elapsed, Statistics.percentile(0.99, ofSorted: latencies),
        Statistics.percentile(0.99, ofSorted: adds),
        adds.last ?? .nan,
      ]
    }
  }

  static func operationQueues(_ queues: Int, perQueue: Int) -> [Double] {
    let stamps = Stamps(queues * perQueue)
    let counter = Counter()
    let fed = DispatchGroup()
    let start = now()
    for q in 0..<queues {
      fed.enter()
      Thread.detachNewThread {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = limit
        for burst in stride(from: q * perQueue, to: (q + 1) * perQueue, by: limit) {
          for index in burst..<burst + limit {
            let submitted = now()
            queue.addOperation {
              stamps.started[index] = now()
              counter.increment()
            }
            stamps.adding[index] = secondsSince(submitted)
            stamps.submitted[index] = submitted
          }
          queue.waitUntilAllOperationsAreFinished()
        }
        fed.leave()
      }
    }
    fed.wait(for: "the threads feeding the OperationQueues")
    let elapsed = secondsSince(start)
    verify(counter.count == queues * perQueue, "OperationQueues ran \(counter.count) of \(queues * perQueue)")
    return stamps.metrics(elapsed: elapsed)
  }

  static func actorQueues(_ queues: Int, perQueue: Int) -> [Double] {
    blocking {
      let stamps = Stamps(queues * perQueue)
      let counter = Counter()
      let start = now()
      await withDiscardingTaskGroup { group in
        for q in 0..<queues {
          group.addTask {
            let queue = ActorQueue(maxConcurrentOperationCount: limit)
            for burst in stride(from: q * perQueue, to: (q + 1) * perQueue, by: limit) {
              for index in burst..<burst + limit {
                let submitted = now()
                queue.addOperation {
                  stamps.started[index] = now()
                  counter.increment()
                }
                stamps.adding[index] = secondsSince(submitted)
                stamps.submitted[index] = submitted
              }
              await queue.waitUntilAllOperationsAreFinished()
            }
          }
        }
      }
      let elapsed = secondsSince(start)
      verify(counter.count == queues * perQueue, "ActorQueues ran \(counter.count) of \(queues * perQueue)")
      return stamps.metrics(elapsed: elapsed)
    }
  }

  // MARK: Cancel beside a served queue

  /// One system's two queues: one holding `count` waiting ops to cancel, one to serve.
  protocol Side {
    /// Adds a body to the served queue.
    func serve(_ body: @escaping @Sendable () -> Void)
    /// Cancels every waiting op of the other queue and returns once all are terminal.
    func cancelAll()
  }

  struct OperationQueueSide: Side, Sendable {
    let waiting = OperationQueue()
    let served = OperationQueue()
    let count: Int

    init(_ count: Int) {
      self.count = count
      waiting.isSuspended = true
      for _ in 0..<count { waiting.addOperation { preconditionFailure("bench: a cancelled op ran") } }
    }

    func serve(_ body: @escaping @Sendable () -> Void) { served.addOperation(body) }

    func cancelAll() {
      waiting.cancelAllOperations()
      waiting.isSuspended = false
      waiting.waitUntilAllOperationsAreFinished()
      verify(waiting.operationCount == 0, "OperationQueue kept cancelled ops")
    }
  }

  struct ActorQueueSide: Side, Sendable {
    let waiting = ActorQueue()
    let served = ActorQueue()

    init(_ count: Int) {
      waiting.isSuspended = true
      for _ in 0..<count { waiting.addOperation { preconditionFailure("bench: a cancelled op ran") } }
    }

    func serve(_ body: @escaping @Sendable () -> Void) { served.addOperation(body) }

    func cancelAll() {
      waiting.cancelAllOperations()
      verify(waiting.operationCount == 0, "ActorQueue kept cancelled ops")
    }
  }

  /// Serves back-to-back requests on `side` from this thread; after `lead` of them, another
  /// thread cancels the waiting queue; serving goes on for `lead` requests after the cancel
  /// ended. Returns [add→start p99 before, p99 during, max during].
  static func cancelBeside(_ side: some Side & Sendable, lead: Int = 200) -> [Double] {
    let started = Box<Instant?>(nil)
    let ran = DispatchSemaphore(value: 0)
    let body: @Sendable () -> Void = {
      started.set(now())
      ran.signal()
    }
    let window = Box<(start: Instant, end: Instant)?>(nil)
    let go = DispatchSemaphore(value: 0)
    let cancelled = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      go.wait(for: "the served queue's first \(lead) requests", atMost: Bounds.trial)
      let start = now()
      side.cancelAll()
      window.set((start, now()))
      cancelled.signal()
    }
    var samples: [(submitted: Instant, started: Instant)] = []
    var after = 0
    while after < lead {
      let submitted = now()
      side.serve(body)
      ran.wait(for: "the start of a served request")
      guard let start = started.get() else { preconditionFailure("Internal inconsistency: no start time") }
      samples.append((submitted, start))
      if samples.count == lead { go.signal() }
      if samples.count > lead, window.get() != nil { after += 1 }
    }
    cancelled.wait(for: "the cancel of the waiting queue", atMost: Bounds.trial)
    guard let (cancelStart, cancelEnd) = window.get() else {
      preconditionFailure("Internal inconsistency: no cancel window")
    }
    let before = samples.filter { $0.started < cancelStart }.map { ($0.started - $0.submitted).seconds }
      .sorted()
    let during = samples.filter { $0.submitted < cancelEnd && $0.started > cancelStart }
      .map { ($0.started - $0.submitted).seconds }.sorted()
    return [
      before.isEmpty ? .nan : Statistics.percentile(0.99, ofSorted: before),
      during.isEmpty ? .nan : Statistics.percentile(0.99, ofSorted: during),
      during.last ?? .nan,
    ]
  }
}

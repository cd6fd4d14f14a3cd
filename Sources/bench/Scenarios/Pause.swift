import ActorQueue
import Dispatch
import Foundation
import Synchronization

/// The download manager with pauses (issue 12): N transfers of 4 chunks (100 µs each) at limit
/// 10, all added at once; every fifth transfer is paused by its user half-way (after 2 chunks)
/// and resumed 1 ms later. Measured:
/// - `pause→start p50`, `p99`: from a transfer pausing (its `onPause`, the last thing it does
///   before giving its slot back) to the first instruction of the transfer that took the slot
///   (a new one's body, or a resumed one's `onResume`). Which transfer took it is read from the
///   queue's events, in order: a worker whose transfer ended takes the next one in the same
///   critical section (its `.executing` event follows the terminal one, consecutive sequence
///   numbers), so every other start fills a slot a pause freed, the earliest first. Only pauses
///   made while some transfer has not started yet count (the last ones free a slot nothing
///   waits for).
/// - `time`: the whole run, from adding the first transfer until the last has finished
///   (throughput: transfers per second).
///
/// OperationQueue cannot pause an operation and free its slot: its transfers run the same
/// script, but a paused one keeps its slot (and `isExecuting`) for the millisecond it is
/// paused, as a suspended network task inside an asynchronous `Operation` does. So it has a
/// `time` row and no `pause→start` figures: nothing starts when one of its transfers pauses.
/// Chunks wait without holding a thread, on the same `DispatchQueue` timers in both (a
/// continuation in ActorQueue's bodies, a callback in OperationQueue's asynchronous
/// operations), and so does the 1 ms pause: the systems differ only in how they schedule the
/// transfers and in what a pause does to a slot. ActorQueue's run
/// also feeds one event subscriber (to pair pauses with starts); its events are read after the
/// run. No task-per-op baseline: a TaskGroup child cannot pause and give its place back.
enum PauseScenario {
  static let limit = 10
  static let chunks = 4
  static let chunkDuration = Duration.microseconds(100)
  static let pauseDuration = Duration.milliseconds(1)
  /// Transfers whose index modulo 5 is this one pause: 20%.
  static func pauses(_ index: Int) -> Bool { index % 5 == 2 }

  static let note =
    "pause: transfers of 4 × 100 µs chunks at limit 10, every fifth paused 1 ms after 2 chunks; pause→start: "
    + "from a transfer pausing (onPause) to the first instruction of the transfer that took its slot, read from the "
    + "queue's events; time: the whole run (ActorQueue's includes one event subscriber)"
  static let noPauseInOperationQueue =
    "OperationQueue cannot free a paused operation's slot: nothing starts when a transfer pauses, so there "
    + "is no pause→start to measure; its paused transfers hold their slots for 1 ms (see its time row)"

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let n = sizes.pauseTransfers
    let samples = runInterleaved(
      "pause transfers=\(n)",
      [
        Contender(system: .operationQueue) { [.nan, .nan, operationQueue(n)] },
        Contender(system: .actorQueue) { actorQueue(n) },
      ], metrics: 3, options: options)
    var rows = makeRows(
      scenario: "pause", metrics: ["pause→start p50", "pause→start p99", "time"], n: n, ops: n,
      kinds: [.latency, .latency, .throughput], samples: samples, runs: options.runs, note: note)
    for index in rows.indices where rows[index].system == .operationQueue && rows[index].kind == .latency {
      rows[index].note = noPauseInOperationQueue
    }
    return rows
  }

  // MARK: ActorQueue

  /// When each transfer paused, started, and continued after its pause.
  private final class Stamps: Sendable {
    private struct Times {
      var paused: [Instant?]
      var started: [Instant?]
      var continued: [Instant?]
    }
    private let times: Mutex<Times>

    init(_ n: Int) {
      times = Mutex(
        Times(
          paused: .init(repeating: nil, count: n), started: .init(repeating: nil, count: n),
          continued: .init(repeating: nil, count: n)))
    }

    func paused(_ index: Int) {
      let instant = now()
      times.withLock { $0.paused[index] = instant }
    }

    func started(_ index: Int) {
      let instant = now()
      times.withLock { $0.started[index] = instant }
    }

    func continued(_ index: Int) {
      let instant = now()
      times.withLock { $0.continued[index] = instant }
    }

    /// The stamps, once every transfer has ended.
    var all: (paused: [Instant?], started: [Instant?], continued: [Instant?]) {
      times.withLock { ($0.paused, $0.started, $0.continued) }
    }
  }

  /// Returns [pause→start p50, p99, total seconds].
  static func actorQueue(_ n: Int) -> [Double] {
    blocking {
      let queue = ActorQueue(name: "transfers", maxConcurrentOperationCount: limit)
      let events = queue.events
      let stamps = Stamps(n)
      let done = Counter()
      let handles = Box<[AnyQueueOperation]>([])
      let operations = (0..<n).map { index in
        QueueOperation<Void>(name: "t\(index)") {
          stamps.started(index)
          for chunk in 0..<chunks {
            if chunk == chunks / 2, pauses(index) {
              let handle = handles.get()[index]
              handle.pause()  // the user pauses it between two chunks
              try await ActorQueue.checkpoint(
                onPause: {
                  stamps.paused(index)
                  DispatchQueue.global().asyncAfter(deadline: .now() + pauseDuration.dispatch) {
                    handle.resume()
                  }
                },
                onResume: { stamps.continued(index) })
            } else {
              try await ActorQueue.checkpoint()
            }
            await after(chunkDuration)
          }
          done.increment()
        }
      }
      handles.set(operations)
      let start = now()
      do {
        try queue.addOperations(operations)
      } catch {
        preconditionFailure("bench: addOperations failed: \(error)")
      }
      await queue.waitUntilAllOperationsAreFinished()
      let elapsed = secondsSince(start)
      verify(done.count == n, "ActorQueue finished \(done.count) of \(n) transfers")

      // The queue's events, buffered during the run, read now.
      var trace: [QueueEvent] = []
      var ended = 0
      for await event in events {
        trace.append(event)
        if event.operationState?.isTerminal == true {
          ended += 1
          if ended == n { break }
        }
      }
      let indexByID = Dictionary(
        uniqueKeysWithValues: operations.enumerated().map { ($0.element.id, $0.offset) })
      let times = stamps.all
      var starts = [Int](repeating: 0, count: n)  // `.executing` events seen per transfer
      var started = 0  // transfers that have started at least once
      var freed: [Int] = []  // transfers whose pause freed a slot not yet taken again, in order
      var latencies: [Double] = []
      for (position, event) in trace.enumerated() {
        guard let id = event.operationID, let index = indexByID[id] else { continue }
        switch event.operationState {
        case .paused:
          if started < n { freed.append(index) }  // a transfer that never started is waiting
        case .executing:
          starts[index] += 1
          if starts[index] == 1 { started += 1 }
          // A worker whose transfer ended takes the next one in the same critical section: that
          // start fills the slot of the end, not of a pause.
          if position > 0, trace[position - 1].operationState?.isTerminal == true,
            trace[position - 1].sequence + 1 == event.sequence
          {
            continue
          }
          guard !freed.isEmpty else { continue }
          let pausedIndex = freed.removeFirst()
          guard let paused = times.paused[pausedIndex],
            let start = starts[index] == 1 ? times.started[index] : times.continued[index], start > paused
          else { continue }
          latencies.append((start - paused).seconds)
        default:
          continue
        }
      }
      let pauseCount = (0..<n).filter(pauses).count
      verify(
        latencies.count >= pauseCount / 2,
        "only \(latencies.count) of \(pauseCount) pauses were followed by a start")
      latencies.sort()
      return [
        Statistics.percentile(0.5, ofSorted: latencies), Statistics.percentile(0.99, ofSorted: latencies),
        elapsed,
      ]
    }
  }

  /// Waits `delay` on a `DispatchQueue` timer, as OperationQueue's transfers do, so both systems
  /// wait for their chunks the same way.
  static func after(_ delay: Duration) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      DispatchQueue.global().asyncAfter(deadline: .now() + delay.dispatch) { continuation.resume() }
    }
  }

  // MARK: OperationQueue

  static func operationQueue(_ n: Int) -> Double {
    let done = Counter()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = limit
    let operations = (0..<n).map { index in
      ChunkedTransferOperation(pausesAfter: pauses(index) ? chunks / 2 : nil, done: done)
    }
    let start = now()
    queue.addOperations(operations, waitUntilFinished: true)
    let elapsed = secondsSince(start)
    verify(done.count == n, "OperationQueue finished \(done.count) of \(n) transfers")
    return elapsed
  }
}

extension Duration {
  /// This duration for a `DispatchTime` deadline.
  var dispatch: DispatchTimeInterval { .nanoseconds(Int(seconds * 1e9)) }
}

/// A transfer as OperationQueue users write one: an asynchronous `Operation` that receives
/// `PauseScenario.chunks` chunks, each completing from a timer (no thread held); one that
/// pauses stops between two chunks for `PauseScenario.pauseDuration` — still executing, so
/// holding its slot, as a suspended network task does — then goes on.
private final class ChunkedTransferOperation: AsynchronousOperation, @unchecked Sendable {
  // `@unchecked Sendable`: as its base class; its own fields are immutable.
  private let pausesAfter: Int?
  private let done: Counter

  init(pausesAfter: Int?, done: Counter) {
    self.pausesAfter = pausesAfter
    self.done = done
  }

  override func work() { receive(0) }

  /// Receives chunk `chunk` (after the pause, if it pauses here), or finishes.
  private func receive(_ chunk: Int) {
    guard chunk < PauseScenario.chunks else {
      done.increment()
      return finish()
    }
    if chunk == pausesAfter {
      Self.after(PauseScenario.pauseDuration) {
        Self.after(PauseScenario.chunkDuration) { self.receive(chunk + 1) }
      }
    } else {
      Self.after(PauseScenario.chunkDuration) { self.receive(chunk + 1) }
    }
  }

  private static func after(_ delay: Duration, _ work: @escaping @Sendable () -> Void) {
    DispatchQueue.global().asyncAfter(deadline: .now() + delay.dispatch, execute: work)
  }
}

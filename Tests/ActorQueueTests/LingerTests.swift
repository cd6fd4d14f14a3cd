import TestSupport
import Testing

@testable import ActorQueue

/// A worker whose queue goes idle may linger for a moment (see `LingerPolicy`). Lingering must
/// never change what runs, when it may run, or how often: these tests put a lingering worker
/// in the way of each rule. The next operation is added from the completion handler of the
/// last one, which runs after the worker decided to linger and before it looks for work again.
///
/// One worker in the process lingers at a time, and other suites run meanwhile: a test that
/// needs a lingering worker tries again, a bounded number of times (`attempts`). An attempt
/// whose worker found another queue's worker in the one place does not count: on a starved
/// machine a back-to-back queue elsewhere can hold it for many attempts in a row. The suite's
/// own back-to-back test would be such a queue, so its tests run one at a time.
@Suite("Lingering workers", .serialized, .timeLimit(.minutes(hangLimitMinutes)))
struct LingerTests {
  private let attempts = 200
  /// Attempts in all, counted or not, before giving up.
  private let attemptsInAll = 20_000

  /// Runs `attempt` until it reports that a worker lingered (each attempt checks its rules
  /// either way); records an issue if none did in `attempts` tries in which the place was free.
  private func untilAWorkerLingers(_ attempt: () async throws -> LingerSeen) async throws {
    var didNot = 0
    var placeTaken = 0
    while didNot < attempts, didNot + placeTaken < attemptsInAll {
      // A worker lingers for at most its window; waiting for the place makes an attempt count.
      _ = await eventually { lingeringWorkers() == 0 }
      switch try await attempt() {
      case .lingers: return
      case .didNot: didNot += 1
      case .placeTaken: placeTaken += 1
      }
    }
    Issue.record(
      "no worker lingered: \(didNot) attempts with the place free, \(placeTaken) with it taken")
  }

  /// Runs `first` on a fresh queue primed to linger; once it ends, `then` runs in its completion
  /// handler, which is told whether the worker lingers at that moment. Returns what `then` returned.
  private func afterAnOperation<Result: Sendable>(
    on queue: ActorQueue, then: @escaping @Sendable (_ lingers: LingerSeen) -> Result
  ) async -> Result {
    primeLinger(queue)
    let release = Gate()
    let handled = Gate()
    let result = Box<Result>()
    let first = queue.addOperation { await release.wait() }
    first.onCompletion { _ in
      result.value = then(lingerSeen(on: queue))
      handled.open()
    }
    release.open()
    await handled.wait()
    return result.value!
  }

  @Test("A lingering worker runs the operation added next, with no new task and no lost wake-up")
  func lingererRunsTheNextOperation() async throws {
    try await untilAWorkerLingers {
      let queue = ActorQueue(maxConcurrentOperationCount: 1)
      let (lingered, next) = await afterAnOperation(on: queue) { lingers in
        (lingers, queue.addOperation { 42 })
      }
      let value = try await next.value
      #expect(value == 42)
      return lingered
    }
  }

  @Test("An operation added to a suspended queue while its worker lingers waits for resume")
  func suspensionHoldsWhileAWorkerLingers() async throws {
    try await untilAWorkerLingers {
      let queue = ActorQueue(maxConcurrentOperationCount: 1)
      let runs = Counter()
      let (lingered, next) = await afterAnOperation(on: queue) { lingers in
        queue.isSuspended = true
        return (lingers, queue.addOperation { runs.increment() })
      }
      // The lingering worker was woken by the addition; it must leave without starting it.
      #expect(await eventually { !workerLingers(on: queue) })
      #expect(next.state == .ready && runs.value == 0)
      queue.isSuspended = false
      try await next.value
      #expect(runs.value == 1)
      return lingered
    }
  }

  @Test("An operation cancelled as the lingering worker wakes for it ends once; the next one runs")
  func cancelledWakerEndsOnce() async throws {
    // The lingering worker polls on another thread: it may take the operation before the
    // cancel (then the body runs and ignores it) or find it gone (then it lingers on or
    // retires). Either way the operation ends once, and the queue goes on. (The "found it
    // gone" path is pinned down by QueueStartRuleTests.)
    try await untilAWorkerLingers {
      let queue = ActorQueue(maxConcurrentOperationCount: 1)
      let runs = Counter()
      let (lingered, cancelled) = await afterAnOperation(on: queue) { lingers in
        let operation = queue.addOperation { runs.increment() }
        operation.cancel()
        return (lingers, operation)
      }
      await cancelled.waitUntilFinished()
      let ranFirst = runs.value
      #expect(cancelled.state == (ranFirst == 1 ? .finished : .cancelled))
      try await queue.addOperation { runs.increment() }.value
      #expect(runs.value == ranFirst + 1)
      return lingered
    }
  }

  @Test("A lingering worker that finds nothing retires; the queue and its core are freed")
  func lingererRetiresAndLetsGo() async throws {
    try await untilAWorkerLingers {
      var queue: ActorQueue? = ActorQueue()
      let weakCore = QueueRecordProbe(queue!)
      let lingered = await afterAnOperation(on: queue!) { $0 }
      queue = nil
      #expect(await eventually { weakCore.isFreed })
      return lingered
    }
  }

  @Test("Back to back on several queues at once: every op runs once, the limit holds, one lingerer at most")
  func backToBackStress() async throws {
    let queues = (0..<4).map { ActorQueue(name: "feed \($0)", maxConcurrentOperationCount: 1) }
    let perQueue = 500
    let probes = queues.map { _ in ConcurrencyProbe() }
    let runs = queues.map { _ in Counter() }
    let overLimit = Counter()
    let done = CountdownGate(count: queues.count)

    /// Adds op `index` of queue `q`; its completion handler adds the next (back to back).
    @Sendable func feed(_ q: Int, _ index: Int) {
      guard index < perQueue else {
        done.signal()
        return
      }
      if lingeringWorkers() > 1 { overLimit.increment() }
      queues[q].addOperation {
        probes[q].enter()
        runs[q].increment()
        probes[q].leave()
      }.onCompletion { _ in feed(q, index + 1) }
    }
    for q in queues.indices { feed(q, 0) }
    await done.wait()
    for queue in queues { await queue.waitUntilAllOperationsAreFinished() }
    #expect(runs.map(\.value) == Array(repeating: perQueue, count: queues.count))
    #expect(probes.allSatisfy { $0.maximum == 1 })
    #expect(overLimit.value == 0)
    // Lingering is bounded: every worker has retired once its window has passed.
    #expect(await eventually { lingeringWorkers() == 0 })
  }
}

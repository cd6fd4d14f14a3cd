import Testing

@testable import ActorQueue

/// The checker itself: fed hand-written event traces (one broken invariant each), it must name
/// the invariant; fed a correct trace, nothing. A checker that cannot fail proves nothing.
@Suite("Reliability: the invariant checker")
struct ReliabilityInvariantCheckerTests {
  /// Op `n` of a trace: ids are registered as script ops 0...
  private let ids = (0..<4).map { _ in OperationID() }

  /// Replays `events` (sequence = position) through a checker registered with `registrations`.
  private func violations(
    limit: Int = .max, _ registrations: [Registration], _ events: [(Int, QueueEvent.Kind)],
    executingCount: ((_ position: Int, _ shown: Int) -> Int)? = nil
  ) async -> [String] {
    let checker = InvariantChecker()
    for (op, id) in ids.enumerated() { checker.identify(op: op, id: id) }
    checker.register(.queue(0, limit: limit == .max ? -1 : limit))
    for registration in registrations { checker.register(registration) }
    let (stream, continuation) = AsyncStream.makeStream(of: QueueEvent.self)
    checker.attach(stream, queue: 0)
    var executing: Set<OperationID> = []
    for (sequence, (_, kind)) in events.enumerated() {
      if case .operation(let id, _, let state) = kind {
        if state == .executing { executing.insert(id) }
        if state.isTerminal || state == .paused { executing.remove(id) }
      }
      let count = executingCount?(sequence, executing.count) ?? executing.count
      continuation.yield(
        QueueEvent(
          sequence: UInt64(sequence + 1), kind: kind, executingCount: count,
          maxConcurrentOperationCount: limit, queueName: "q0"))
    }
    continuation.finish()
    await checker.waitUntilStreamsEnd()
    return checker.violations()
  }

  private func op(_ index: Int, _ state: OperationState) -> (Int, QueueEvent.Kind) {
    (0, .operation(id: ids[index], name: "op\(index)", state: state))
  }

  private func registered(_ ops: Int, priorities: [Int] = []) -> [Registration] {
    (0..<ops).map { .operation($0, queue: 0, priority: $0 < priorities.count ? priorities[$0] : 2, step: 0) }
  }

  @Test("A correct trace passes")
  func correctTrace() async {
    let problems = await violations(
      limit: 1, registered(2) + [.edge(dependent: 1, dependency: 0, step: 0)],
      [
        op(0, .ready), op(1, .pending), op(0, .executing), op(0, .finished), op(1, .ready), op(1, .executing),
        op(1, .finished),
      ])
    #expect(problems.isEmpty, "\(problems)")
  }

  @Test("More ops executing than the limit")
  func overLimit() async {
    let problems = await violations(
      limit: 1, registered(2),
      [
        op(0, .ready), op(1, .ready), op(0, .executing), op(1, .executing), op(0, .finished),
        op(1, .finished),
      ])
    #expect(problems.contains { $0.contains("limit") }, "\(problems)")
  }

  @Test("A start before a dependency ended")
  func startBeforeDependency() async {
    let problems = await violations(
      registered(2) + [.edge(dependent: 1, dependency: 0, step: 0)],
      [
        op(0, .ready), op(1, .ready), op(0, .executing), op(1, .executing), op(0, .finished),
        op(1, .finished),
      ])
    #expect(problems.contains { $0.contains("before its dependency") }, "\(problems)")
  }

  @Test("A start while suspended")
  func startWhileSuspended() async {
    let problems = await violations(
      registered(1), [(0, .suspended), op(0, .ready), op(0, .executing), op(0, .finished)])
    #expect(problems.contains { $0.contains("suspended") }, "\(problems)")
  }

  @Test("A start of an op cancelled while it waited")
  func cancelledWaitingStarts() async {
    let problems = await violations(
      registered(1) + [.cancelledWhileWaiting(op: 0, step: 0)],
      [op(0, .ready), op(0, .executing), op(0, .finished)])
    #expect(problems.contains { $0.contains("cancelled while waiting") }, "\(problems)")
  }

  @Test("Zero or two terminal states, and an event after the terminal one")
  func terminalStates() async {
    let problems = await violations(
      registered(2), [op(0, .ready), op(1, .ready), op(0, .cancelled), op(0, .cancelled), op(0, .ready)])
    #expect(problems.contains { $0.contains("op1 reached 0 terminal states") }, "\(problems)")
    #expect(problems.contains { $0.contains("op0 reached 2 terminal states") }, "\(problems)")
    #expect(problems.contains { $0.contains("after its terminal state") }, "\(problems)")
  }

  @Test("A lower priority starting while a higher one was ready, and FIFO within a priority")
  func priorityAndFIFO() async {
    let problems = await violations(
      limit: 1, registered(3, priorities: [1, 3, 1]),
      [
        op(0, .ready), op(1, .ready), op(2, .ready), op(2, .executing), op(2, .finished), op(1, .executing),
        op(1, .finished), op(0, .executing), op(0, .finished),
      ])
    #expect(problems.contains { $0.contains("op2 (priority 1) started while op1") }, "\(problems)")
    #expect(problems.contains { $0.contains("FIFO") }, "\(problems)")
  }

  @Test("An event whose executing count disagrees with the ops shown executing (a paused op holding a slot)")
  func pausedOpHoldsSlot() async {
    let trace = [
      op(0, .ready), op(0, .executing), op(0, .paused), op(0, .ready), op(0, .executing), op(0, .finished),
    ]
    let correct = await violations(limit: 1, registered(1), trace)
    #expect(correct.isEmpty, "\(correct)")
    // The pause event still counts the op: its slot was not given back.
    let problems = await violations(limit: 1, registered(1), trace) { position, shown in
      position == 2 ? 1 : shown
    }
    #expect(problems.contains { $0.contains("events show 0") }, "\(problems)")
  }

  @Test("A slot given to an op cancelled while paused")
  func startAfterCancelledWhilePaused() async {
    let problems = await violations(
      limit: 1, registered(1) + [.cancelledWhilePaused(op: 0, step: 0)],
      [op(0, .ready), op(0, .executing), op(0, .paused), op(0, .executing), op(0, .cancelled)])
    #expect(problems.contains { $0.contains("cancelled while paused") }, "\(problems)")
  }

  @Test("A slot given to an op after its deadline passed")
  func startAfterDeadline() async {
    let problems = await violations(
      registered(1) + [.deadlinePassed(op: 0, step: 0)], [op(0, .ready), op(0, .executing), op(0, .finished)])
    #expect(problems.contains { $0.contains("after its deadline passed") }, "\(problems)")
  }

  @Test("Timer details: where the model's timers acted, of their kind, once; allowed where they may have")
  func timerDetails() async {
    func detail(_ index: Int, _ detail: OperationDetail) -> (Int, QueueEvent.Kind) {
      (0, .detail(id: ids[index], name: "op\(index)", detail: detail))
    }
    let timedOut: [Registration] = [.timedOut(op: 0, deadline: true, step: 0)]
    let trace = [op(0, .ready), detail(0, .deadlineExpired), op(0, .failed)]
    let correct = await violations(registered(1) + timedOut, trace)
    #expect(correct.isEmpty, "\(correct)")
    let missing = await violations(registered(1) + timedOut, [op(0, .ready), op(0, .failed)])
    #expect(missing.contains { $0.contains("expected [deadline expired]") }, "\(missing)")
    let otherKind = await violations(
      registered(1) + [.timedOut(op: 0, deadline: false, step: 0)], trace)
    #expect(otherKind.contains { $0.contains("expected [") }, "\(otherKind)")
    let unexpected = await violations(registered(1), trace)
    #expect(unexpected.contains { $0.contains("no timer acted") }, "\(unexpected)")
    let allowed = await violations(registered(1) + [.mayTimeOut(op: 0, step: 0)], trace)
    #expect(allowed.isEmpty, "\(allowed)")
  }
}

import ActorQueue
import TestSupport
import Testing

extension Searching {
  @Suite("Stress", .timeLimit(.minutes(hangLimitMinutes)))
  struct StressTests {
    /// Checks a recorded trace of one queue against the rules, from the events alone.
    ///
    /// - every op follows ready -> executing -> terminal, or ready -> cancelled;
    /// - each op reaches exactly one terminal state, exactly once;
    /// - sequence numbers strictly increase;
    /// - the executing count each event carries is the one a replay computes, and never
    ///   exceeds the limit;
    /// - each start takes the highest-priority, earliest-submitted ready op.
    static func verify(
      _ events: [QueueEvent], operations: [AnyQueueOperation], priorities: [OperationID: OperationPriority],
      limit: Int
    ) {
      #expect(zip(events, events.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
      var stateOf: [OperationID: OperationState] = [:]
      var terminalCount: [OperationID: Int] = [:]
      var ready: [(id: OperationID, priority: OperationPriority, order: Int)] = []
      var readyOrder = 0
      var executing = 0
      for event in events {
        guard case .operation(let id, _, let state) = event.kind else {
          Issue.record("unexpected queue event \(event)")
          continue
        }
        let previous = stateOf[id]
        switch state {
        case .ready:
          #expect(previous == nil, "\(id) ready twice: \(event)")
          ready.append((id, priorities[id]!, readyOrder))
          readyOrder += 1
        case .executing:
          #expect(previous == .ready, "\(id) started from \(String(describing: previous))")
          // The best ready op by priority, then submission.
          let best = ready.max { lhs, rhs in
            lhs.priority != rhs.priority ? lhs.priority < rhs.priority : lhs.order > rhs.order
          }
          #expect(best?.id == id, "started \(id) while \(String(describing: best?.id)) was first in line")
          ready.removeAll { $0.id == id }
          executing += 1
        case .finished, .failed:
          #expect(previous == .executing, "\(id) \(state) from \(String(describing: previous))")
          executing -= 1
        case .cancelled:
          #expect(
            previous == .ready || previous == .executing,
            "\(id) cancelled from \(String(describing: previous))"
          )
          if previous == .executing { executing -= 1 } else { ready.removeAll { $0.id == id } }
        case .pending, .paused:
          Issue.record("unexpected state \(state) for \(id)")
        }
        if state.isTerminal { terminalCount[id, default: 0] += 1 }
        stateOf[id] = state
        #expect(event.executingCount == executing, "\(event) replayed \(executing)")
        #expect(event.executingCount <= limit)
        #expect(event.maxConcurrentOperationCount == limit)
      }
      #expect(operations.allSatisfy { terminalCount[$0.id] == 1 })
      #expect(terminalCount.count == operations.count)
      #expect(operations.allSatisfy { stateOf[$0.id] == $0.state })
    }

    @Test(
      "2,000 ops, random priorities and cancels, limit 3: the trace obeys every rule",
      arguments: [1 as UInt64, 2, 3])
    func randomScript(seed: UInt64) async {
      var random = SeededGenerator(seed: seed)
      let limit = 3
      let queue = ActorQueue(name: "stress", maxConcurrentOperationCount: limit)
      let log = StreamLog(queue.events)
      let probe = ConcurrencyProbe()
      let completions = (0..<2_000).map { _ in Counter() }
      let bodyRuns = (0..<2_000).map { _ in Counter() }
      var operations: [QueueOperation<Int>] = []
      var priorities: [OperationID: OperationPriority] = [:]
      for index in 0..<2_000 {
        let priority = OperationPriority.allCases.randomElement(using: &random)!
        let style = Int.random(in: 0..<10, using: &random)
        let operation = queue.addOperation(name: "op\(index)", priority: priority) { () throws -> Int in
          probe.enter()
          defer { probe.leave() }
          bodyRuns[index].increment()
          switch style {
          case 0: throw TestFailure(code: index)
          case 1, 2: await Task.yield()
          case 3: try Task.checkCancellation()
          default: break
          }
          return index
        }
        operation.onCompletion { _ in completions[index].increment() }
        operations.append(operation)
        priorities[operation.id] = priority
        // Cancel some op submitted so far: waiting, executing or ended, whichever it is now.
        if Int.random(in: 0..<4, using: &random) == 0 {
          operations[Int.random(in: 0...index, using: &random)].cancel()
        }
        if index % 500 == 250 { await Task.yield() }
      }
      await queue.waitUntilAllOperationsAreFinished()
      let events = await log.waitForEnd(of: operations)
      log.stop()

      Self.verify(events, operations: operations, priorities: priorities, limit: limit)
      #expect(probe.maximum <= limit)
      #expect(completions.allSatisfy { $0.value == 1 })
      #expect(bodyRuns.allSatisfy { $0.value <= 1 })
      for (index, operation) in operations.enumerated() {
        let ran = bodyRuns[index].value == 1
        let started = states(of: operation, in: events).contains(.executing)
        #expect(ran == started)
      }
      #expect(queue.operationCount == 0)
    }

    @Test("Many submitters, cancellers and limit changes at once: every op ends exactly once")
    func concurrentChaos() async {
      let queue = ActorQueue(name: "chaos", maxConcurrentOperationCount: 3)
      let log = StreamLog(queue.events)
      let completions = Recorder<OperationID>()
      let submitted = Recorder<AnyQueueOperation>()
      await withTaskGroup(of: Void.self) { group in
        for submitter in 0..<4 {
          group.addTask {
            var random = SeededGenerator(seed: UInt64(100 + submitter))
            for _ in 0..<250 {
              let priority = OperationPriority.allCases.randomElement(using: &random)!
              let operation = queue.addOperation(priority: priority) { () throws -> Int in
                try Task.checkCancellation()
                await Task.yield()
                return 1
              }
              let id = operation.id
              operation.onCompletion { _ in completions.append(id) }
              submitted.append(operation)
              if Int.random(in: 0..<3, using: &random) == 0 { operation.cancel() }
            }
          }
        }
        group.addTask {
          for round in 0..<50 {
            queue.maxConcurrentOperationCount = 1 + round % 4
            queue.isSuspended = round % 7 == 3
            await Task.yield()
          }
          queue.isSuspended = false
          queue.maxConcurrentOperationCount = 3
        }
      }
      await queue.waitUntilAllOperationsAreFinished()
      let operations = submitted.snapshot
      let events = await log.waitForEnd(of: operations)
      log.stop()
      #expect(operations.count == 1_000)
      #expect(completions.snapshot.count == 1_000)
      #expect(Set(completions.snapshot).count == 1_000)
      var terminal: [OperationID: Int] = [:]
      for event in events {
        #expect(
          event.executingCount <= event.maxConcurrentOperationCount || event.operationState != .executing)
        if let id = event.operationID, event.operationState?.isTerminal == true {
          terminal[id, default: 0] += 1
        }
      }
      #expect(operations.allSatisfy { terminal[$0.id] == 1 })
      #expect(zip(events, events.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
    }
  }
}

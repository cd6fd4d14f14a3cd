import ActorQueue
import TestSupport
import Testing

@Suite("Events", .timeLimit(.minutes(hangLimitMinutes)))
struct EventTests {
  // MARK: Operation events

  @Test("op.events: the current state first, each change in order, then the stream finishes")
  func operationEventsInOrder() async throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    let release = Gate()
    let operation = QueueOperation(name: "watched") { await release.wait() }
    let fromCreation = StreamLog(operation.events)
    try queue.addOperation(operation)
    let fromReady = StreamLog(operation.events)
    queue.isSuspended = false
    await fromCreation.wait(until: { $0.contains(.executing) })
    let fromExecuting = StreamLog(operation.events)
    release.open()
    #expect(await fromCreation.waitUntilFinished() == [.pending, .ready, .executing, .finished])
    #expect(await fromReady.waitUntilFinished() == [.ready, .executing, .finished])
    #expect(await fromExecuting.waitUntilFinished() == [.executing, .finished])
    // After the end: the terminal state alone, then the end.
    #expect(await StreamLog(operation.events).waitUntilFinished() == [.finished])
  }

  @Test("op.events for failed and cancelled ops end after their terminal state")
  func operationEventsForOtherEndings() async {
    let queue = ActorQueue()
    queue.isSuspended = true
    let cancelled = queue.addOperation { 1 }
    let cancelledLog = StreamLog(cancelled.events)
    cancelled.cancel()
    #expect(await cancelledLog.waitUntilFinished() == [.ready, .cancelled])

    queue.isSuspended = false
    let failing = QueueOperation { () throws -> Int in throw TestFailure() }
    let failingLog = StreamLog(failing.events)
    try? queue.addOperation(failing)
    #expect(await failingLog.waitUntilFinished() == [.pending, .ready, .executing, .failed])
  }

  @Test("Each access to op.events is a new subscriber with the full sequence")
  func operationEventsPerSubscriber() async {
    let queue = ActorQueue()
    queue.isSuspended = true
    let operation = queue.addOperation { 1 }
    let logs = (0..<5).map { _ in StreamLog(operation.events) }
    queue.isSuspended = false
    for log in logs {
      #expect(await log.waitUntilFinished() == [.ready, .executing, .finished])
    }
  }

  @Test("A subscriber that goes away does not disturb the op or other subscribers")
  func abandonedOperationSubscriber() async throws {
    let queue = ActorQueue()
    let release = Gate()
    let operation = queue.addOperation { await release.wait() }
    let abandoned = StreamLog(operation.events)
    let kept = StreamLog(operation.events)
    await abandoned.wait(until: { !$0.isEmpty })
    abandoned.stop()
    release.open()
    await operation.waitUntilFinished()
    #expect(await kept.waitUntilFinished().last == .finished)
    _ = await abandoned.waitUntilFinished()
    #expect(operation.state == .finished)
  }

  // MARK: Queue events

  @Test(
    "queue.events: every transition of every op with id, name and state; queue changes with counts and limit")
  func queueEventsContent() async throws {
    let queue = ActorQueue(name: "events", maxConcurrentOperationCount: 2)
    let log = StreamLog(queue.events)
    queue.isSuspended = true
    let a = queue.addOperation(name: "a") { 1 }
    let b = queue.addOperation(name: "b") { 2 }
    queue.maxConcurrentOperationCount = 1
    queue.isSuspended = false
    _ = try await (a.value, b.value)
    let events = await log.waitForEnd(of: [a, b])
    log.stop()
    #expect(events.allSatisfy { $0.queueName == "events" })
    let kinds = events.map(\.kind)
    #expect(
      Array(kinds.prefix(5)) == [
        .suspended,
        .operation(id: a.id, name: "a", state: .ready),
        .operation(id: b.id, name: "b", state: .ready),
        .limitChanged(1),
        .resumed,
      ])
    #expect(events[0].maxConcurrentOperationCount == 2)
    #expect(events[3].maxConcurrentOperationCount == 1)
    #expect(events.prefix(5).allSatisfy { $0.executingCount == 0 })
    #expect(
      Array(kinds.dropFirst(5)) == [
        .operation(id: a.id, name: "a", state: .executing),
        .operation(id: a.id, name: "a", state: .finished),
        .operation(id: b.id, name: "b", state: .executing),
        .operation(id: b.id, name: "b", state: .finished),
      ])
    #expect(events.dropFirst(5).map(\.executingCount) == [1, 0, 1, 0])
    #expect(zip(events, events.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
    #expect(events[5].operationID == a.id && events[5].operationState == .executing)
    #expect(!events[5].description.isEmpty)
  }

  @Test("Sequence numbers are strictly increasing and form one order across two queues")
  func sequenceAcrossQueues() async throws {
    let first = ActorQueue(name: "first", maxConcurrentOperationCount: 2)
    let second = ActorQueue(name: "second", maxConcurrentOperationCount: 3)
    let firstLog = StreamLog(first.events)
    let secondLog = StreamLog(second.events)
    var firstOps: [AnyQueueOperation] = []
    var secondOps: [AnyQueueOperation] = []
    for round in 0..<30 {
      let a = first.addOperation(name: "f\(round)") { round }
      firstOps.append(a)
      // Causally after a's end: every event of b must come after a's terminal event.
      let b = second.addOperation(name: "s\(round)") { () -> Int in
        try await a.value + 1
      }
      secondOps.append(b)
      _ = try await b.value
    }
    let firstEvents = await firstLog.waitForEnd(of: firstOps)
    let secondEvents = await secondLog.waitForEnd(of: secondOps)
    firstLog.stop()
    secondLog.stop()
    for events in [firstEvents, secondEvents] {
      #expect(zip(events, events.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
    }
    let merged = (firstEvents + secondEvents).sorted { $0.sequence < $1.sequence }
    #expect(Set(merged.map(\.sequence)).count == merged.count)
    // Rebuilt from the merged order: each f-op ends before its s-op ends.
    for (a, b) in zip(firstOps, secondOps) {
      let aEnd = merged.firstIndex { $0.operationID == a.id && $0.operationState == .finished }!
      let bEnd = merged.firstIndex { $0.operationID == b.id && $0.operationState == .finished }!
      let bReady = merged.firstIndex { $0.operationID == b.id && $0.operationState == .ready }!
      let aReady = merged.firstIndex { $0.operationID == a.id && $0.operationState == .ready }!
      #expect(aEnd < bEnd)
      #expect(aReady < bReady)  // submitted in that order from one task
    }
  }

  @Test("A recorded trace never shows more executing ops than the limit")
  func traceRespectsLimit() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 3)
    let log = StreamLog(queue.events)
    let operations = (0..<200).map { index in
      queue.addOperation { () -> Int in
        if index % 2 == 0 { await Task.yield() }
        return index
      }
    }
    await queue.waitUntilAllOperationsAreFinished()
    let events = await log.waitForEnd(of: operations)
    log.stop()
    #expect(events.allSatisfy { $0.executingCount <= 3 })
    // The executing count in each event is the one a replay of the trace computes.
    var executing = 0
    for event in events {
      switch event.operationState {
      case .executing: executing += 1
      case .finished, .failed, .cancelled: executing -= 1
      default: break
      }
      #expect(event.executingCount == executing)
    }
  }

  @Test("Each access to queue.events is a new subscriber that sees events from then on")
  func queueEventsPerSubscriber() async {
    let queue = ActorQueue()
    let early = StreamLog(queue.events)
    queue.isSuspended = true
    let late = StreamLog(queue.events)
    queue.isSuspended = false
    let earlyEvents = await early.wait(until: { $0.count == 2 })
    let lateEvents = await late.wait(until: { $0.count == 1 })
    early.stop()
    late.stop()
    #expect(earlyEvents.map(\.kind) == [.suspended, .resumed])
    #expect(lateEvents.map(\.kind) == [.resumed])
    #expect(earlyEvents[1].sequence == lateEvents[0].sequence)
  }

  @Test("Lossless buffering keeps every event however far behind the subscriber is")
  func losslessKeepsEverything() async {
    let queue = ActorQueue()
    let stream = queue.events(bufferingPolicy: .lossless)
    for _ in 0..<1_000 {
      queue.isSuspended = true
      queue.isSuspended = false
    }
    // Only now does anyone consume.
    let log = StreamLog(stream)
    let events = await log.wait(until: { $0.count >= 2_000 })
    log.stop()
    #expect(events.count == 2_000)
    #expect(!events.contains { if case .eventsDropped = $0.kind { true } else { false } })
    #expect(zip(events, events.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
  }

  @Test("bufferingNewest(n) keeps the newest n and says exactly how many it dropped, in their place")
  func boundedReportsDrops() async {
    let queue = ActorQueue()
    let reference = queue.events(bufferingPolicy: .lossless)
    let bounded = queue.events(bufferingPolicy: .bufferingNewest(3))
    for index in 0..<10 {
      queue.maxConcurrentOperationCount = index + 1  // 10 limitChanged events
    }
    let referenceLog = StreamLog(reference)
    let all = await referenceLog.wait(until: { $0.count == 10 })
    referenceLog.stop()
    var iterator = bounded.makeAsyncIterator()
    var received: [QueueEvent] = []
    for _ in 0..<4 { if let event = await iterator.next() { received.append(event) } }
    #expect(received.count == 4)
    guard received.count == 4 else { return }
    #expect(received[0].kind == .eventsDropped(count: 7))
    // The marker stands where the dropped events were: its sequence is the last dropped one's.
    #expect(received[0].sequence == all[6].sequence)
    #expect(received[1...].map(\.sequence) == all[7...].map(\.sequence))
    #expect(received[1...].map(\.kind) == [.limitChanged(8), .limitChanged(9), .limitChanged(10)])

    // The bounded subscriber keeps going: a second overflow is reported again, exactly.
    for index in 0..<5 { queue.maxConcurrentOperationCount = 100 + index }
    var second: [QueueEvent] = []
    for _ in 0..<4 { if let event = await iterator.next() { second.append(event) } }
    #expect(
      second.map(\.kind) == [
        .eventsDropped(count: 2), .limitChanged(102), .limitChanged(103), .limitChanged(104),
      ])
    // Accounting: kept + dropped == produced.
    let dropped = (received + second).reduce(0) { total, event in
      if case .eventsDropped(let count) = event.kind { total + count } else { total }
    }
    let kept = (received + second).filter { if case .eventsDropped = $0.kind { false } else { true } }.count
    #expect(dropped + kept == 15)
  }

  @Test("A bounded subscriber does not slow the queue: ops run while nobody consumes")
  func boundedNeverBlocksTheQueue() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    let bounded = queue.events(bufferingPolicy: .bufferingNewest(5))
    let reference = StreamLog(queue.events)
    let operations = (0..<500).map { index in queue.addOperation { index } }
    await queue.waitUntilAllOperationsAreFinished()
    let all = await reference.waitForEnd(of: operations)
    reference.stop()
    #expect(all.count == 1_500)  // ready, executing, finished
    var iterator = bounded.makeAsyncIterator()
    var received: [QueueEvent] = []
    for _ in 0..<6 { if let event = await iterator.next() { received.append(event) } }
    #expect(received.first?.kind == .eventsDropped(count: 1_495))
    #expect(received.dropFirst().map(\.sequence) == all.suffix(5).map(\.sequence))
  }

  @Test(
    "A subscriber that goes away is dropped by the queue at its next event (nothing is buffered for nobody)")
  func abandonedQueueSubscriberIsDropped() async {
    let queue = ActorQueue()
    #expect(queueSubscriberCount(of: queue) == 0)
    let log = StreamLog(queue.events)
    let kept = StreamLog(queue.events)
    #expect(queueSubscriberCount(of: queue) == 2)
    queue.isSuspended = true
    await log.wait(until: { $0.count == 1 })
    log.stop()
    _ = await log.waitUntilFinished()
    queue.isSuspended = false
    #expect(queueSubscriberCount(of: queue) == 1)
    #expect(await kept.wait(until: { $0.count == 2 }).map(\.kind) == [.suspended, .resumed])
    kept.stop()
    _ = await kept.waitUntilFinished()
    queue.isSuspended = true
    #expect(queueSubscriberCount(of: queue) == 0)
  }
}

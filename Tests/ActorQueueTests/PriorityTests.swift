import ActorQueue
import Foundation
import TestSupport
import Testing

@Suite("Priority", .timeLimit(.minutes(hangLimitMinutes)))
struct PriorityTests {
  /// Added in this (shuffled) order to a suspended serial queue.
  static let script: [(String, OperationPriority)] = [
    ("normal", .normal), ("veryLow", .veryLow), ("high", .high), ("low", .low),
    ("veryHigh", .veryHigh), ("normal2", .normal), ("high2", .high),
  ]
  static let expected = ["veryHigh", "high", "high2", "normal", "normal2", "low", "veryLow"]

  @Test("OperationPriority has Foundation's raw values and order")
  func priorityValues() {
    #expect(OperationPriority.allCases.map(\.rawValue) == [-8, -4, 0, 4, 8])
    #expect(OperationPriority.veryLow < .low && OperationPriority.low < .normal)
    #expect(OperationPriority.normal < .high && OperationPriority.high < .veryHigh)
    for priority in OperationPriority.allCases {
      #expect(Operation.QueuePriority(rawValue: priority.rawValue) != nil)
    }
  }

  @Test("Five priorities run highest first on a serial queue, FIFO within a priority")
  func fivePrioritiesSerial() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let recorder = Recorder<String>()
    for (name, priority) in Self.script {
      queue.addOperation(name: name, priority: priority) { recorder.append(name) }
    }
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.snapshot == Self.expected)
  }

  @Test("OperationQueue: five priorities run highest first on a serial queue, FIFO within a priority")
  func fivePrioritiesSerialFoundation() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    queue.isSuspended = true
    let recorder = Recorder<String>()
    for (name, priority) in Self.script {
      let operation = BlockOperation { recorder.append(name) }
      operation.queuePriority = Operation.QueuePriority(rawValue: priority.rawValue)!
      queue.addOperation(operation)
    }
    queue.isSuspended = false
    await queue.allFinished()
    #expect(recorder.snapshot == Self.expected)
  }

  @Test("Equal priority is FIFO, also behind a running op (no suspension)")
  func fifoEqualPriority() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let release = Gate()
    let recorder = Recorder<Int>()
    queue.addOperation { await release.wait() }
    for index in 0..<100 { queue.addOperation(priority: .low) { recorder.append(index) } }
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.snapshot == Array(0..<100))
  }

  @Test("A high-priority op added after a low one runs first on a busy serial queue (field scenario 7)")
  func highAfterLowRunsFirst() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let release = Gate()
    let started = Gate()
    let recorder = Recorder<String>()
    queue.addOperation {
      started.open()
      await release.wait()
    }
    await started.wait()
    queue.addOperation(name: "low", priority: .low) { recorder.append("low") }
    queue.addOperation(name: "high", priority: .high) { recorder.append("high") }
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.snapshot == ["high", "low"])
  }

  @Test("A batch added to an idle serial queue starts by priority: the batch is added whole, then scheduled")
  func batchOnIdleQueue() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let recorder = Recorder<String>()
    let operations = Self.script.map { name, priority in
      QueueOperation(name: name, priority: priority) { recorder.append(name) }
    }
    try await queue.addOperations(operations, waitUntilFinished: true)
    #expect(recorder.snapshot == Self.expected)
  }

  @Test("OperationQueue: a batch added to an idle serial queue starts by priority")
  func batchOnIdleQueueFoundation() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let recorder = Recorder<String>()
    let operations = Self.script.map { name, priority in
      let operation = BlockOperation { recorder.append(name) }
      operation.queuePriority = Operation.QueuePriority(rawValue: priority.rawValue)!
      return operation
    }
    await onBlockingThread { queue.addOperations(operations, waitUntilFinished: true) }
    #expect(recorder.snapshot == Self.expected)
  }

  @Test("Re-prioritising a waiting op re-sorts it at once (P11)")
  func reprioritiseResorts() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let recorder = Recorder<String>()
    let a = queue.addOperation(name: "a") { recorder.append("a") }
    _ = queue.addOperation(name: "b") { recorder.append("b") }
    let c = queue.addOperation(name: "c") { recorder.append("c") }
    let d = queue.addOperation(name: "d", priority: .veryHigh) { recorder.append("d") }
    c.queuePriority = .high
    a.queuePriority = .low
    d.queuePriority = .veryLow  // lowered below everything
    #expect(c.queuePriority == .high && a.queuePriority == .low && d.queuePriority == .veryLow)
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.snapshot == ["c", "b", "a", "d"])
  }

  @Test("Re-prioritising while a slot is busy: the next start follows the new priorities")
  func reprioritiseWhileBusy() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let started = Gate()
    let release = Gate()
    let recorder = Recorder<String>()
    queue.addOperation {
      started.open()
      await release.wait()
    }
    await started.wait()
    let ops = (0..<5).map { index in queue.addOperation(name: "\(index)") { recorder.append("\(index)") } }
    ops[3].queuePriority = .veryHigh
    ops[0].queuePriority = .veryLow
    ops[3].queuePriority = .high  // changed twice: the last change counts
    ops[1].queuePriority = .high
    ops[1].queuePriority = .normal  // back: keeps its submission place among normals
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.snapshot == ["3", "1", "2", "4", "0"])
  }

  @Test("OperationQueue (Linux): re-prioritising ops waiting in a suspended queue, same script")
  func reprioritiseFoundation() async {
    // Recorded for comparison: Apple documents queuePriority as a hint that may not re-sort
    // an enqueued op (P11); swift-corelibs-foundation sorts when it schedules, so this
    // script matches ActorQueue on Linux.
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    queue.isSuspended = true
    let recorder = Recorder<String>()
    var operations: [Operation] = []
    for (name, priority) in [
      ("a", Operation.QueuePriority.normal), ("b", .normal), ("c", .normal), ("d", .veryHigh),
    ] {
      let operation = BlockOperation { recorder.append(name) }
      operation.queuePriority = priority
      operations.append(operation)
      queue.addOperation(operation)
    }
    operations[2].queuePriority = .high
    operations[0].queuePriority = .low
    operations[3].queuePriority = .veryLow
    queue.isSuspended = false
    await queue.allFinished()
    #expect(recorder.snapshot == ["c", "b", "a", "d"])
  }

  @Test("Priority changes of executing and finished ops have no effect on ordering and do not crash")
  func reprioritiseStartedOps() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let started = Gate()
    let release = Gate()
    let running = queue.addOperation {
      started.open()
      await release.wait()
    }
    await started.wait()
    running.queuePriority = .veryLow
    #expect(running.queuePriority == .veryLow)
    #expect(running.isExecuting)
    release.open()
    await running.waitUntilFinished()
    running.queuePriority = .veryHigh
    #expect(running.state == .finished)
  }

  @Test("Priorities order only ready ops of one queue: a higher priority never jumps the limit")
  func priorityRespectsLimit() async {
    let queue = ActorQueue(maxConcurrentOperationCount: 2)
    let log = StreamLog(queue.events)
    queue.isSuspended = true
    let probe = ConcurrencyProbe()
    var operations: [AnyQueueOperation] = []
    for index in 0..<40 {
      let priority = OperationPriority.allCases[index % 5]
      operations.append(
        queue.addOperation(priority: priority) {
          probe.enter()
          await Task.yield()
          probe.leave()
        })
    }
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    let events = await log.waitForEnd(of: operations)
    log.stop()
    #expect(probe.maximum <= 2)
    #expect(events.allSatisfy { $0.executingCount <= 2 })
    // The first two to start are veryHigh ones.
    let firstTwo = Set(startOrder(in: events).prefix(2))
    let veryHigh = Set(operations.enumerated().filter { $0.offset % 5 == 4 }.map(\.element.id))
    #expect(firstTwo.isSubset(of: veryHigh))
  }

  @Test(
    "Many cancellations and priority changes among many waiting ops: the survivors run by priority, then submission"
  )
  func manyWithdrawalsKeepOrder() async {
    var random = SeededGenerator(seed: 7)
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let recorder = Recorder<Int>()
    let operations = (0..<400).map { index in
      queue.addOperation(priority: OperationPriority.allCases.randomElement(using: &random)!) {
        recorder.append(index)
      }
    }
    var survivors = Set(0..<400)
    for round in 0..<600 {
      let index = Int.random(in: 0..<400, using: &random)
      if round % 3 == 0 {
        operations[index].cancel()
        survivors.remove(index)
      } else {
        operations[index].queuePriority = OperationPriority.allCases.randomElement(using: &random)!
      }
    }
    let expected = survivors.sorted { lhs, rhs in
      let (l, r) = (operations[lhs].queuePriority, operations[rhs].queuePriority)
      return l != r ? l > r : lhs < rhs
    }
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.snapshot == expected)
  }
}

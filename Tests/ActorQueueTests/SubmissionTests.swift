import ActorQueue
import Foundation
import TestSupport
import Testing

/// Synchronous submission from a plain function: no `await` anywhere, so a UI callback or a
/// delegate can do the same.
private func submitInOrder(_ count: Int, to queue: ActorQueue, recording recorder: Recorder<Int>)
  -> [QueueOperation<Int>]
{
  (0..<count).map { index in
    queue.addOperation(name: "op\(index)") {
      recorder.append(index)
      return index
    }
  }
}

@Suite("Submission", .timeLimit(.minutes(hangLimitMinutes)))
struct SubmissionTests {
  @Test("addOperation { } is synchronous and consecutive calls from one thread keep their order")
  func consecutiveCallsKeepOrder() async throws {
    let queue = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    let recorder = Recorder<Int>()
    let operations = submitInOrder(200, to: queue, recording: recorder)
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.snapshot == Array(0..<200))
    for (index, operation) in operations.enumerated() {
      #expect(try await operation.value == index)
      #expect(operation.state == .finished)
    }
  }

  @Test("Consecutive calls from one thread keep their order on OperationQueue too")
  func consecutiveCallsKeepOrderFoundation() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let recorder = Recorder<Int>()
    for index in 0..<200 { queue.addOperation { recorder.append(index) } }
    await queue.allFinished()
    #expect(recorder.snapshot == Array(0..<200))
  }

  @Test("operationCount includes executing ops; operations are the unfinished ones in submission order")
  func countAndOperationsIncludeExecuting() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let started = Gate()
    let release = Gate()
    let a = queue.addOperation(name: "a") {
      started.open()
      await release.wait()
    }
    // a holds the only slot before the others arrive (otherwise b, higher, would go first).
    await started.wait()
    let b = queue.addOperation(name: "b", priority: .veryHigh) {}
    let c = queue.addOperation(name: "c", priority: .veryLow) {}
    #expect(a.isExecuting)
    #expect(queue.operationCount == 3)
    // Submission order, not priority order.
    #expect(queue.operations.map(\.name) == ["a", "b", "c"])
    #expect(queue.operations == [a, b, c])

    c.cancel()  // ends at once and leaves the queue at once
    #expect(queue.operationCount == 2)
    #expect(queue.operations == [a, b])

    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(queue.operationCount == 0)
    #expect(queue.operations.isEmpty)
  }

  @Test("OperationQueue: operationCount includes the executing op; operations in submission order")
  func countAndOperationsFoundation() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let a = BlockOperation {
      started.signal()
      release.wait()
    }
    a.name = "a"
    let b = BlockOperation {}
    b.name = "b"
    b.queuePriority = .veryHigh
    let c = BlockOperation {}
    c.name = "c"
    c.queuePriority = .veryLow
    queue.addOperation(a)
    await onBlockingThread { started.wait() }
    queue.addOperation(b)
    queue.addOperation(c)
    #expect(a.isExecuting)
    #expect(queue.operationCount == 3)
    #expect(queue.operations.map(\.name) == ["a", "b", "c"])
    release.signal()
    await queue.allFinished()
    #expect(queue.operationCount == 0)
  }

  @Test("operations stays in submission order through many ends in the middle")
  func operationsOrderThroughManyEnds() async {
    let queue = ActorQueue()
    queue.isSuspended = true
    let operations = (0..<300).map { index in queue.addOperation(name: "\(index)") { index } }
    for (index, operation) in operations.enumerated() where index % 3 != 0 {
      operation.cancel()
    }
    let remaining = operations.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
    #expect(queue.operations == remaining)
    #expect(queue.operationCount == 100)
    // More ends after the record was compacted.
    for operation in remaining.prefix(50) { operation.cancel() }
    #expect(queue.operations == Array(remaining.dropFirst(50)))
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(queue.operations.isEmpty)
  }

  @Test("addOperations adds prepared operations in order")
  func addOperationsInOrder() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let recorder = Recorder<Int>()
    let operations = (0..<5).map { index in QueueOperation(name: "p\(index)") { recorder.append(index) } }
    for operation in operations { #expect(operation.state == .pending) }
    try queue.addOperations(operations)
    await queue.waitUntilAllOperationsAreFinished()
    #expect(recorder.snapshot == [0, 1, 2, 3, 4])
  }

  @Test("A prepared operation never runs until a queue starts it (P9: no start())")
  func preparedOperationWaitsForAQueue() async throws {
    let ran = Counter()
    let prepared = QueueOperation { ran.increment() }
    // Another queue's work runs and ends; the prepared op is untouched.
    let queue = ActorQueue()
    #expect(try await queue.addOperation { 1 }.value == 1)
    #expect(prepared.state == .pending)
    #expect(!prepared.isReady && !prepared.isExecuting && !prepared.isFinished)
    #expect(ran.value == 0)
    try queue.addOperation(prepared)
    await prepared.waitUntilFinished()
    #expect(ran.value == 1)
    #expect(prepared.state == .finished)
  }

  @Test("Adding the same operation to the same queue twice throws alreadyEnqueued and changes nothing")
  func addTwiceSameQueue() async throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    let runs = Counter()
    let operation = QueueOperation(name: "once") { runs.increment() }
    try queue.addOperation(operation)
    #expect(throws: ActorQueueError.alreadyEnqueued) { try queue.addOperation(operation) }
    #expect(queue.operationCount == 1)
    #expect(operation.state == .ready)
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect(runs.value == 1)
    // Still refused once it has run.
    #expect(throws: ActorQueueError.alreadyEnqueued) { try queue.addOperation(operation) }
    #expect(queue.operationCount == 0)
    #expect(runs.value == 1)
  }

  @Test("Adding an operation to a second queue throws alreadyEnqueued and changes nothing")
  func addToAnotherQueue() async throws {
    let first = ActorQueue(name: "first")
    let second = ActorQueue(name: "second")
    first.isSuspended = true
    let operation = QueueOperation(name: "mine") { 7 }
    try first.addOperation(operation)
    #expect(throws: ActorQueueError.alreadyEnqueued) { try second.addOperation(operation) }
    #expect(throws: ActorQueueError.alreadyEnqueued) { try second.addOperations([operation]) }
    #expect(second.operationCount == 0)
    #expect(first.operations == [operation])
    first.isSuspended = false
    #expect(try await operation.value == 7)
  }

  @Test("addOperations is all or none: one already-enqueued op refuses the whole batch")
  func addOperationsAllOrNone() async throws {
    let queue = ActorQueue()
    queue.isSuspended = true
    let old = QueueOperation(name: "old") {}
    try queue.addOperation(old)
    let fresh1 = QueueOperation(name: "fresh1") {}
    let fresh2 = QueueOperation(name: "fresh2") {}
    #expect(throws: ActorQueueError.alreadyEnqueued) { try queue.addOperations([fresh1, old, fresh2]) }
    #expect(queue.operations == [old])
    #expect(fresh1.state == .pending && fresh2.state == .pending)
    // Nothing was consumed: the fresh ones can still be added.
    try queue.addOperations([fresh1, fresh2])
    #expect(queue.operations == [old, fresh1, fresh2])
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    #expect([old, fresh1, fresh2].allSatisfy { $0.state == .finished })
  }

  @Test("addOperations refuses an operation that appears twice in one array, and adds none")
  func addOperationsDuplicateInArray() async throws {
    let queue = ActorQueue()
    let runs = Counter()
    let a = QueueOperation(name: "a") { runs.increment() }
    let b = QueueOperation(name: "b") { runs.increment() }
    #expect(throws: ActorQueueError.alreadyEnqueued) { try queue.addOperations([a, b, a]) }
    #expect(queue.operationCount == 0)
    #expect(a.state == .pending && b.state == .pending)
    try queue.addOperations([a, b])
    await queue.waitUntilAllOperationsAreFinished()
    #expect(runs.value == 2)
  }

  @Test("An operation cancelled before it is added is accepted and stays cancelled")
  func addCancelledOperation() async throws {
    let queue = ActorQueue()
    let runs = Counter()
    let operation = QueueOperation { runs.increment() }
    operation.cancel()
    #expect(operation.state == .cancelled)
    try queue.addOperation(operation)
    #expect(operation.state == .cancelled)
    #expect(queue.operationCount == 0)
    await queue.waitUntilAllOperationsAreFinished()
    #expect(runs.value == 0)
    // Counted as enqueued from now on.
    #expect(throws: ActorQueueError.alreadyEnqueued) { try queue.addOperation(operation) }
  }

  @Test("Submission works from any context: a plain thread, many tasks at once")
  func submissionFromAnyContext() async throws {
    let queue = ActorQueue(maxConcurrentOperationCount: 3)
    let fromThread = await onBlockingThread { queue.addOperation(name: "thread") { 1 } }
    let values = try await withThrowingTaskGroup(of: Int.self) { group in
      for index in 0..<50 {
        group.addTask { try await queue.addOperation { index }.value }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(values.sorted() == Array(0..<50))
    #expect(try await fromThread.value == 1)
  }

  @Test("isExecuting is true inside the body, name and state are visible")
  func isExecutingInsideBody() async throws {
    let queue = ActorQueue()
    let me = Box<AnyQueueOperation>()
    let operation = QueueOperation(name: "self") { () -> (Bool, OperationState, Bool) in
      let op = me.value!
      return (op.isExecuting, op.state, op.isFinished)
    }
    me.value = operation
    try queue.addOperation(operation)
    let (executing, state, finished) = try await operation.value
    #expect(executing)
    #expect(state == .executing)
    #expect(!finished)
    #expect(operation.name == "self")
    #expect(!operation.isExecuting && operation.isFinished)
  }

  @Test("OperationQueue: isExecuting is true inside the body")
  func isExecutingInsideBodyFoundation() async {
    let queue = OperationQueue()
    let seen = Box<Bool>()
    let operation = BlockOperation()
    operation.addExecutionBlock { [unowned operation] in seen.value = operation.isExecuting }
    queue.addOperation(operation)
    await operation.finished()
    #expect(seen.value == true)
  }

  @Test("Bodies run in the queue's tasks: at its taskPriority, without the submitter's task-locals")
  func bodiesRunInQueueTasks() async throws {
    let queue = ActorQueue(name: "prio", taskPriority: .high)
    #expect(queue.taskPriority == .high)
    let (priority, local) = try await SubmissionLocals.$tag.withValue("submitter") {
      try await queue.addOperation { (Task.currentPriority, SubmissionLocals.tag) }.value
    }
    #expect(priority == .high)
    #expect(local == "none")
    #expect(queue.name == "prio")
    #expect(ActorQueue().name == nil)
  }
}

enum SubmissionLocals {
  @TaskLocal static var tag = "none"
}

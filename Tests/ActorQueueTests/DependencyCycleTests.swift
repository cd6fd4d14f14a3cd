import ActorQueue
import Foundation
import TestSupport
import Testing

/// Cycle detection (P5): issue 3, point 2. A refused edge leaves the graph exactly as it was.
@Suite("Dependency cycles")
struct DependencyCycleTests {
  @Test("An operation cannot depend on itself", arguments: [DependencyRequirement.completion, .success])
  func selfDependencyIsRefused(_ requirement: DependencyRequirement) async throws {
    let queue = ActorQueue(name: "q")
    let operation = QueueOperation<Int>(name: "self") { 7 }
    #expect(throws: ActorQueueError.dependencyCycle) {
      try operation.addDependency(operation, requiring: requirement)
    }
    #expect(operation.dependencies.isEmpty)
    #expect(operation.state == .pending)
    try queue.addOperation(operation)
    #expect(try await operation.value == 7)

    // Enqueued and ready: refused too, and it stays ready.
    let held = ActorQueue(name: "held")
    held.isSuspended = true
    let ready = held.addOperation(name: "ready") { 8 }
    #expect(throws: ActorQueueError.dependencyCycle) { try ready.addDependency(ready) }
    #expect(ready.state == .ready)
    held.isSuspended = false
    #expect(try await ready.value == 8)
  }

  @Test("A two-operation cycle is refused; both operations still run, in the existing order")
  func twoCycleIsRefused() async throws {
    let trace = Recorder<String>()
    let first = QueueOperation<Void>(name: "first") { trace.append("first") }
    let second = QueueOperation<Void>(name: "second") { trace.append("second") }
    try second.addDependency(first)
    #expect(throws: ActorQueueError.dependencyCycle) { try first.addDependency(second) }
    #expect(throws: ActorQueueError.dependencyCycle) { try first.addDependency(second, requiring: .success) }
    #expect(first.dependencies.isEmpty)
    #expect(second.dependencies.map(\.id) == [first.id])

    let queue = ActorQueue(name: "q")
    try await queue.addOperations([second, first], waitUntilFinished: true)
    #expect(trace.snapshot == ["first", "second"])
    #expect(first.state == .finished && second.state == .finished)
  }

  @Test("A longer cycle is refused and leaves every edge as it was")
  func longerCycleIsRefused() async throws {
    let trace = Recorder<Int>()
    let operations = (0..<5).map { index in QueueOperation<Void>(name: "op\(index)") { trace.append(index) } }
    // 0 ← 1 ← 2 ← 3 ← 4, plus a shortcut 0 ← 3.
    for index in 1..<5 { try operations[index].addDependency(operations[index - 1]) }
    try operations[3].addDependency(operations[0])
    let before = operations.map { $0.dependencies.map(\.id) }

    #expect(throws: ActorQueueError.dependencyCycle) { try operations[0].addDependency(operations[4]) }
    #expect(throws: ActorQueueError.dependencyCycle) { try operations[1].addDependency(operations[3]) }
    #expect(throws: ActorQueueError.dependencyCycle) {
      try operations[2].addDependency(operations[4], requiring: .success)
    }
    #expect(operations.map { $0.dependencies.map(\.id) } == before)

    // An edge in the direction of the existing ones is no cycle.
    try operations[4].addDependency(operations[1])
    #expect(operations[4].dependencies.map(\.id) == [operations[3].id, operations[1].id])

    let queue = ActorQueue(name: "q")
    try await queue.addOperations(operations.reversed(), waitUntilFinished: true)
    #expect(trace.snapshot == [0, 1, 2, 3, 4])
  }

  @Test("A cycle across queues is refused, between enqueued operations too")
  func crossQueueCycleIsRefused() async throws {
    let trace = Recorder<String>()
    let left = ActorQueue(name: "left")
    let right = ActorQueue(name: "right")
    left.isSuspended = true
    right.isSuspended = true
    let a = left.addOperation(name: "a") { trace.append("a") }
    let b = right.addOperation(name: "b") { trace.append("b") }
    let c = left.addOperation(name: "c") { trace.append("c") }
    try b.addDependency(a)
    try c.addDependency(b)
    #expect(a.state == .ready)
    #expect(b.state == .pending && c.state == .pending)

    #expect(throws: ActorQueueError.dependencyCycle) { try a.addDependency(c) }
    #expect(throws: ActorQueueError.dependencyCycle) { try a.addDependency(b) }
    // Nothing changed: a is still ready and waits for nothing.
    #expect(a.state == .ready)
    #expect(a.dependencies.isEmpty)
    #expect(b.dependencies.map(\.id) == [a.id])
    #expect(c.dependencies.map(\.id) == [b.id])

    right.isSuspended = false
    left.isSuspended = false
    await left.waitUntilAllOperationsAreFinished()
    #expect(trace.snapshot == ["a", "b", "c"])
  }

  @Test("A cycle through typed inputs is refused too")
  func cycleThroughTypedInputsIsRefused() async throws {
    let queue = ActorQueue(name: "q")
    queue.isSuspended = true
    let load = queue.addOperation(name: "load") { 1 }
    let parse = queue.addOperation(name: "parse", after: load) { $0 + 1 }
    #expect(throws: ActorQueueError.dependencyCycle) { try load.addDependency(parse) }
    #expect(load.dependencies.isEmpty)
    queue.isSuspended = false
    #expect(try await parse.value == 2)
  }

  @Test("An operation that ended waits for nothing: an edge back to it closes no cycle")
  func edgeBackToEndedOperationIsNoCycle() async throws {
    let queue = ActorQueue(name: "q")
    queue.isSuspended = true
    let upstream = queue.addOperation(name: "upstream") {}
    let downstream = QueueOperation<Void>(name: "downstream") {}
    try downstream.addDependency(upstream)
    downstream.cancel()  // ended without running; its edge to `upstream` stays listed
    #expect(downstream.dependencies.map(\.id) == [upstream.id])
    try upstream.addDependency(downstream)
    #expect(upstream.state == .ready, "an ended dependency is satisfied at once")
    queue.isSuspended = false
    await upstream.waitUntilFinished()
    #expect(upstream.state == .finished)
  }

  @Test("Foundation accepts a cycle and both operations are never ready (P5)")
  func foundationAcceptsCycleThatHangs() {
    // Asserted on operations outside any queue: in a queue they would hang forever.
    let first = BlockOperation {}
    let second = BlockOperation {}
    second.addDependency(first)
    first.addDependency(second)
    #expect(first.dependencies == [second])
    #expect(second.dependencies == [first])
    #expect(!first.isReady)
    #expect(!second.isReady)
    // (`op.addDependency(op)` is not asserted: swift-corelibs-foundation takes the operation's
    // lock twice there and the calling thread deadlocks inside addDependency.)
  }
}

import ActorQueueTesting
import Foundation
import TestSupport
import Testing

@testable import ActorQueue

/// Priority escalation through dependencies (beyond.md §1.10 d), on gates: no test sleeps. The
/// scheduler's effective priority is read on every platform; what a body reads of its own task's
/// priority only where the runtime escalates (Apple's platforms 26 and later, Linux).
@Suite("Priority escalation", .timeLimit(.minutes(hangLimitMinutes)))
struct EscalationTests {
  /// Whether the runtime's escalation API exists here (it escalates a running task).
  static var runtimeEscalates: Bool {
    if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) { return true }
    return false
  }

  /// What a body of a fresh queue of `priority` reads as its task's priority, awaited without
  /// escalating it (awaiting its value from this test's task would raise it to this task's).
  static func basePriority(_ priority: TaskPriority) async -> TaskPriority {
    let queue = ActorQueue(name: "baseline", taskPriority: priority)
    let seen = Recorder<TaskPriority>()
    queue.addOperation { seen.append(Task.currentPriority) }
    await queue.waitUntilAllOperationsAreFinished()
    return seen.snapshot[0]
  }

  @Test(
    "A .high task awaits an op of a .utility queue: it and its chain of 3 dependencies across queues are raised"
  )
  func awaitingRaisesTheChain() async throws {
    let queues = ["target", "x", "y", "z"].map { ActorQueue(name: $0, taskPriority: .utility) }
    for queue in queues { queue.isSuspended = true }
    let d3 = queues[3].addOperation(name: "d3") {}
    let d2 = QueueOperation(name: "d2") {}
    try d2.addDependency(d3)
    try queues[2].addOperation(d2)
    let d1 = QueueOperation(name: "d1") {}
    try d1.addDependency(d2)
    try queues[1].addOperation(d1)
    let target = QueueOperation(name: "target") {}
    try target.addDependency(d1)
    try queues[0].addOperation(target)
    let unrelated = queues[3].addOperation(name: "unrelated") {}
    let chain: [AnyQueueOperation] = [target, d1, d2, d3]
    #expect(chain.allSatisfy { $0.effectiveTaskPriority == .utility })

    let awaiter = Task(priority: .high) { await target.waitUntilFinished() }
    #expect(await eventually { chain.allSatisfy { ($0.effectiveTaskPriority ?? .low) >= .high } })
    #expect(unrelated.effectiveTaskPriority == .utility)
    // Default policy: the queue's order is kept.
    #expect(chain.allSatisfy { $0.queuePriority == .normal })

    // Never lowered: a lower awaiter changes nothing.
    let lower = Task(priority: .low) { await target.waitUntilFinished() }
    for queue in queues { queue.isSuspended = false }
    await awaiter.value
    await lower.value
    #expect(chain.allSatisfy { $0.effectiveTaskPriority == .high })
  }

  @Test("An escalation after the start raises the running task; the next op runs at the queue's priority")
  func runningTaskIsRaisedAndItsWorkerRetires() async throws {
    let queue = ActorQueue(name: "serial", maxConcurrentOperationCount: 1, taskPriority: .utility)
    let entered = Gate()
    let release = Gate()
    let seen = Recorder<String>()
    let first = queue.addOperation(name: "first") {
      entered.open()
      await release.wait()
      seen.append("first \(Task.currentPriority)")
    }
    let second = queue.addOperation(name: "second") { seen.append("second \(Task.currentPriority)") }
    await entered.wait()
    first.escalate(to: .high)  // as a .high task's await would (the effect runs before this returns)
    #expect(first.effectiveTaskPriority == .high)
    #expect(second.effectiveTaskPriority == .utility)
    release.open()
    await queue.waitUntilAllOperationsAreFinished()  // awaiting `second` would escalate it
    let base = await Self.basePriority(.utility)
    #expect(seen.snapshot == ["first \(Self.runtimeEscalates ? .high : base)", "second \(base)"])
  }

  @Test("An escalated op that starts later runs escalated, and its worker does not carry it on")
  func escalatedBeforeItStarts() async throws {
    let queue = ActorQueue(name: "later", maxConcurrentOperationCount: 1, taskPriority: .utility)
    queue.isSuspended = true
    let seen = Recorder<String>()
    let raised = queue.addOperation(name: "raised") { seen.append("raised \(Task.currentPriority)") }
    queue.addOperation(name: "plain") { seen.append("plain \(Task.currentPriority)") }
    raised.escalate(to: .high)
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()  // awaiting `plain` would escalate it
    let base = await Self.basePriority(.utility)
    #expect(seen.snapshot == ["raised \(Self.runtimeEscalates ? .high : base)", "plain \(base)"])
  }

  @Test("A prepared op escalated before it is added to an idle queue runs escalated")
  func preparedEscalatedBeforeAnIdleStart() async throws {
    let queue = ActorQueue(name: "idle", taskPriority: .utility)
    let seen = Recorder<String>()
    let raised = QueueOperation(name: "raised") { seen.append("raised \(Task.currentPriority)") }
    raised.escalate(to: .high)
    try queue.addOperation(raised)
    await queue.waitUntilAllOperationsAreFinished()
    let base = await Self.basePriority(.utility)
    #expect(seen.snapshot == ["raised \(Self.runtimeEscalates ? .high : base)"])
    #expect(raised.effectiveTaskPriority == .high)
  }

  @Test("Policy: .taskPriorityAndOrder starts the escalated op first; the default keeps Foundation's order")
  func policyReorders() async throws {
    func order(policy: EscalationPolicy?) async -> [String] {
      let queue = ActorQueue(name: "order", maxConcurrentOperationCount: 1, taskPriority: .utility)
      if let policy { queue.escalation = policy }
      queue.isSuspended = true
      let started = Recorder<String>()
      let ops = ["a", "b", "c"].map { name in queue.addOperation(name: name) { started.append(name) } }
      let awaiter = Task(priority: .high) { await ops[2].waitUntilFinished() }
      #expect(await eventually { ops[2].effectiveTaskPriority == .high })
      queue.isSuspended = false
      await awaiter.value
      await queue.waitUntilAllOperationsAreFinished()
      #expect(ops[2].queuePriority == (policy == .taskPriorityAndOrder ? .veryHigh : .normal))
      return started.snapshot
    }
    #expect(await order(policy: nil) == ["a", "b", "c"])
    #expect(ActorQueue(name: "default").escalation == .taskPriority)
    #expect(await order(policy: .taskPriorityAndOrder) == ["c", "a", "b"])
  }

  @Test("Awaiting a caller's handle to coalesced work raises the work; an ended dependency is left alone")
  func coalescedAndEnded() async throws {
    let queue = ActorQueue(name: "coalesced", taskPriority: .utility)
    let done = queue.addOperation(name: "done") {}
    await done.waitUntilFinished()
    queue.isSuspended = true
    let first = queue.addOperation(coalescingBy: "key") { 1 }
    let second = queue.addOperation(coalescingBy: "key") { 2 }
    let after = QueueOperation(name: "after") {}
    try after.addDependency(done)
    try queue.addOperation(after)
    second.escalate(to: .high)
    #expect(first.effectiveTaskPriority == .high)
    after.escalate(to: .userInitiated)
    #expect(done.effectiveTaskPriority == nil || done.effectiveTaskPriority == .medium)
    queue.isSuspended = false
    #expect(try await second.value == 1)
  }
}

/// Foundation beside escalation: waiting raises nothing (a difference escalation removes).
@Suite("Priority escalation: Foundation", .timeLimit(.minutes(hangLimitMinutes)))
struct EscalationFoundationTests {
  @Test("A user-initiated thread waiting on an Operation leaves its dependency's priority as it was")
  func foundationRaisesNothing() async throws {
    let queue = OperationQueue()
    queue.isSuspended = true
    let dependency = BlockOperation {}
    let operation = BlockOperation {}
    operation.addDependency(dependency)
    for added in [dependency, operation] { queue.addOperation(added) }
    let waiting = Gate()
    let waiter = Thread {
      waiting.open()
      operation.waitUntilFinished()
    }
    waiter.qualityOfService = .userInitiated
    waiter.start()
    await waiting.wait()
    #expect(dependency.queuePriority == .normal && operation.queuePriority == .normal)
    #expect(dependency.qualityOfService == .default)
    queue.isSuspended = false
    await queue.allFinished()
  }
}

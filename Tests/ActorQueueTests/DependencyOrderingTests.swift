import ActorQueue
import Foundation
import TestSupport
import Testing

/// Ordering dependencies (`addDependency`, `removeDependency`, `dependencies`): issue 3, point 1.
@Suite("Ordering dependencies")
struct DependencyOrderingTests {
  /// How the dependency ends in `dependentRunsWhenItsDependencyEndsHoweverItEnded`.
  enum Ending: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case finished, failed, cancelledWhileExecuting, cancelledWhileWaiting
    var testDescription: String { rawValue }

    var terminalState: OperationState {
      switch self {
      case .finished: .finished
      case .failed: .failed
      case .cancelledWhileExecuting, .cancelledWhileWaiting: .cancelled
      }
    }
  }

  /// A dependency and its dependent (not enqueued yet) that record their names in `trace`
  /// when they run.
  private static func tracedPair() throws -> (
    trace: Recorder<String>, dependency: QueueOperation<Void>, dependent: QueueOperation<Void>
  ) {
    let trace = Recorder<String>()
    let dependency = QueueOperation<Void>(name: "dependency") { trace.append("dependency") }
    let dependent = QueueOperation<Void>(name: "dependent") { trace.append("dependent") }
    try dependent.addDependency(dependency)
    return (trace, dependency, dependent)
  }

  /// Foundation's side of the ordering checks: a dependency and its dependent, BlockOperations
  /// that record their names, run on one OperationQueue with `limit`, added in the order given
  /// (the dependency cancelled first if asked). Returns once both have finished.
  private static func runFoundationPair(
    limit: Int = OperationQueue.defaultMaxConcurrentOperationCount, dependentFirst: Bool,
    cancellingTheDependency: Bool = false
  ) async -> (trace: [String], dependency: BlockOperation, dependent: BlockOperation) {
    let trace = Recorder<String>()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = limit
    let dependency = BlockOperation { trace.append("dependency") }
    let dependent = BlockOperation { trace.append("dependent") }
    dependent.addDependency(dependency)
    if cancellingTheDependency { dependency.cancel() }
    for operation in dependentFirst ? [dependent, dependency] : [dependency, dependent] {
      queue.addOperation(operation)
    }
    await queue.allFinished()
    return (trace.snapshot, dependency, dependent)
  }

  @Test("A dependent becomes ready when its dependency ends, however it ended", arguments: Ending.allCases)
  func dependentRunsWhenItsDependencyEndsHoweverItEnded(_ ending: Ending) async throws {
    let upstream = ActorQueue(name: "upstream")
    let downstream = ActorQueue(name: "downstream")
    let started = Gate()
    let release = Gate()
    let trace = Recorder<String>()
    let dependency = QueueOperation<Int>(name: "dependency") {
      started.open()
      await release.wait()
      trace.append("dependency")
      switch ending {
      case .finished: return 1
      case .failed: throw TestError(code: 1)
      case .cancelledWhileExecuting:
        try Task.checkCancellation()
        Issue.record("the body was cancelled before the release")
        return 0
      case .cancelledWhileWaiting:
        Issue.record("a dependency cancelled while waiting must not run")
        return 0
      }
    }
    let dependent = QueueOperation<Void>(name: "dependent") { trace.append("dependent") }
    try dependent.addDependency(dependency)
    try downstream.addOperation(dependent)
    #expect(dependent.state == .pending)

    if ending == .cancelledWhileWaiting {
      upstream.isSuspended = true
      try upstream.addOperation(dependency)
      #expect(dependency.state == .ready)
      #expect(dependent.state == .pending)
      dependency.cancel()
      // Released at once, before cancel() returned.
      #expect(dependent.state != .pending)
    } else {
      try upstream.addOperation(dependency)
      await started.wait()
      #expect(dependency.state == .executing)
      #expect(dependent.state == .pending, "a dependent must not be ready while its dependency executes")
      if ending == .cancelledWhileExecuting { dependency.cancel() }
      release.open()
    }

    await dependent.waitUntilFinished()
    #expect(dependency.state == ending.terminalState)
    #expect(dependent.state == .finished)
    #expect(!dependent.isCancelled)
    let expectedTrace = ending == .cancelledWhileWaiting ? ["dependent"] : ["dependency", "dependent"]
    #expect(trace.snapshot == expectedTrace)
  }

  @Test("Across queues, whichever operation is added to its queue first", arguments: [false, true])
  func crossQueueDependencyWhicheverIsAddedFirst(dependentFirst: Bool) async throws {
    let first = ActorQueue(name: "first", maxConcurrentOperationCount: 1)
    let second = ActorQueue(name: "second", maxConcurrentOperationCount: 1)
    let started = Gate()
    let release = Gate()
    let trace = Recorder<String>()
    let dependency = QueueOperation<Void>(name: "dependency") {
      started.open()
      await release.wait()
      trace.append("dependency")
    }
    let dependent = QueueOperation<Void>(name: "dependent") { trace.append("dependent") }
    try dependent.addDependency(dependency)
    if dependentFirst {
      try second.addOperation(dependent)
      #expect(dependent.state == .pending)
      try first.addOperation(dependency)
    } else {
      try first.addOperation(dependency)
      try second.addOperation(dependent)
    }
    await started.wait()
    #expect(dependent.state == .pending)
    #expect(second.operationCount == 1)
    release.open()
    await second.waitUntilAllOperationsAreFinished()
    #expect(trace.snapshot == ["dependency", "dependent"])
    #expect(dependency.state == .finished)
  }

  @Test("A dependency added after its dependent is enqueued moves a ready dependent back to pending")
  func addingDependencyToReadyOperationHoldsItAgain() async throws {
    let queue = ActorQueue(name: "held")
    queue.isSuspended = true
    let dependent = queue.addOperation(name: "dependent") {}
    #expect(dependent.state == .ready)
    let dependency = QueueOperation<Void>(name: "dependency") {}
    try dependent.addDependency(dependency)
    #expect(dependent.state == .pending)
    queue.isSuspended = false
    // Nothing may start it: its dependency is in no queue yet.
    #expect(dependent.state == .pending)
    let other = ActorQueue(name: "other")
    try other.addOperation(dependency)
    await dependent.waitUntilFinished()
    #expect(dependent.state == .finished)
  }

  @Test("A dependency that has already ended is satisfied at once", arguments: Ending.allCases)
  func alreadyEndedDependencyIsSatisfiedAtOnce(_ ending: Ending) async throws {
    let queue = ActorQueue(name: "q")
    let dependency = QueueOperation<Void>(name: "dependency") {
      switch ending {
      case .failed: throw TestError(code: 2)
      case .cancelledWhileExecuting: throw CancellationError()
      case .finished, .cancelledWhileWaiting: return
      }
    }
    if ending == .cancelledWhileWaiting {
      dependency.cancel()
    } else {
      try queue.addOperation(dependency)
    }
    await dependency.waitUntilFinished()
    #expect(dependency.state == ending.terminalState)

    // Enqueued and ready first, then given the ended dependency: it stays ready.
    let held = ActorQueue(name: "held")
    held.isSuspended = true
    let readyOne = held.addOperation(name: "ready") {}
    try readyOne.addDependency(dependency)
    #expect(readyOne.state == .ready)
    #expect(readyOne.dependencies.map(\.id) == [dependency.id])

    // Given the ended dependency first, then enqueued: ready at once.
    let prepared = QueueOperation<Void>(name: "prepared") {}
    try prepared.addDependency(dependency)
    try held.addOperation(prepared)
    #expect(prepared.state == .ready)

    held.isSuspended = false
    await held.waitUntilAllOperationsAreFinished()
    #expect(readyOne.state == .finished)
    #expect(prepared.state == .finished)

    // Foundation: a finished dependency does not hold its dependent either.
    let foundationDependency = BlockOperation {}
    if ending == .cancelledWhileWaiting { foundationDependency.cancel() }
    let foundationQueue = OperationQueue()
    foundationQueue.addOperation(foundationDependency)
    await foundationQueue.allFinished()
    let foundationDependent = BlockOperation {}
    foundationDependent.addDependency(foundationDependency)
    #expect(foundationDependent.isReady)
    #expect(foundationDependent.dependencies == [foundationDependency])
  }

  @Test(
    "removeDependency of an unfinished dependency makes the operation ready (Foundation on Linux does not)")
  func removingUnfinishedDependencyMakesOperationReady() async throws {
    let held = ActorQueue(name: "held")
    held.isSuspended = true
    let queue = ActorQueue(name: "q")
    let dependency = held.addOperation(name: "dependency") {}
    let dependent = QueueOperation<Void>(name: "dependent") {}
    try dependent.addDependency(dependency)
    try queue.addOperation(dependent)
    #expect(dependent.state == .pending)
    dependent.removeDependency(dependency)
    #expect(dependent.dependencies.isEmpty)
    #expect(dependent.state != .pending, "nothing else holds it: ready at once")
    await dependent.waitUntilFinished()
    #expect(dependent.state == .finished)
    #expect(dependency.state == .ready, "the removed dependency is untouched")
    dependency.cancel()

    // Foundation: the dependency list forgets it, but readiness is not re-evaluated on Linux:
    // the dependent would never become ready, and a queue holding it would hang. Asserted on
    // operations outside any queue, so nothing hangs.
    let foundationDependency = BlockOperation {}
    let foundationDependent = BlockOperation {}
    foundationDependent.addDependency(foundationDependency)
    #expect(!foundationDependent.isReady)
    foundationDependent.removeDependency(foundationDependency)
    #expect(foundationDependent.dependencies.isEmpty)
    #if canImport(Darwin)
      #expect(foundationDependent.isReady)
    #else
      #expect(!foundationDependent.isReady, "swift-corelibs-foundation keeps the removed dependency counted")
      // Not even the end of the removed dependency releases it.
      let foundationQueue = OperationQueue()
      foundationQueue.addOperation(foundationDependency)
      await foundationQueue.allFinished()
      #expect(!foundationDependent.isReady)
    #endif
  }

  @Test("removeDependency leaves the operation pending while another dependency holds it")
  func removingOneOfTwoDependenciesKeepsOperationPending() async throws {
    let held = ActorQueue(name: "held")
    held.isSuspended = true
    let queue = ActorQueue(name: "q")
    let removed = held.addOperation(name: "removed") {}
    let kept = held.addOperation(name: "kept") {}
    let dependent = QueueOperation<Void>(name: "dependent") {}
    try dependent.addDependency(removed)
    try dependent.addDependency(kept)
    try queue.addOperation(dependent)
    dependent.removeDependency(removed)
    #expect(dependent.state == .pending)
    #expect(dependent.dependencies.map(\.id) == [kept.id])
    removed.cancel()
    #expect(dependent.state == .pending, "the removed dependency no longer releases it")
    held.isSuspended = false
    await dependent.waitUntilFinished()
    #expect(kept.state == .finished)
    #expect(dependent.state == .finished)
  }

  @Test("removeDependency of an operation that is not a dependency, or already ended, changes nothing else")
  func removingEndedOrUnknownDependency() async throws {
    let queue = ActorQueue(name: "q")
    let ended = queue.addOperation(name: "ended") {}
    await ended.waitUntilFinished()
    let stranger = QueueOperation<Void>(name: "stranger") {}
    let held = ActorQueue(name: "held")
    held.isSuspended = true
    let holder = held.addOperation(name: "holder") {}
    let dependent = QueueOperation<Void>(name: "dependent") {}
    try dependent.addDependency(ended)
    try dependent.addDependency(holder)
    try queue.addOperation(dependent)
    dependent.removeDependency(stranger)
    dependent.removeDependency(ended)
    #expect(dependent.dependencies.map(\.id) == [holder.id])
    #expect(dependent.state == .pending)
    held.isSuspended = false
    await dependent.waitUntilFinished()
    #expect(dependent.state == .finished)
  }

  @Test("addDependency after the operation started throws alreadyStarted and changes nothing")
  func addDependencyAfterStartThrows() async throws {
    let queue = ActorQueue(name: "q")
    let started = Gate()
    let release = Gate()
    let running = queue.addOperation(name: "running") {
      started.open()
      await release.wait()
    }
    let other = QueueOperation<Void>(name: "other") {}
    await started.wait()
    #expect(throws: ActorQueueError.alreadyStarted) { try running.addDependency(other) }
    #expect(throws: ActorQueueError.alreadyStarted) { try running.addDependency(other, requiring: .success) }
    #expect(running.dependencies.isEmpty)
    release.open()
    await running.waitUntilFinished()
    #expect(throws: ActorQueueError.alreadyStarted) { try running.addDependency(other) }
    #expect(running.dependencies.isEmpty)

    // Ended without starting (cancelled while waiting) counts as started too.
    let cancelled = QueueOperation<Void>(name: "cancelled") {}
    cancelled.cancel()
    #expect(throws: ActorQueueError.alreadyStarted) { try cancelled.addDependency(other) }

    // The refused edge left `other` free: it runs and ends normally.
    try queue.addOperation(other)
    await other.waitUntilFinished()
    #expect(other.state == .finished)
  }

  @Test("removeDependency after the operation started has no effect")
  func removeDependencyAfterStartHasNoEffect() async throws {
    let queue = ActorQueue(name: "q")
    let dependency = queue.addOperation(name: "dependency") {}
    let started = Gate()
    let release = Gate()
    let running = QueueOperation<Void>(name: "running") {
      started.open()
      await release.wait()
    }
    try running.addDependency(dependency)
    try queue.addOperation(running)
    await started.wait()
    running.removeDependency(dependency)
    #expect(running.dependencies.map(\.id) == [dependency.id])
    release.open()
    await running.waitUntilFinished()
    running.removeDependency(dependency)
    #expect(running.dependencies.map(\.id) == [dependency.id])
  }

  @Test("Releasing a suspended queue cancels its waiting operations and releases their dependents elsewhere")
  func releasingSuspendedQueueReleasesDependentsElsewhere() async throws {
    let queue = ActorQueue(name: "q")
    var held: ActorQueue? = ActorQueue(name: "held")
    held?.isSuspended = true
    let dependency = try #require(held?.addOperation(name: "dependency") { 1 })
    let lenient = QueueOperation<String>(name: "lenient") { "ran" }
    try lenient.addDependency(dependency)
    try queue.addOperation(lenient)
    let typed = queue.addOperation(name: "typed", after: dependency) { $0 + 1 }
    #expect(lenient.state == .pending && typed.state == .pending)
    held = nil
    #expect(dependency.state == .cancelled)
    #expect(try await lenient.value == "ran")
    #expect(typed.state == .cancelled)
  }

  // MARK: Foundation's own tests, re-expressed and asserted against OperationQueue

  @Test("Dependency count: adding one twice counts it once; removing one drops it")
  func dependencyCount() throws {
    let first = QueueOperation<Void>(name: "first") {}
    let second = QueueOperation<Void>(name: "second") {}
    let dependent = QueueOperation<Void>(name: "dependent") {}
    try dependent.addDependency(first)
    try dependent.addDependency(second)
    try dependent.addDependency(first)
    #expect(dependent.dependencies.map(\.id) == [first.id, second.id])
    dependent.removeDependency(first)
    #expect(dependent.dependencies.map(\.id) == [second.id])
    dependent.removeDependency(second)
    #expect(dependent.dependencies.isEmpty)

    let foundationFirst = BlockOperation {}
    let foundationSecond = BlockOperation {}
    let foundationDependent = BlockOperation {}
    foundationDependent.addDependency(foundationFirst)
    foundationDependent.addDependency(foundationSecond)
    foundationDependent.addDependency(foundationFirst)
    #expect(foundationDependent.dependencies.count == 2)
    foundationDependent.removeDependency(foundationFirst)
    #expect(foundationDependent.dependencies == [foundationSecond])
    foundationDependent.removeDependency(foundationSecond)
    #expect(foundationDependent.dependencies.isEmpty)
  }

  @Test("A cancelled dependency is skipped and its dependent runs")
  func cancelledDependencyIsSkippedAndDependentRuns() async throws {
    let (trace, dependency, dependent) = try Self.tracedPair()
    let queue = ActorQueue(name: "q")
    dependency.cancel()
    try await queue.addOperations([dependency, dependent], waitUntilFinished: true)
    #expect(trace.snapshot == ["dependent"])
    #expect(dependency.isCancelled && dependency.isFinished)
    #expect(dependent.state == .finished && !dependent.isCancelled)

    let foundation = await Self.runFoundationPair(dependentFirst: false, cancellingTheDependency: true)
    #expect(foundation.trace == ["dependent"])
    #expect(foundation.dependency.isCancelled && foundation.dependency.isFinished)
    #expect(foundation.dependent.isFinished && !foundation.dependent.isCancelled)
  }

  @Test("A dependent added before its dependency on a serial queue does not deadlock")
  func dependentAddedFirstOnSerialQueueDoesNotDeadlock() async throws {
    let (trace, dependency, dependent) = try Self.tracedPair()
    let queue = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    try queue.addOperation(dependent)
    try queue.addOperation(dependency)
    await queue.waitUntilAllOperationsAreFinished()
    #expect(trace.snapshot == ["dependency", "dependent"])

    let foundation = await Self.runFoundationPair(limit: 1, dependentFirst: true)
    #expect(foundation.trace == ["dependency", "dependent"])
  }

  @Test("Cross-queue dependency: the dependent waits for an operation of another queue")
  func crossQueueDependency() async throws {
    let trace = Recorder<String>()
    let started = Gate()
    let release = Gate()
    let first = ActorQueue(name: "first")
    let second = ActorQueue(name: "second")
    let dependency = first.addOperation(name: "dependency") {
      started.open()
      await release.wait()
      trace.append("dependency")
    }
    let dependent = QueueOperation<Void>(name: "dependent") { trace.append("dependent") }
    try dependent.addDependency(dependency)
    try second.addOperation(dependent)
    await started.wait()
    #expect(!dependent.isReady)
    release.open()
    await dependent.waitUntilFinished()
    #expect(trace.snapshot == ["dependency", "dependent"])

    let foundationTrace = Recorder<String>()
    let foundationStarted = Gate()
    let foundationRelease = BlockingGate()
    let foundationFirst = OperationQueue()
    let foundationSecond = OperationQueue()
    let foundationDependency = BlockOperation {
      foundationStarted.open()
      foundationRelease.wait()
      foundationTrace.append("dependency")
    }
    let foundationDependent = BlockOperation { foundationTrace.append("dependent") }
    foundationDependent.addDependency(foundationDependency)
    foundationFirst.addOperation(foundationDependency)
    foundationSecond.addOperation(foundationDependent)
    await foundationStarted.wait()
    #expect(!foundationDependent.isReady)
    foundationRelease.open()
    await foundationDependent.finished()
    #expect(foundationTrace.snapshot == ["dependency", "dependent"])
  }

  @Test("A dependency runs first even when it is added second")
  func dependencyRunsFirstEvenWhenAddedSecond() async throws {
    let (trace, dependency, dependent) = try Self.tracedPair()
    let queue = ActorQueue(name: "concurrent")
    try await queue.addOperations([dependent, dependency], waitUntilFinished: true)
    #expect(trace.snapshot == ["dependency", "dependent"])

    let foundation = await Self.runFoundationPair(dependentFirst: true)
    #expect(foundation.trace == ["dependency", "dependent"])
  }

  @Test("Waiting for all operations of a queue waits for a dependent held by another queue")
  func waitingForAllWithCrossQueueDependency() async throws {
    let trace = Recorder<String>()
    let release = Gate()
    let first = ActorQueue(name: "first")
    let second = ActorQueue(name: "second")
    let dependency = first.addOperation(name: "dependency") {
      await release.wait()
      trace.append("dependency")
    }
    let dependent = QueueOperation<Void>(name: "dependent") { trace.append("dependent") }
    try dependent.addDependency(dependency)
    try second.addOperation(dependent)
    let waiter = Task {
      await second.waitUntilAllOperationsAreFinished()
      trace.append("waited")
    }
    release.open()
    await waiter.value
    #expect(trace.snapshot == ["dependency", "dependent", "waited"])
    #expect(second.operationCount == 0)

    let foundationTrace = Recorder<String>()
    let foundationRelease = BlockingGate()
    let foundationFirst = OperationQueue()
    let foundationSecond = OperationQueue()
    let foundationDependency = BlockOperation {
      foundationRelease.wait()
      foundationTrace.append("dependency")
    }
    let foundationDependent = BlockOperation { foundationTrace.append("dependent") }
    foundationDependent.addDependency(foundationDependency)
    foundationFirst.addOperation(foundationDependency)
    foundationSecond.addOperation(foundationDependent)
    let foundationWaiter = Task {
      await foundationSecond.allFinished()
      foundationTrace.append("waited")
    }
    foundationRelease.open()
    await foundationWaiter.value
    #expect(foundationTrace.snapshot == ["dependency", "dependent", "waited"])
  }
}

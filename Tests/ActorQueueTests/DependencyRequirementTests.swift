import ActorQueue
import TestSupport
import Testing

/// The failure policy for ordering dependencies, `addDependency(_:requiring: .success)`:
/// issue 3, point 4. It must behave as a typed input does (point 3), while staying removable.
@Suite("Dependency requirement .success")
struct DependencyRequirementTests {
  @Test("A dependency that finished releases its dependent as usual")
  func finishedDependencyReleasesDependent() async throws {
    let queue = ActorQueue(name: "q")
    let trace = Recorder<String>()
    let release = Gate()
    let dependency = QueueOperation<Void>(name: "dependency") {
      await release.wait()
      trace.append("dependency")
    }
    let dependent = QueueOperation<Void>(name: "dependent") { trace.append("dependent") }
    try dependent.addDependency(dependency, requiring: .success)
    try queue.addOperations([dependent, dependency])
    #expect(dependent.state == .pending)
    release.open()
    await dependent.waitUntilFinished()
    #expect(dependent.state == .finished)
    #expect(trace.snapshot == ["dependency", "dependent"])
  }

  @Test("A failed dependency fails the dependent with DependencyFailedError; it never runs")
  func failedDependencyFailsDependent() async throws {
    let queue = ActorQueue(name: "q")
    let ran = RunFlag()
    let release = Gate()
    let dependency = QueueOperation<Void>(name: "login") {
      await release.wait()
      throw TestError(code: 401)
    }
    let dependent = QueueOperation<Void>(name: "profile") { ran.mark() }
    try dependent.addDependency(dependency, requiring: .success)
    try queue.addOperations([dependency, dependent])
    let states = dependent.collectStates()
    release.open()
    let failure = try #require(dependencyFailure(await dependent.result))
    #expect(failure.dependencyID == dependency.id)
    #expect(failure.dependencyName == "login")
    #expect(failure.underlyingError as? TestError == TestError(code: 401))
    #expect(dependent.state == .failed)
    #expect(!ran.didRun)
    #expect(await states.value == [.pending, .failed])
  }

  @Test("A cancelled dependency cancels the dependent", arguments: [false, true])
  func cancelledDependencyCancelsDependent(whileExecuting: Bool) async throws {
    let queue = ActorQueue(name: "q")
    let ran = RunFlag()
    let started = Gate()
    let dependency = QueueOperation<Void>(name: "dependency") {
      started.open()
      while true {
        try Task.checkCancellation()
        await Task.yield()
      }
    }
    let dependent = QueueOperation<Void>(name: "dependent") { ran.mark() }
    try dependent.addDependency(dependency, requiring: .success)
    if whileExecuting {
      try queue.addOperations([dependency, dependent])
      await started.wait()
      dependency.cancel()
      await dependent.waitUntilFinished()
    } else {
      try queue.addOperation(dependent)
      dependency.cancel()  // never enqueued: ends at once
      #expect(dependent.state == .cancelled, "at once")
    }
    #expect(dependency.state == .cancelled)
    #expect(dependent.state == .cancelled)
    #expect(dependent.isCancelled)
    #expect(!ran.didRun)
    await #expect(throws: CancellationError.self) { try await (dependent as QueueOperation<Void>).value }
  }

  @Test("A dependency that asked to cancel but finished anyway satisfies .success")
  func cancelRequestedButFinishedSatisfiesSuccess() async throws {
    let queue = ActorQueue(name: "q")
    let started = Gate()
    let release = Gate()
    let dependency = queue.addOperation(name: "stubborn") {
      started.open()
      await release.wait()
    }
    let dependent = QueueOperation<Int>(name: "dependent") { 1 }
    try dependent.addDependency(dependency, requiring: .success)
    try queue.addOperation(dependent)
    await started.wait()
    dependency.cancel()
    release.open()
    #expect(try await dependent.value == 1)
    #expect(dependency.state == .finished && dependency.isCancelled)
  }

  @Test("A dependency that already failed or was cancelled ends the dependent as soon as it is added")
  func alreadyEndedDependencyEndsDependentAtOnce() async throws {
    let queue = ActorQueue(name: "q")
    let failed = queue.addOperation(name: "failed") { () async throws in throw TestError(code: 5) }
    await failed.waitUntilFinished()
    let ran = RunFlag()

    let afterFailure = QueueOperation<Void>(name: "afterFailure") { ran.mark() }
    try afterFailure.addDependency(failed, requiring: .success)
    #expect(afterFailure.state == .failed, "not enqueued yet: ends at once all the same")
    #expect(dependencyFailure(await afterFailure.result)?.underlyingError as? TestError == TestError(code: 5))
    try queue.addOperation(afterFailure)  // accepted, stays failed
    #expect(afterFailure.state == .failed)

    let cancelled = QueueOperation<Void>(name: "cancelled") {}
    cancelled.cancel()
    let held = ActorQueue(name: "held")
    held.isSuspended = true
    let afterCancel = held.addOperation(name: "afterCancel") { ran.mark() }
    #expect(afterCancel.state == .ready)
    try afterCancel.addDependency(cancelled, requiring: .success)
    #expect(afterCancel.state == .cancelled, "an enqueued, ready dependent ends at once too")
    #expect(held.operationCount == 0)
    held.isSuspended = false
    #expect(!ran.didRun)

    // The default requirement, on the other hand, is satisfied by any ended dependency.
    let lenient = QueueOperation<Void>(name: "lenient") {}
    try lenient.addDependency(failed)
    try queue.addOperation(lenient)
    await lenient.waitUntilFinished()
    #expect(lenient.state == .finished)
  }

  @Test("Adding an existing dependency again with .success makes the requirement stricter, never looser")
  func requirementOnlyGetsStricter() async throws {
    let queue = ActorQueue(name: "q")
    let ran = RunFlag()
    let release = Gate()
    let dependency = QueueOperation<Void>(name: "dependency") {
      await release.wait()
      throw TestError(code: 6)
    }
    let strict = QueueOperation<Void>(name: "strict") { ran.mark() }
    try strict.addDependency(dependency)
    try strict.addDependency(dependency, requiring: .success)
    let stays = QueueOperation<Void>(name: "stays") { ran.mark() }
    try stays.addDependency(dependency, requiring: .success)
    try stays.addDependency(dependency)  // not loosened
    #expect(strict.dependencies.count == 1 && stays.dependencies.count == 1)
    try queue.addOperations([dependency, strict, stays])
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    #expect(strict.state == .failed)
    #expect(stays.state == .failed)
    #expect(!ran.didRun)
  }

  @Test("Upgrading the requirement of a dependency that already failed ends the dependent at once")
  func upgradingAfterDependencyFailedEndsDependent() async throws {
    let queue = ActorQueue(name: "q")
    let failed = queue.addOperation(name: "failed") { () async throws in throw TestError(code: 7) }
    await failed.waitUntilFinished()
    let held = ActorQueue(name: "held")
    held.isSuspended = true
    let dependent = QueueOperation<Void>(name: "dependent") {}
    try dependent.addDependency(failed)
    try held.addOperation(dependent)
    #expect(dependent.state == .ready)
    try dependent.addDependency(failed, requiring: .success)
    #expect(dependent.state == .failed)
    #expect(dependencyFailure(await dependent.result)?.dependencyID == failed.id)
  }

  @Test("Unlike a typed input, a .success dependency can be removed")
  func successDependencyIsRemovable() async throws {
    let held = ActorQueue(name: "held")
    held.isSuspended = true
    let queue = ActorQueue(name: "q")
    let dependency = held.addOperation(name: "dependency") { () async throws in throw TestError(code: 8) }
    let dependent = QueueOperation<Int>(name: "dependent") { 1 }
    try dependent.addDependency(dependency, requiring: .success)
    try queue.addOperation(dependent)
    dependent.removeDependency(dependency)
    #expect(dependent.dependencies.isEmpty)
    #expect(try await dependent.value == 1)
    held.isSuspended = false
    await dependency.waitUntilFinished()
    #expect(dependency.state == .failed)
    #expect(dependent.state == .finished, "the removed edge does not reach it")
  }

  @Test(
    "Failure propagates transitively and at once over .success edges, using no slot; a .completion edge stops it"
  )
  func transitivePropagationWithoutSlot() async throws {
    let source = ActorQueue(name: "source")
    let serial = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    let ran = Recorder<String>()
    let holding = Gate()
    let releaseHolder = Gate()
    let releaseSource = Gate()
    let holder = serial.addOperation(name: "holder") {
      holding.open()
      await releaseHolder.wait()
    }
    await holding.wait()
    let root = QueueOperation<Void>(name: "root") {
      await releaseSource.wait()
      throw TestError(code: 1)
    }
    let b = QueueOperation<Void>(name: "b") { ran.append("b") }
    let c = QueueOperation<Void>(name: "c") { ran.append("c") }
    let report = QueueOperation<Void>(name: "report") { ran.append("report") }
    try b.addDependency(root, requiring: .success)
    try c.addDependency(b, requiring: .success)
    try report.addDependency(c)  // runs however c ends
    try serial.addOperations([report, c, b])
    try source.addOperation(root)
    releaseSource.open()
    await root.waitUntilFinished()
    #expect(holder.state == .executing)
    #expect(b.state == .failed && c.state == .failed)
    #expect(report.state == .ready, "released by c's end, waiting for the held slot")
    let failure = try #require(dependencyFailure(await c.result))
    #expect(failure.dependencyID == b.id)
    #expect(failure.originID == root.id)
    #expect(!(failure.underlyingError is DependencyFailedError), "flat: the origin's own error")
    releaseHolder.open()
    await report.waitUntilFinished()
    #expect(report.state == .finished)
    #expect(ran.snapshot == ["report"])
  }

  @Test("Cancellation propagates transitively and at once over .success edges on a suspended queue")
  func cancellationPropagatesOnSuspendedQueue() async throws {
    let queue = ActorQueue(name: "held")
    queue.isSuspended = true
    let root = queue.addOperation(name: "root") {}
    var chain: [AnyQueueOperation] = [root]
    for index in 1...5 {
      let next = QueueOperation<Void>(name: "op\(index)") {}
      try next.addDependency(chain[index - 1], requiring: .success)
      try queue.addOperation(next)
      chain.append(next)
    }
    root.cancel()
    #expect(chain.allSatisfy { $0.state == .cancelled })
    #expect(queue.operationCount == 0)
  }
}

import ActorQueue
import Foundation
import TestSupport
import Testing

/// Typed data dependencies, `addOperation(after:…)` (P6): issue 3, point 3.
@Suite("Typed data dependencies")
struct DependencyDataTests {
  @Test("One input: the dependent receives its value, typed")
  func oneInput() async throws {
    let queue = ActorQueue(name: "q")
    let load = queue.addOperation(name: "load") { [UInt8](repeating: 7, count: 3) }
    let sum = queue.addOperation(name: "sum", after: load) { bytes in bytes.reduce(0) { $0 + Int($1) } }
    #expect(try await sum.value == 21)
    #expect(sum.dependencies.map(\.id) == [load.id])
  }

  @Test("Several inputs of different types, from different queues, in order")
  func severalInputs() async throws {
    let first = ActorQueue(name: "first")
    let second = ActorQueue(name: "second")
    let releaseA = Gate()
    let releaseC = Gate()
    let a = first.addOperation(name: "a") {
      await releaseA.wait()
      return 3
    }
    let b = second.addOperation(name: "b") { "three" }
    let c = first.addOperation(name: "c") {
      await releaseC.wait()
      return [1.5, 2.5]
    }
    let joined = second.addOperation(name: "joined", after: a, b, c) { va, vb, vc in
      "\(va) \(vb) \(vc.reduce(0, +))"
    }
    #expect(joined.dependencies.map(\.id) == [a.id, b.id, c.id])
    await b.waitUntilFinished()
    #expect(joined.state == .pending)
    releaseC.open()
    await c.waitUntilFinished()
    #expect(joined.state == .pending, "a is still unfinished")
    releaseA.open()
    #expect(try await joined.value == "3 three 4.0")
  }

  @Test("The same input twice, and an input that also feeds another dependent")
  func sharedInputs() async throws {
    let queue = ActorQueue(name: "q")
    let base = queue.addOperation(name: "base") { 5 }
    let square = queue.addOperation(name: "square", after: base, base) { x, y in x * y }
    let plusSquare = queue.addOperation(name: "plus", after: base, square) { x, y in x + y }
    #expect(try await square.value == 25)
    #expect(try await plusSquare.value == 30)
  }

  @Test("An input that was asked to cancel but returned a value counts as finished")
  func inputCancelledButReturnedCountsAsFinished() async throws {
    let queue = ActorQueue(name: "q")
    let started = Gate()
    let release = Gate()
    let stubborn = queue.addOperation(name: "stubborn") {
      started.open()
      await release.wait()  // ignores cancellation
      return 42
    }
    let dependent = queue.addOperation(name: "dependent", after: stubborn) { $0 + 1 }
    await started.wait()
    stubborn.cancel()
    #expect(stubborn.isCancelled)
    #expect(dependent.state == .pending)
    release.open()
    #expect(try await dependent.value == 43)
    #expect(stubborn.state == .finished)
    #expect(!dependent.isCancelled)
  }

  @Test("An input failure ends the dependent .failed, naming the input and carrying its error; it never runs")
  func inputFailureFailsDependent() async throws {
    let queue = ActorQueue(name: "q")
    let ran = RunFlag()
    let release = Gate()
    let good = queue.addOperation(name: "good") { 1 }
    let bad = queue.addOperation(name: "bad") { () async throws -> String in
      await release.wait()
      throw TestError(code: 9)
    }
    let dependent = queue.addOperation(name: "dependent", after: good, bad) { _, _ in ran.mark() }
    let states = dependent.collectStates()
    release.open()
    let result = await dependent.result
    let failure = try #require(dependencyFailure(result))
    #expect(failure.dependencyID == bad.id)
    #expect(failure.dependencyName == "bad")
    #expect(failure.underlyingError as? TestError == TestError(code: 9))
    #expect(String(describing: failure).contains("'bad'"))
    #expect(dependent.state == .failed)
    #expect(!dependent.isCancelled)
    #expect(!ran.didRun)
    #expect(await states.value == [.pending, .failed], "never ready, never executing")
    await #expect(throws: DependencyFailedError.self) { try await dependent.value }
  }

  @Test("An input cancelled while waiting cancels the dependent at once")
  func inputCancelledWhileWaitingCancelsDependent() async throws {
    let queue = ActorQueue(name: "q")
    queue.isSuspended = true
    let ran = RunFlag()
    let input = queue.addOperation(name: "input") { 1 }
    let dependent = queue.addOperation(name: "dependent", after: input) { _ in ran.mark() }
    input.cancel()
    #expect(dependent.state == .cancelled, "at once, before cancel() returned")
    #expect(dependent.isCancelled)
    #expect(queue.operationCount == 0)
    queue.isSuspended = false
    await #expect(throws: CancellationError.self) { try await dependent.value }
    #expect(!ran.didRun)
  }

  @Test("An input whose body throws CancellationError cancels the dependent")
  func inputCancelledWhileExecutingCancelsDependent() async throws {
    let queue = ActorQueue(name: "q")
    let ran = RunFlag()
    let started = Gate()
    let input = queue.addOperation(name: "input") { () async throws -> Int in
      started.open()
      while true {
        try Task.checkCancellation()
        await Task.yield()
      }
    }
    let dependent = queue.addOperation(name: "dependent", after: input) { _ in ran.mark() }
    await started.wait()
    input.cancel()
    await dependent.waitUntilFinished()
    #expect(input.state == .cancelled)
    #expect(dependent.state == .cancelled)
    #expect(dependent.isCancelled)
    #expect(!ran.didRun)
  }

  @Test("A dependent whose input ended before it was added ends at once, and is accepted by the queue")
  func inputAlreadyEnded() async throws {
    let queue = ActorQueue(name: "q")
    let bad = queue.addOperation(name: "bad") { () async throws -> Int in throw TestError(code: 3) }
    await bad.waitUntilFinished()
    let ran = RunFlag()
    let dependent = queue.addOperation(name: "dependent", after: bad) { _ in ran.mark() }
    #expect(dependent.state == .failed)
    #expect(dependencyFailure(await dependent.result)?.dependencyID == bad.id)

    let cancelled = QueueOperation<Int>(name: "cancelled") { 1 }
    cancelled.cancel()
    let second = queue.addOperation(name: "second", after: cancelled) { _ in ran.mark() }
    #expect(second.state == .cancelled)
    #expect(!ran.didRun)
    #expect(queue.operationCount == 0)
  }

  @Test(
    "A dependent ended at once by an input that had failed lists every input still alive, in order, whatever their order"
  )
  func endedAtOnceListsEveryInput() async throws {
    let queue = ActorQueue(name: "q")
    let failed = queue.addOperation(name: "failed") { () async throws -> Int in throw TestError(code: 4) }
    await failed.waitUntilFinished()
    let other = ActorQueue(name: "other")
    other.isSuspended = true
    let live = other.addOperation(name: "live") { "text" }
    let late = other.addOperation(name: "late") { 2.5 }

    let failedFirst = queue.addOperation(name: "failedFirst", after: failed, live, late) { _, _, _ in 0 }
    let failedSecond = queue.addOperation(name: "failedSecond", after: live, failed, late) { _, _, _ in 0 }
    #expect(failedFirst.state == .failed && failedSecond.state == .failed)
    #expect(failedFirst.dependencies.map(\.id) == [failed.id, live.id, late.id])
    #expect(failedSecond.dependencies.map(\.id) == [live.id, failed.id, late.id])
    #expect(dependencyFailure(await failedFirst.result)?.dependencyID == failed.id)

    // Listed, not owned: an ended operation keeps its dependencies alive no longer.
    let weakLate = WeakReference<AnyQueueOperation>(late)
    other.cancelAllOperations()
    other.isSuspended = false
    #expect(failedFirst.dependencies.map(\.id) == [failed.id, live.id, late.id])
    _ = consume late
    #expect(weakLate.isFreed)
    #expect(failedFirst.dependencies.map(\.id) == [failed.id, live.id])
  }

  @Test("Inputs cannot be removed with removeDependency")
  func inputsAreNotRemovable() async throws {
    let queue = ActorQueue(name: "q")
    queue.isSuspended = true
    let input = queue.addOperation(name: "input") { 20 }
    let dependent = queue.addOperation(name: "dependent", after: input) { $0 + 1 }
    dependent.removeDependency(input)
    #expect(dependent.dependencies.map(\.id) == [input.id])
    #expect(dependent.state == .pending)
    queue.isSuspended = false
    #expect(try await dependent.value == 21)
  }

  @Test("Failure propagates transitively and at once, using no slot (limit 1, slot held)")
  func failurePropagatesTransitivelyWithoutSlot() async throws {
    let source = ActorQueue(name: "source")
    let serial = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    let ran = RunFlag()
    let holding = Gate()
    let releaseHolder = Gate()
    let releaseSource = Gate()
    let holder = serial.addOperation(name: "holder") {
      holding.open()
      await releaseHolder.wait()
    }
    await holding.wait()
    let root = source.addOperation(name: "root") { () async throws -> Int in
      await releaseSource.wait()
      throw TestError(code: 1)
    }
    let b = serial.addOperation(name: "b", after: root) { value -> Int in
      ran.mark()
      return value
    }
    let c = serial.addOperation(name: "c", after: b) { value -> Int in
      ran.mark()
      return value
    }
    let d = serial.addOperation(name: "d", after: c) { _ in ran.mark() }
    #expect(serial.operationCount == 4)
    releaseSource.open()
    await root.waitUntilFinished()
    // Ended by the time root's waiters wake: the slot is still held by `holder`.
    #expect(holder.state == .executing)
    #expect(b.state == .failed && c.state == .failed && d.state == .failed)
    #expect(serial.operationCount == 1)

    // Flat at every step (d ← c ← b ← root): each names its own input and carries the origin.
    let outer = try #require(dependencyFailure(await d.result))
    #expect(outer.dependencyID == c.id)
    #expect(outer.originID == root.id)
    #expect(outer.originName == "root")
    #expect(outer.underlyingError as? TestError == TestError(code: 1))
    let middle = try #require(dependencyFailure(await c.result))
    #expect(middle.dependencyID == b.id && middle.originID == root.id)
    let inner = try #require(dependencyFailure(await b.result))
    #expect(inner.dependencyID == root.id && inner.originID == root.id)
    #expect(inner.underlyingError as? TestError == TestError(code: 1))

    releaseHolder.open()
    await serial.waitUntilAllOperationsAreFinished()
    #expect(!ran.didRun)
  }

  @Test("Cancellation propagates transitively and at once on a suspended queue")
  func cancellationPropagatesTransitivelyOnSuspendedQueue() async throws {
    let queue = ActorQueue(name: "held", maxConcurrentOperationCount: 2)
    queue.isSuspended = true
    let ran = RunFlag()
    let root = queue.addOperation(name: "root") { 1 }
    let left = queue.addOperation(name: "left", after: root) { $0 + 1 }
    let right = queue.addOperation(name: "right", after: root) { $0 + 2 }
    let join = queue.addOperation(name: "join", after: left, right) { _, _ in ran.mark() }
    let unrelated = queue.addOperation(name: "unrelated") { 0 }
    #expect(queue.operationCount == 5)
    root.cancel()
    for operation in [root, left, right] as [AnyQueueOperation] + [join] {
      #expect(operation.state == .cancelled, "\(operation)")
      #expect(operation.isCancelled)
    }
    #expect(unrelated.state == .ready)
    #expect(queue.operations.map(\.id) == [unrelated.id])
    queue.isSuspended = false
    #expect(try await unrelated.value == 0)
    #expect(!ran.didRun)
  }

  @Test("A dependent of a failed dependent that only needs it to end still runs (completion edge)")
  func completionEdgeAfterFailedDependentRuns() async throws {
    let queue = ActorQueue(name: "q")
    let root = queue.addOperation(name: "root") { () async throws -> Int in throw TestError(code: 4) }
    let typed = queue.addOperation(name: "typed", after: root) { $0 }
    let cleanup = QueueOperation<String>(name: "cleanup") { "cleaned" }
    try cleanup.addDependency(typed)
    try queue.addOperation(cleanup)
    #expect(try await cleanup.value == "cleaned")
    #expect(typed.state == .failed)
  }

  @Test("Foundation: a dependent reads its input from a dependency and runs even if the input failed (P6)")
  func foundationHandsOverThroughDependencies() async {
    // The Foundation idiom (style f): find the input among `dependencies` by casting.
    final class Producer: Operation, @unchecked Sendable {
      // Written in main() before isFinished, read by the dependent after: ordered by the queue.
      var output: Int?
      let fails: Bool
      init(fails: Bool) { self.fails = fails }
      override func main() { if !fails { output = 20 } }
    }
    final class Consumer: Operation, @unchecked Sendable {
      var received: Int??  // nil: never ran; .some(nil): ran without an input
      override func main() {
        received = .some(dependencies.compactMap { ($0 as? Producer)?.output }.first)
      }
    }
    let queue = OperationQueue()
    let failing = Producer(fails: true)
    let consumer = Consumer()
    consumer.addDependency(failing)
    queue.addOperation(failing)
    queue.addOperation(consumer)
    await queue.allFinished()
    // Foundation runs the consumer without its input; ActorQueue ends it .failed instead
    // (inputFailureFailsDependent).
    #expect(consumer.received == .some(nil))
  }
}

import ActorQueueTesting
import TestSupport
import Testing

@testable import ActorQueue

private struct Boom: Error, Equatable {
  let code: Int
}

/// The error `operation` ended with, if it failed or was cancelled.
private func failure<Success>(of operation: QueueOperation<Success>) async -> (any Error)? {
  if case .failure(let error) = await operation.result { return error }
  return nil
}

/// The children a group's build added, for the test to reach.
private final class Children: Sendable {
  private let list = LockedValue<[AnyQueueOperation]>([])
  func add(_ operation: AnyQueueOperation) { list.withLock { $0.append(operation) } }
  var all: [AnyQueueOperation] { list.withLock { $0 } }
  subscript(name: String) -> AnyQueueOperation { all.first { $0.name == name }! }
}

/// Operation groups (beyond.md §1.7 d) and ProcedureKit's group defects, on gates: no test sleeps.
@Suite("Operation groups", .timeLimit(.minutes(hangLimitMinutes)))
struct GroupTests {
  @Test(
    "The group ends after every child, one a child added after build returned included; its value is build's")
  func endsAfterLateChildren() async throws {
    let queue = ActorQueue(name: "parent")
    let children = Children()
    let lateStarted = Gate()
    let lateGate = Gate()
    let group = queue.addOperationGroup(name: "sync") { group in
      children.add(
        group.queue.addOperation(name: "first") {
          children.add(
            group.queue.addOperation(name: "late") {
              lateStarted.open()
              await lateGate.wait()
            })
        })
      return 42
    }
    await lateStarted.wait()
    await children["first"].waitUntilFinished()
    // build returned and its child ended; the late child holds the group.
    #expect(group.state == .executing)
    #expect(queue.operationCount == 1)
    lateGate.open()
    #expect(try await group.value == 42)
    #expect(children.all.map(\.state) == [.finished, .finished])
  }

  @Test(
    ".cancelSiblings: the failure cancels the others and is the only one listed; the group ends after them")
  func cancelSiblings() async throws {
    let queue = ActorQueue(name: "parent")
    let children = Children()
    let running = CountdownGate(count: 2)
    let failNow = Gate()
    let slowToStop = Gate()
    let group = queue.addOperationGroup(name: "g", maxConcurrentOperationCount: 3) { group in
      children.add(
        group.queue.addOperation(name: "polite") {
          running.signal()
          await untilCancelled()
        })
      // Throws an error of its own once cancelled: still a cancellation the group caused.
      children.add(
        group.queue.addOperation(name: "noisy") {
          running.signal()
          await untilCancelled()
          await slowToStop.wait()
          throw Boom(code: 2)
        })
      children.add(
        group.queue.addOperation(name: "bad") {
          await failNow.wait()
          throw Boom(code: 1)
        })
      for number in 0..<3 { children.add(group.queue.addOperation(name: "waiting\(number)") {}) }
    }
    await running.wait()
    failNow.open()
    await children["polite"].waitUntilFinished()
    #expect(children["waiting0"].state == .cancelled)
    #expect(children["noisy"].state == .executing)
    // PR 250: the group has not ended while a child has not.
    #expect(group.state == .executing)
    slowToStop.open()
    let error = try #require(await failure(of: group) as? GroupFailedError)
    #expect(error.failures.map(\.name) == ["bad"])
    #expect(error.failures.first?.error as? Boom == Boom(code: 1))
    #expect(group.state == .failed)
    // "polite" returned once cancelled, so it finished; "noisy" threw, so it was cancelled.
    #expect(
      children.all.map(\.state) == [.finished, .cancelled, .failed, .cancelled, .cancelled, .cancelled])
  }

  @Test(".collectAll: every child runs, and every failure is listed")
  func collectAll() async throws {
    let queue = ActorQueue(name: "parent")
    let ran = LockedValue(0)
    let group = queue.addOperationGroup(
      name: "g", maxConcurrentOperationCount: 1, onChildFailure: .collectAll
    ) {
      group in
      for number in 0..<6 {
        group.queue.addOperation(name: "c\(number)") {
          ran.withLock { $0 += 1 }
          if number.isMultiple(of: 2) { throw Boom(code: number) }
        }
      }
    }
    let error = try #require(await failure(of: group) as? GroupFailedError)
    #expect(ran.withLock { $0 } == 6)
    #expect(error.failures.map(\.name) == ["c0", "c2", "c4"])
    #expect(error.failures.map { ($0.error as? Boom)?.code } == [0, 2, 4])
  }

  @Test(".ignore: the group ends with build's value whatever its children did")
  func ignoreFailures() async throws {
    let queue = ActorQueue(name: "parent")
    let group = queue.addOperationGroup(name: "g", onChildFailure: .ignore) { group in
      group.queue.addOperation(name: "bad") { throw Boom(code: 1) }
      return "built"
    }
    #expect(try await group.value == "built")
  }

  @Test(
    "Cancelling the group: waiting children end at once, running ones are cancelled, the group ends .cancelled after them"
  )
  func cancelGroup() async throws {
    let queue = ActorQueue(name: "parent")
    let children = Children()
    let running = Gate()
    let stop = Gate()
    let group = queue.addOperationGroup(name: "g", maxConcurrentOperationCount: 1) { group in
      children.add(
        group.queue.addOperation(name: "running") {
          running.open()
          await untilCancelled()
          await stop.wait()
        })
      for number in 0..<3 { children.add(group.queue.addOperation(name: "waiting\(number)") {}) }
    }
    await running.wait()
    group.cancel()
    #expect(children.all.dropFirst().allSatisfy { $0.state == .cancelled })
    #expect(group.state == .executing)
    stop.open()
    await group.waitUntilFinished()
    #expect(group.state == .cancelled)
    // The running child returned normally after its cancellation: it finished.
    #expect(children["running"].state == .finished)
  }

  @Test("A child cancels its own group; a child added afterwards ends .cancelled as it is added")
  func childCancelsGroup() async throws {
    let queue = ActorQueue(name: "parent")
    let later = LockedValue<AnyQueueOperation?>(nil)
    let group = queue.addOperationGroup(name: "g") { group in
      _ = group.queue.addOperation(name: "quitter") {
        OperationGroup.current?.cancel()
        later.withLock { $0 = group.queue.addOperation(name: "later") {} }
      }
    }
    await group.waitUntilFinished()
    #expect(group.state == .cancelled)
    #expect(later.withLock { $0 }?.state == .cancelled)
  }

  @Test(
    "Parent limit 1, a group of 10 children at limit 3: 3 run at once, and the parent's next waits for the group"
  )
  func ownLimit() async throws {
    let queue = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    let probe = ConcurrencyProbe()
    let three = CountdownGate(count: 3)
    let release = Gate()
    let group = queue.addOperationGroup(name: "g", maxConcurrentOperationCount: 3) { group in
      for number in 0..<10 {
        group.queue.addOperation(name: "c\(number)") {
          probe.enter()
          three.signal()
          await release.wait()
          probe.leave()
        }
      }
    }
    let next = queue.addOperation(name: "next") {}
    await three.wait()
    #expect(probe.current == 3)
    #expect(next.state == .ready)
    release.open()
    try await group.value
    await next.waitUntilFinished()
    #expect(probe.maximum == 3)
  }

  @Test("A child waiting for its group is a cycle; a child added after the group ended is refused")
  func cycleAndEnded() async throws {
    let queue = ActorQueue(name: "parent")
    let kept = LockedValue<OperationGroup?>(nil)
    let results = LockedValue<[String]>([])
    let groupOperation = queue.addOperationGroup(name: "g", onChildFailure: .ignore) { group in
      kept.withLock { $0 = group }
      // Held back, so that it has not started when the dependency is asked for.
      group.queue.isSuspended = true
      let child = group.queue.addOperation(name: "child") {}
      guard let me = AnyQueueOperation.running(in: queue, named: "g") else { return }
      do {
        try child.addDependency(me)
      } catch let error as ActorQueueError {
        results.withLock { $0.append("\(error == .dependencyCycle) \(error.cycle.map(\.name))") }
      }
      // A prepared child that waits for the group: refused, nothing added.
      let prepared = QueueOperation(name: "prepared") {}
      try prepared.addDependency(me)
      #expect(throws: ActorQueueError.dependencyCycle) { try group.queue.addOperation(prepared) }
      // A child whose input is the group: ends at once.
      let input = group.queue.addOperation(after: me as! QueueOperation<Void>) { _ in }
      results.withLock { $0.append("\(input.state)") }
      group.queue.isSuspended = false
    }
    try await groupOperation.value
    #expect(results.withLock { $0 } == ["true [Optional(\"child\"), Optional(\"g\")]", "failed"])
    let group = try #require(kept.withLock { $0 })
    #expect(throws: ActorQueueError.groupEnded) { try group.queue.addOperation(QueueOperation {}) }
    let late = group.queue.addOperation(name: "late") {}
    #expect(late.state == .failed)
    #expect(await failure(of: late) as? ActorQueueError == .groupEnded)
  }

  @Test(
    "Group and child on .exclusive(\"k\") both run; an operation outside the group on k waits (ProcedureKit #47)"
  )
  func keysAreReentrant() async throws {
    let queue = ActorQueue(name: "parent")
    let shared = ExclusivityDomain()
    let other = ActorQueue(name: "other")
    let inside = Gate()
    let release = Gate()
    let group = queue.addOperationGroup(name: "g", traits: [.exclusive("k"), .exclusive("m", in: shared)]) {
      group in
      _ = group.queue.addOperation(name: "child", traits: [.exclusive("k"), .exclusive("m", in: shared)]) {
        inside.open()
        await release.wait()
      }
    }
    await inside.wait()
    let outside = queue.addOperation(name: "outside", traits: [.exclusive("k")]) {}
    let across = other.addOperation(name: "across", traits: [.exclusive("m", in: shared)]) {}
    // Another test's call in slices defers arbitration process-wide, so `.ready` may show first;
    // both must reach `.pending` while the group holds the keys.
    for operation in [outside, across] as [AnyQueueOperation] {
      for await state in operation.events where state != .ready {
        #expect(state == .pending)
        break
      }
    }
    #expect(queue.waitReport().contains { $0.name == "outside" && "\($0.waitingFor)".contains("k") })
    release.open()
    try await group.value
    await outside.waitUntilFinished()
    await across.waitUntilFinished()
    #expect(outside.state == .finished && across.state == .finished)
  }

  @Test(
    "A group's deadline bounds its children, running and waiting; a child's earlier deadline stays its own")
  func deadlineInherited() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "parent", clock: clock.queueClock)
    let children = Children()
    let running = Gate()
    let group = queue.addOperationGroup(
      name: "g", traits: [.deadline(in: .seconds(10))], maxConcurrentOperationCount: 1,
      onChildFailure: .collectAll
    ) {
      group in
      children.add(
        group.queue.addOperation(name: "running") {
          running.open()
          await untilCancelled()
          try Task.checkCancellation()
        })
      children.add(group.queue.addOperation(name: "waiting", traits: [.deadline(in: .seconds(60))]) {})
      children.add(group.queue.addOperation(name: "early", traits: [.deadline(in: .seconds(5))]) {})
    }
    await running.wait()
    clock.advance(by: .seconds(5))
    #expect(children["early"].state == .failed)
    #expect(children["waiting"].state == .pending || children["waiting"].state == .ready)
    clock.advance(by: .seconds(5))
    await group.waitUntilFinished()
    for name in ["running", "waiting"] {
      let error = try #require(
        await failure(of: children[name] as! QueueOperation<Void>) as? OperationTimeoutError)
      #expect(error.kind == .deadline)
      #expect(error.hadStarted == (name == "running"))
    }
    let error = try #require(await failure(of: group) as? OperationTimeoutError)
    #expect(error.kind == .deadline)
  }

  @Test(
    "A deadline that ends the group's last waiting child in its own event fails the group, though its body resumes before its task's cancellation lands"
  )
  func deadlineEndingTheLastChild() async throws {
    let clock = ManualClock()
    // Runs the group's body on the thread that resumes it: the advance's effects wake the body's
    // wait for its children before they cancel its task.
    let queue = ActorQueue(name: "parent", taskExecutor: InlineExecutor(), clock: clock.queueClock)
    let held = ActorQueue(name: "held")
    held.isSuspended = true
    let blocker = held.addOperation(name: "blocker") {}
    let groupQueue = LockedValue<ActorQueue?>(nil)
    // `.ignore`: the child's failure does not fail the group by itself.
    let group = queue.addOperationGroup(
      name: "g", traits: [.deadline(in: .seconds(10))], onChildFailure: .ignore
    ) { group in
      let child = QueueOperation(name: "child") {}
      try child.addDependency(blocker)
      try group.queue.addOperation(child)
      groupQueue.withLock { $0 = group.queue }
    }
    // The body waits for its child.
    while Engine.read({ scheduler in
      groupQueue.withLock { $0 }.map { scheduler.queues[$0.index].allFinishedWaiters.count } != 1
    }) {
      await Task.yield()
    }
    clock.advance(by: .seconds(10))
    await group.waitUntilFinished()
    let error = try #require(await failure(of: group) as? OperationTimeoutError)
    #expect(error.kind == .deadline)
    #expect(group.state == .failed)
    held.isSuspended = false
    await blocker.waitUntilFinished()
  }

  @Test("build throws after adding 2 children: they are cancelled, and the group fails with build's error")
  func buildThrows() async throws {
    let queue = ActorQueue(name: "parent")
    let children = Children()
    let running = Gate()
    let group = queue.addOperationGroup(name: "g", maxConcurrentOperationCount: 1) { group in
      children.add(
        group.queue.addOperation(name: "running") {
          running.open()
          await untilCancelled()
          try Task.checkCancellation()
        })
      children.add(group.queue.addOperation(name: "waiting") {})
      await running.wait()
      throw Boom(code: 9)
    }
    #expect(await failure(of: group) as? Boom == Boom(code: 9))
    #expect(children.all.map(\.state) == [.cancelled, .cancelled])
  }

  @Test(
    "A child reaches its group (ProcedureKit #736); ActorQueue.current is the group's queue; none outside")
  func childReachesGroup() async throws {
    let queue = ActorQueue(name: "parent")
    let seen = LockedValue<[String]>([])
    let group = queue.addOperationGroup(name: "g") { group in
      #expect(OperationGroup.current == nil)  // build runs in the group operation's body, on the parent
      #expect(ActorQueue.current === queue)
      group.queue.addOperation(name: "child") {
        let current = OperationGroup.current
        seen.withLock {
          $0.append(
            "\(current?.id == group.id) \(current?.name ?? "-") \(ActorQueue.current === group.queue)")
          $0.append("\(group.queue.group?.id == group.id) \(queue.group == nil)")
        }
      }
    }
    try await group.value
    #expect(seen.withLock { $0 } == ["true g true", "true true"])
    #expect(OperationGroup.current == nil)
  }

  @Test(
    "Nested groups: cancelling the outer cancels the inner's children, and each group ends after its own (ProcedureKit #653)"
  )
  func nestedCancellation() async throws {
    let queue = ActorQueue(name: "parent")
    let ends = Recorder<String>()
    let running = Gate()
    let inner = LockedValue<QueueOperation<Void>?>(nil)
    let outer = queue.addOperationGroup(name: "outer") { outer in
      let made = outer.queue.addOperationGroup(name: "inner") { inner in
        _ = inner.queue.addOperation(name: "leaf") {
          running.open()
          await untilCancelled()
          ends.append("leaf")
        }
      }
      made.onCompletion { _ in ends.append("inner") }
      inner.withLock { $0 = made }
    }
    outer.onCompletion { _ in ends.append("outer") }
    await running.wait()
    outer.cancel()
    await outer.waitUntilFinished()
    #expect(ends.snapshot == ["leaf", "inner", "outer"])
    #expect(outer.state == .cancelled)
    #expect(inner.withLock { $0 }?.state == .cancelled)
  }
}

extension AnyQueueOperation {
  /// The executing operation of `queue` named `name` (a group's body finding its own handle).
  fileprivate static func running(in queue: ActorQueue, named name: String) -> AnyQueueOperation? {
    queue.operations.first { $0.name == name && $0.state == .executing }
  }
}

/// Runs each job at once, on the thread that enqueues it.
private final class InlineExecutor: TaskExecutor {
  func enqueue(_ job: consuming ExecutorJob) {
    job.runSynchronously(on: asUnownedTaskExecutor())
  }
}

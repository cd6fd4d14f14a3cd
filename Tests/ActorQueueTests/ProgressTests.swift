import ActorQueueTesting
import Foundation
import TestSupport
import Testing

@testable import ActorQueue

/// Counts and progress (beyond.md §1.5 d), on gates: no test sleeps.
@Suite("Counts and progress", .timeLimit(.minutes(hangLimitMinutes)))
struct ProgressTests {
  private struct Failure: Error {}

  @Test("Counts follow every transition; since() subtracts; cancelling 100 waiting ops adds 100 cancelled")
  func countsFollowTransitions() async throws {
    let queue = ActorQueue(name: "counts", maxConcurrentOperationCount: 1)
    #expect(queue.counts == QueueCounts())
    let gate = Gate()
    let paused = Gate()
    let running = queue.addOperation(name: "running") {
      paused.open()
      await gate.wait()
    }
    await paused.wait()
    let ready = queue.addOperation(name: "ready") {}
    let dependency = QueueOperation(name: "dependency") {}
    let pending = QueueOperation(name: "pending") {}
    try pending.addDependency(dependency)
    try queue.addOperation(pending)
    var counts = queue.counts
    #expect(counts.executing == 1 && counts.ready == 1 && counts.pending == 1 && counts.unfinished == 3)
    #expect(counts.unfinished == queue.operationCount)
    #expect(counts[.ready] == 1)
    let before = counts
    ready.cancel()
    gate.open()
    await running.waitUntilFinished()
    pending.cancel()
    await queue.waitUntilAllOperationsAreFinished()
    counts = queue.counts
    #expect(
      counts
        == {
          var c = QueueCounts(); c.finished = 1; c.cancelled = 2; return c
        }())
    let change = counts.since(before)
    #expect(change.executing == -1 && change.ready == -1 && change.pending == -1)
    #expect(change.finished == 1 && change.cancelled == 2 && change.ended == 3)

    // A failure, then 100 waiting ops cancelled at once.
    _ = queue.addOperation { throw Failure() }
    await queue.waitUntilAllOperationsAreFinished()
    #expect(queue.counts.failed == 1)
    queue.isSuspended = true
    let start = queue.counts
    for _ in 0..<100 { queue.addOperation {} }
    #expect(queue.counts.since(start).ready == 100)
    queue.cancelAllOperations()
    let batch = queue.counts.since(start)
    #expect(batch.cancelled == 100 && batch.unfinished == 0)
    #expect(queue.operationCount == 0)
  }

  @Test("Paused at a checkpoint counts as paused, and executing again once resumed")
  func pausedCounts() async throws {
    let queue = ActorQueue(name: "paused")
    let entered = Gate()
    let proceed = Gate()
    let operation = queue.addOperation(name: "p") {
      entered.open()
      await proceed.wait()
      try? await ActorQueue.checkpoint()
    }
    await entered.wait()
    operation.pause()
    proceed.open()
    #expect(await eventually { queue.counts.paused == 1 })
    #expect(queue.counts.executing == 0)
    operation.resume()
    await operation.waitUntilFinished()
    #expect(queue.counts.finished == 1 && queue.counts.unfinished == 0)
  }

  @Test("countUpdates: the current counts first, then the newest after changes; finishes when the queue goes")
  func countUpdates() async throws {
    var queue: ActorQueue? = ActorQueue(name: "watched")
    let updates = queue!.countUpdates
    var iterator = updates.makeAsyncIterator()
    #expect(await iterator.next() == QueueCounts())
    queue!.isSuspended = true
    queue!.addOperation(name: "a") {}
    // Coalesced: the newest counts, whatever came between.
    #expect(await iterator.next()?.ready == 1)
    queue!.isSuspended = false
    await queue!.waitUntilAllOperationsAreFinished()
    var last = QueueCounts()
    while last.finished < 1, let next = await iterator.next() { last = next }
    #expect(last.finished == 1 && last.unfinished == 0)
    queue = nil
    while await iterator.next() != nil {}
  }

  @Test("setTotal(10); complete(3) reads 0.3; the stream coalesces and never goes down in an attempt")
  func reporterFraction() async throws {
    let queue = ActorQueue(name: "progress")
    let step = Gate()
    let reported = Gate()
    let operation = queue.addOperation(
      name: "job",
      reportingProgress: { progress in
        progress.setTotal(10)
        progress.complete(3)
        reported.open()
        await step.wait()
        progress.setTotal(100)  // 3/100: lower; the stream holds back until it passes 0.3
        progress.complete(37)
        progress.complete(1000)  // clamped
        return 7
      })
    await reported.wait()
    #expect(
      operation.progress == OperationProgress(completed: 3, total: 10, fraction: 0.3, isFinished: false))
    var fractions: [Double] = []
    let updates = operation.progressUpdates
    step.open()
    for await progress in updates {
      fractions.append(progress.fraction)
      if progress.isFinished { #expect(progress.fraction == 1) }
    }
    #expect(fractions.first == 0.3 && fractions.last == 1)
    #expect(fractions == fractions.sorted())
    #expect(try await operation.value == 7)
    #expect(operation.progress.isFinished && operation.progress.fraction == 1)
  }

  @Test(
    "Bad input: beyond the total is clamped; a total of 0 or less is indeterminate; reports after the end are ignored"
  )
  func badInput() async throws {
    let queue = ActorQueue(name: "bad")
    let kept = LockedValue<ProgressReporter?>(nil)
    let operation = queue.addOperation(reportingProgress: { progress in
      kept.withLock { $0 = progress }
      progress.setTotal(0)
      #expect(progress.progress.total == nil && progress.progress.fraction == 0)
      progress.setTotal(-5)
      progress.complete(4)
      #expect(progress.progress.total == nil)
      progress.setTotal(2)
      #expect(progress.progress.completed == 2 && progress.progress.fraction == 1)
      progress.complete(-3)
      progress.complete(0)
      #expect(progress.progress.completed == 2)
      throw Failure()
    })
    await operation.waitUntilFinished()
    let ended = operation.progress
    #expect(ended.isFinished && operation.state == .failed)
    let reporter = try #require(kept.withLock { $0 })
    reporter.setTotal(1000)
    reporter.complete(1)
    #expect(operation.progress == ended)
  }

  @Test("A failed or cancelled op is finished at its last fraction; one that reports nothing is 0, then 1")
  func endsWithoutFinishing() async throws {
    let queue = ActorQueue(name: "ends")
    queue.isSuspended = true
    let plain = queue.addOperation(name: "plain") {}
    #expect(plain.progress == OperationProgress(completed: 0, total: nil, fraction: 0, isFinished: false))
    let cancelled = queue.addOperation(name: "cancelled", reportingProgress: { _ in })
    cancelled.cancel()
    #expect(cancelled.progress.isFinished && cancelled.progress.fraction == 0)
    queue.isSuspended = false
    await plain.waitUntilFinished()
    #expect(plain.progress == OperationProgress(completed: 1, total: 1, fraction: 1, isFinished: true))
    var updates: [OperationProgress] = []
    for await progress in plain.progressUpdates { updates.append(progress) }
    #expect(updates == [plain.progress])
  }

  @Test("A retry starts its progress again from nothing")
  func retryResets() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(name: "retry", clock: clock.queueClock)
    let policy = RetryPolicy.attempts(2, backoff: .constant(.seconds(1)), jitter: .none)
    let seen = Recorder<Double>()
    let operation = queue.addOperation(
      traits: [.retry(policy)],
      reportingProgress: { progress in
        seen.append(progress.progress.fraction)
        progress.setTotal(4)
        progress.complete(3)
        seen.append(progress.progress.fraction)
        if ActorQueue.currentAttempt?.number == 1 { throw Failure() }
      })
    await clock.settle()
    #expect(operation.state == .pending)
    #expect(operation.progress.fraction == 0.75)
    clock.advance(by: .seconds(1))
    await operation.waitUntilFinished()
    #expect(seen.snapshot == [0, 0.75, 0, 0.75])
    #expect(operation.progress.fraction == 1)
  }

  @Test("Four blocks report in steps of 0.25")
  func blocksReport() async throws {
    let queue = ActorQueue(name: "blocks")
    let gates = (0..<4).map { _ in Gate() }
    let operation = queue.addOperation(
      name: "blocks",
      blocks: gates.enumerated().map { index, gate in
        { @Sendable in
          await gate.wait()
          return index
        }
      })
    #expect(operation.progress.fraction == 0)
    for (index, gate) in gates.enumerated() {
      gate.open()
      #expect(await eventually { operation.progress.completed == index + 1 })
      #expect(operation.progress.fraction == Double(index + 1) * 0.25)
    }
    #expect(try await operation.value == [0, 1, 2, 3])
  }

  @Test("A group's fraction is its children's, weighted; an ended child counts as complete")
  func groupRollUp() async throws {
    let queue = ActorQueue(name: "parent")
    let reported = Gate()
    let release = Gate()
    let built = Gate()
    let group = queue.addOperationGroup(name: "g") { group in
      group.queue.addOperation(
        name: "heavy", traits: [.progressWeight(3)],
        reportingProgress: { progress in
          progress.setTotal(2)
          progress.complete()
          reported.open()
          await release.wait()
          progress.complete()
        })
      group.queue.addOperation(name: "failing") { throw Failure() }
      built.open()
    }
    await built.wait()
    await reported.wait()
    // heavy: 0.5 of weight 3; failing: ended, 1 of weight 1 → (1.5 + 1) / 4.
    #expect(await eventually { group.progress.completed == 1 })
    #expect(group.progress.fraction == 2.5 / 4)
    #expect(group.progress.total == 2 && !group.progress.isFinished)
    var updates = group.progressUpdates.makeAsyncIterator()
    #expect(await updates.next()?.fraction == 2.5 / 4)
    release.open()
    await group.waitUntilFinished()
    var last: OperationProgress?
    while let next = await updates.next() { last = next }
    #expect(last?.isFinished == true && last?.fraction == 1, "\(String(describing: last)) \(group.state)")
  }

  @Test(
    "A share stands for its units of the total; ProgressReporter.current reaches a plain body's operation")
  func subprogressAndCurrent() async throws {
    #expect(ProgressReporter.current == nil)
    let queue = ActorQueue(name: "shares")
    let step = Gate()
    let checked = Gate()
    let operation = queue.addOperation(name: "job") {
      let progress = try #require(ProgressReporter.current)
      progress.setTotal(10)
      progress.complete(2)
      let download = progress.subprogress(assigning: 8)
      download.setTotal(1000)
      download.complete(500)
      checked.open()
      await step.wait()
      download.complete(500)
    }
    await checked.wait()
    #expect(operation.progress.fraction == 0.6)  // (2 + 8 × 0.5) / 10
    step.open()
    try await operation.value
    #expect(operation.progress.fraction == 1)
  }

  @Test("A progress stream whose task is cancelled returns nil and leaves nothing waiting")
  func cancelledFollower() async throws {
    let queue = ActorQueue(name: "follow")
    let gate = Gate()
    let operation = queue.addOperation(reportingProgress: { _ in await gate.wait() })
    let follower = Task {
      var count = 0
      for await _ in operation.progressUpdates { count += 1 }
      return count
    }
    #expect(await eventually { operation.progressStorage.load()?.watchers.load(ordering: .relaxed) == 1 })
    follower.cancel()
    #expect(await follower.value >= 1)
    gate.open()
    await operation.waitUntilFinished()
  }
}

/// Foundation's queue progress, beside the counts (a difference the counts remove).
@Suite("Counts and progress: Foundation", .timeLimit(.minutes(hangLimitMinutes)))
struct ProgressFoundationTests {
  private static func runThree(on queue: OperationQueue) {
    for _ in 0..<3 { queue.addOperation {} }
    queue.waitUntilAllOperationsAreFinished()
  }

  @Test("OperationQueue.progress shows nothing until totalUnitCount is set by hand; counts need nothing")
  func foundationProgressNeedsATotal() async throws {
    let foundation = OperationQueue()
    Self.runThree(on: foundation)
    #expect(foundation.progress.completedUnitCount == 0)
    #expect(foundation.progress.fractionCompleted == 0)
    foundation.progress.totalUnitCount = 3
    Self.runThree(on: foundation)
    #expect(foundation.progress.completedUnitCount == 3)

    let queue = ActorQueue(name: "counted")
    for _ in 0..<3 { queue.addOperation {} }
    await queue.waitUntilAllOperationsAreFinished()
    #expect(queue.counts.finished == 3)
  }
}

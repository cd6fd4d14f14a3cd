import ActorQueue
import Foundation
import TestSupport
import Testing

/// P2 and P3, each as one script run against OperationQueue and ActorQueue side by side, so
/// what is the same and what differs is on record in one place.
@Suite("Foundation parity (P2, P3)", .timeLimit(.minutes(hangLimitMinutes)))
struct FoundationParityTests {
  // MARK: P2: cancelling a waiting op

  /// What one run of the P2 script observed.
  struct CancelObservation: Equatable {
    /// Right after `cancel()` returned, while the only slot is busy:
    var cancelledAtOnce: Bool
    var finishedAtOnce: Bool
    var operationCountAfterCancel: Int
    var completionRanBeforeSlotFreed: Bool
    /// At the end:
    var bodyRan: Bool
    var finishedInTheEnd: Bool
    var cancelledInTheEnd: Bool
  }

  /// Serial queue; a blocker holds the slot; the victim waits behind it and is cancelled.
  static func cancelScriptFoundation() async -> CancelObservation {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let blocker = BlockOperation {
      started.signal()
      release.wait()
    }
    let bodyRan = Counter()
    let completed = Counter()
    let victim = BlockOperation { bodyRan.increment() }
    victim.completionBlock = { completed.increment() }
    for operation in [blocker, victim] { queue.addOperation(operation) }
    await onBlockingThread { started.wait() }
    victim.cancel()
    let cancelledAtOnce = victim.isCancelled
    let finishedAtOnce = victim.isFinished
    let count = queue.operationCount
    let completedEarly = completed.value == 1
    release.signal()
    await queue.allFinished()
    return CancelObservation(
      cancelledAtOnce: cancelledAtOnce, finishedAtOnce: finishedAtOnce, operationCountAfterCancel: count,
      completionRanBeforeSlotFreed: completedEarly, bodyRan: bodyRan.value > 0,
      finishedInTheEnd: victim.isFinished, cancelledInTheEnd: victim.isCancelled)
  }

  static func cancelScriptActorQueue() async -> CancelObservation {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let started = Gate()
    let release = Gate()
    queue.addOperation {
      started.open()
      await release.wait()
    }
    let bodyRan = Counter()
    let completed = Counter()
    let victim = queue.addOperation { bodyRan.increment() }
    victim.onCompletion { _ in completed.increment() }
    await started.wait()
    victim.cancel()
    let cancelledAtOnce = victim.isCancelled
    let finishedAtOnce = victim.isFinished
    let count = queue.operationCount
    let completedEarly = completed.value == 1
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
    return CancelObservation(
      cancelledAtOnce: cancelledAtOnce, finishedAtOnce: finishedAtOnce, operationCountAfterCancel: count,
      completionRanBeforeSlotFreed: completedEarly, bodyRan: bodyRan.value > 0,
      finishedInTheEnd: victim.isFinished, cancelledInTheEnd: victim.isCancelled)
  }

  @Test("P2 side by side: Foundation keeps a cancelled waiting op until its turn; ActorQueue ends it at once")
  func p2SideBySide() async {
    let foundation = await Self.cancelScriptFoundation()
    let actorQueue = await Self.cancelScriptActorQueue()
    // The same: the body never runs, the op ends cancelled.
    #expect(!foundation.bodyRan && !actorQueue.bodyRan)
    #expect(foundation.finishedInTheEnd && actorQueue.finishedInTheEnd)
    #expect(foundation.cancelledInTheEnd && actorQueue.cancelledInTheEnd)
    #expect(foundation.cancelledAtOnce && actorQueue.cancelledAtOnce)
    // The difference, while the slot is still busy.
    #expect(foundation.finishedAtOnce == false)
    #expect(foundation.operationCountAfterCancel == 2)
    #expect(foundation.completionRanBeforeSlotFreed == false)
    #expect(actorQueue.finishedAtOnce == true)
    #expect(actorQueue.operationCountAfterCancel == 1)
    #expect(actorQueue.completionRanBeforeSlotFreed == true)
  }

  // MARK: P3: the live limit

  /// What one run of the P3 script observed.
  struct LimitObservation: Equatable {
    /// Ops started by raising 1 -> 3 with nothing else happening.
    var startedByRaise: Int
    /// Ops executing just after lowering 3 -> 1 (already-started ops are not interrupted).
    var executingAfterLowering: Int
    /// For each op that started after the limit was lowered to 1, how many ops were running
    /// as it started (itself included).
    var runningAtLaterStarts: [Int]
    var maximumRunning: Int
  }

  /// 6 gated ops on a limit-1 queue: raise to 3 (two more start), lower to 1, then release
  /// the ops one by one in order.
  static func limitScriptFoundation() async -> LimitObservation {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let probe = ConcurrencyProbe()
    let lowered = Box<Bool>()
    let laterStarts = Recorder<Int>()
    let started = DispatchSemaphore(value: 0)
    let releases = (0..<6).map { _ in DispatchSemaphore(value: 0) }
    let operations = (0..<6).map { index in
      BlockOperation {
        probe.enter()
        if lowered.value == true { laterStarts.append(probe.current) }
        started.signal()
        releases[index].wait()
        probe.leave()
      }
    }
    for operation in operations { queue.addOperation(operation) }
    await onBlockingThread { started.wait() }
    queue.maxConcurrentOperationCount = 3
    await onBlockingThread {
      started.wait()
      started.wait()
    }
    let startedByRaise = probe.current - 1
    lowered.value = true
    queue.maxConcurrentOperationCount = 1
    let executingAfterLowering = operations.filter(\.isExecuting).count
    for index in 0..<6 {
      releases[index].signal()
      await operations[index].finished()
    }
    await queue.allFinished()
    return LimitObservation(
      startedByRaise: startedByRaise, executingAfterLowering: executingAfterLowering,
      runningAtLaterStarts: laterStarts.snapshot, maximumRunning: probe.maximum)
  }

  static func limitScriptActorQueue() async -> LimitObservation {
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    let probe = ConcurrencyProbe()
    let lowered = Box<Bool>()
    let laterStarts = Recorder<Int>()
    let firstStarted = Gate()
    let raisedStarts = CountdownGate(count: 3)
    let releases = (0..<6).map { _ in Gate() }
    let operations = (0..<6).map { index in
      queue.addOperation {
        probe.enter()
        if lowered.value == true { laterStarts.append(probe.current) }
        firstStarted.open()
        raisedStarts.signal()
        await releases[index].wait()
        probe.leave()
      }
    }
    await firstStarted.wait()
    queue.maxConcurrentOperationCount = 3
    await raisedStarts.wait()
    let startedByRaise = probe.current - 1
    lowered.value = true
    queue.maxConcurrentOperationCount = 1
    let executingAfterLowering = operations.filter(\.isExecuting).count
    for index in 0..<6 {
      releases[index].open()
      await operations[index].waitUntilFinished()
    }
    await queue.waitUntilAllOperationsAreFinished()
    return LimitObservation(
      startedByRaise: startedByRaise, executingAfterLowering: executingAfterLowering,
      runningAtLaterStarts: laterStarts.snapshot, maximumRunning: probe.maximum)
  }

  @Test(
    "P3 side by side: raising starts waiting ops at once; lowering governs every later start; running ops are not interrupted"
  )
  func p3SideBySide() async {
    let foundation = await Self.limitScriptFoundation()
    let actorQueue = await Self.limitScriptActorQueue()
    let expected = LimitObservation(
      startedByRaise: 2, executingAfterLowering: 3, runningAtLaterStarts: [1, 1, 1], maximumRunning: 3)
    #expect(actorQueue == expected)
    // On record: swift-corelibs-foundation (Linux) behaves the same on this script: ops
    // already running keep running (10 downloads keep going after 10 -> 5, P3's complaint),
    // and no op starts until fewer than the new limit run. ActorQueue guarantees the latter
    // by its start rule, decided under one lock.
    #expect(foundation == expected)
  }
}

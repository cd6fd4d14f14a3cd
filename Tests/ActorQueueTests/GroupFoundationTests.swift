import Foundation
import TestSupport
import Testing

@testable import ActorQueue

/// Groups against what Foundation code does instead: an operation that fills a queue of its own
/// and blocks until it is empty.
@Suite("Operation groups against Foundation", .timeLimit(.minutes(hangLimitMinutes)))
struct GroupFoundationTests {
  @Test("As an operation waiting on a queue of its own: its queue's next operation starts after every child")
  func nextStartsAfterChildren() async {
    let foundation = Recorder<String>()
    let outer = OperationQueue()
    outer.maxConcurrentOperationCount = 1
    outer.addOperation {
      let inner = OperationQueue()
      inner.maxConcurrentOperationCount = 3
      for _ in 0..<3 { inner.addOperation { foundation.append("child") } }
      inner.waitUntilAllOperationsAreFinished()
    }
    outer.addOperation { foundation.append("next") }
    await outer.allFinished()

    let actorQueue = Recorder<String>()
    let queue = ActorQueue(maxConcurrentOperationCount: 1)
    queue.addOperationGroup(maxConcurrentOperationCount: 3) { group in
      for _ in 0..<3 { group.queue.addOperation { actorQueue.append("child") } }
    }
    queue.addOperation { actorQueue.append("next") }
    await queue.waitUntilAllOperationsAreFinished()

    #expect(foundation.snapshot == ["child", "child", "child", "next"])
    #expect(actorQueue.snapshot == foundation.snapshot)
  }

  @Test(
    "Differs: cancelling the group cancels its waiting children; Foundation's inner queue runs them anyway")
  func cancelReachesChildren() async {
    let foundation = Recorder<String>()
    let outer = OperationQueue()
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let blockGroup = BlockOperation {
      let inner = OperationQueue()
      inner.maxConcurrentOperationCount = 1
      inner.addOperation {
        started.signal()
        release.wait()
        foundation.append("first")
      }
      for _ in 0..<2 { inner.addOperation { foundation.append("waiting") } }
      inner.waitUntilAllOperationsAreFinished()
    }
    outer.addOperation(blockGroup)
    await onBlockingThread { started.wait() }
    blockGroup.cancel()
    release.signal()
    await outer.allFinished()

    let actorQueue = Recorder<String>()
    let queue = ActorQueue()
    let running = Gate()
    let proceed = Gate()
    let children = LockedValue<[AnyQueueOperation]>([])
    let group = queue.addOperationGroup(maxConcurrentOperationCount: 1) { group in
      let first = group.queue.addOperation {
        running.open()
        await proceed.wait()
        actorQueue.append("first")
      }
      let waiting = (0..<2).map { _ in group.queue.addOperation { actorQueue.append("waiting") } }
      children.withLock { $0 = [first] + waiting }
    }
    await running.wait()
    group.cancel()
    proceed.open()
    await group.waitUntilFinished()

    #expect(foundation.snapshot == ["first", "waiting", "waiting"])  // the cancel reached no child
    #expect(actorQueue.snapshot == ["first"])
    #expect(children.withLock { $0 }.map(\.state) == [.finished, .cancelled, .cancelled])
    #expect(group.state == .cancelled)
  }
}

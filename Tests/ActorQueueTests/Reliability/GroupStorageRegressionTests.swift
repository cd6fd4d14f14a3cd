import Synchronization
import Testing

@testable import ActorQueue

/// The full bench (`swift run -c release bench`, its `group` scenario) trapped at 3dc2c4e: a group's
/// queue freed after every record was free and the records' storage dropped read its group's
/// operation by a record index that no longer existed (`Scheduler.freeQueueIfDone`, keeping the
/// group's progress). The random scripts never make more than 1,024 records, below which the
/// storage is never dropped. Run in a child process: a trap fails the test, not the run, and the
/// child's scheduler starts with fresh storage.
@Suite("Reliability: a group's queue freed after the storage was dropped")
struct GroupStorageRegressionTests {
  @Test("A group's queue released after its operation's record and the storage are gone frees cleanly")
  func groupQueueReleasedAfterStorageDropped() async {
    await #expect(processExitsWith: .success) {
      startDeadline(seconds: 60, "a group's queue released after the storage was dropped")
      let queue = ActorQueue(name: "grown")
      // Over 1,024 records, all in use at once, then all free: the storage is judged and kept.
      for _ in 0..<2_048 { queue.addOperation {} }
      await queue.waitUntilAllOperationsAreFinished()
      // A group that creates more records than that, a few in use at a time, and whose queue
      // outlives its operation (the bench's lingering worker did the same).
      let kept = LockedValue<ActorQueue?>(nil)
      var group: QueueOperation<Void>? = queue.addOperationGroup(maxConcurrentOperationCount: 4) { group in
        kept.withLock { $0 = group.queue }
        for _ in 0..<2_100 { await group.queue.addOperation {}.waitUntilFinished() }
      }
      await group?.waitUntilFinished()
      #expect(group?.state == .finished)
      // Its handle goes: every record is free, and the storage, little used, is dropped.
      group = nil
      // Then its queue goes, and is freed with its group's record: at once, or when the worker
      // that lingers there stops (waited for, so that the child does not exit before).
      kept.withLock { $0 = nil }
      while Engine.read({ $0.lingeringWorkers }) > 0 { await Task.yield() }
      // The scheduler still works.
      let after = queue.addOperation { 42 }
      #expect((try? await after.result.get()) == 42)
    }
  }
}

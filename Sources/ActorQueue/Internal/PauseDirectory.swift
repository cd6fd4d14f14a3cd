import Synchronization

/// The workers of one scheduler whose operation is asked to pause, or paused: usually none, and
/// at most one per operation given a slot. A checkpoint finds its worker here by its task.
///
/// Each scheduler has its own (``Scheduler/pauses``; the process's queues share `Engine.pauses`),
/// so a test's scheduler value shares nothing with real queues. Written only by
/// ``Worker/setPauseRequested(_:in:)``, under the scheduler's lock; this lock is a leaf: nothing
/// takes the scheduler's lock while holding it. A list rather than a task-local bound to each
/// worker's task, which cost every idle start its binding before the body ran.
final class PauseDirectory: Sendable {
  private let listed = LockedValue<[Worker]>([])
  /// `listed.count`, readable without the lock: a checkpoint's fast path.
  private let listedCount = Atomic<Int>(0)

  init() {}

  /// How many workers are listed: 0 once no operation is asked to pause or paused.
  var count: Int { listedCount.load(ordering: .relaxed) }

  func add(_ worker: Worker) {
    listed.withLock { $0.append(worker) }
    listedCount.add(1, ordering: .relaxed)
  }

  func remove(_ worker: Worker) {
    listedCount.subtract(1, ordering: .relaxed)
    // Taken out, and released once the lock is released (the caller holds a reference anyway:
    // nothing is freed under either lock).
    let removed = listed.withLock { list -> Worker? in
      guard let position = list.firstIndex(where: { $0 === worker }) else { return nil }
      return list.remove(at: position)
    }
    precondition(removed != nil, "Internal inconsistency: a worker asked to pause was not listed")
  }

  /// Whether `worker` is listed (for tests: it must be exactly when its flag is set).
  func contains(_ worker: Worker) -> Bool {
    listed.withLock { list in list.contains { $0 === worker } }
  }

  /// The listed worker whose task is the calling task. Only the body's own task qualifies: a
  /// child task, or an unstructured task the body created, has another address. One atomic load
  /// while nothing is listed.
  func workerOfCurrentTask() -> Worker? {
    guard listedCount.load(ordering: .relaxed) > 0 else { return nil }
    let task = currentTaskAddress()
    guard task != 0 else { return nil }
    return listed.withLock { list in list.first { $0.recordedTaskAddress == task } }
  }
}

import Synchronization

/// Workers of one scheduler that a body's own task must find by its task: those whose operation
/// is asked to pause, or paused (``Scheduler/pauses``: a checkpoint finds its worker here), and
/// those running an attempt of a retried operation (``Scheduler/attempts``:
/// `ActorQueue.currentAttempt` finds its worker here). Usually none; at most one per operation
/// given a slot.
///
/// Each scheduler has its own (the process's queues share `Engine.pauses` and `Engine.attempts`),
/// so a test's scheduler value shares nothing with real queues. Written only under the
/// scheduler's lock; this lock is a leaf: nothing takes the scheduler's lock while holding it. A
/// list rather than a task-local bound to each worker's task, which cost every idle start its
/// binding before the body ran (and a retried attempt its binding per attempt; figures in the
/// Performance article).
final class WorkerDirectory: Sendable {
  /// A listed worker, and for the attempts' directory the attempt its task runs.
  private struct Entry {
    let worker: Worker
    let attempt: RetryAttempt?
  }

  /// A spin lock: held for a few instructions, by the scheduler's lock holder (adding, removing)
  /// or a body looking for its worker, so it barely contends, and it lengthens the scheduler's
  /// critical sections less than a mutex would.
  private let lock = SpinLock()
  /// `nonisolated(unsafe)`, and safe: every access holds `lock` (acquiring, then releasing), so
  /// accesses from different threads never overlap and each sees the one before it; for the same
  /// reason no dynamic exclusivity check is needed (`@exclusivity(unchecked)`: each would cost a
  /// retried attempt far more than the lock). An entry removed is released after the lock, and
  /// holds nothing of the user's (a worker and an attempt number).
  @exclusivity(unchecked) private nonisolated(unsafe) var listed: [Entry] = []
  /// `listed.count`, readable without the lock: a checkpoint's fast path.
  private let listedCount = Atomic<Int>(0)

  init() {}

  private func withListed<Result>(_ body: (inout [Entry]) -> Result) -> Result {
    lock.lock()
    defer { lock.unlock() }
    return body(&listed)
  }

  /// How many workers are listed: 0 once no operation is asked to pause or paused.
  var count: Int { listedCount.load(ordering: .relaxed) }

  func add(_ worker: Worker, attempt: RetryAttempt? = nil) {
    withListed { $0.append(Entry(worker: worker, attempt: attempt)) }
    listedCount.add(1, ordering: .relaxed)
  }

  func remove(_ worker: Worker) {
    listedCount.subtract(1, ordering: .relaxed)
    let removed = withListed { list -> Entry? in
      guard let position = list.firstIndex(where: { $0.worker === worker }) else { return nil }
      return list.remove(at: position)
    }
    precondition(removed != nil, "Internal inconsistency: a worker was not listed")
  }

  /// Whether `worker` is listed (for tests: it must be exactly when its flag is set).
  func contains(_ worker: Worker) -> Bool {
    withListed { list in list.contains { $0.worker === worker } }
  }

  /// The listed worker whose task is the calling task. Only the body's own task qualifies: a
  /// child task, or an unstructured task the body created, has another address. One atomic load
  /// while nothing is listed.
  func workerOfCurrentTask() -> Worker? {
    entryOfCurrentTask()?.worker
  }

  /// The attempt the calling task runs, if its worker is listed with one.
  func attemptOfCurrentTask() -> RetryAttempt? {
    entryOfCurrentTask()?.attempt
  }

  private func entryOfCurrentTask() -> Entry? {
    guard listedCount.load(ordering: .relaxed) > 0 else { return nil }
    let task = currentTaskAddress()
    guard task != 0 else { return nil }
    return withListed { list in list.first { $0.worker.recordedTaskAddress == task } }
  }
}

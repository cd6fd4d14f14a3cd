public import Dispatch

/// A task executor that runs jobs on a dispatch queue of yours: what Foundation's
/// `underlyingQueue` becomes, passed as an ``ActorQueue``'s ``ActorQueue/taskExecutor``.
///
/// ```swift
/// let database = DispatchQueue(label: "database")
/// let queue = ActorQueue(name: "queries", taskExecutor: DispatchQueueExecutor(database))
/// ```
///
/// Each job is one `async` call on the queue, run synchronously there; the executor is kept
/// alive by the jobs it has queued. A serial dispatch queue runs one job at a time, so the
/// bodies that prefer this executor run one at a time between their suspension points, and
/// `DispatchQueue.getSpecific(key:)` and `dispatchPrecondition(condition: .onQueue(_:))` hold
/// in them. Cost: one `async` on the queue per job (a body's start and each resumption after a
/// suspension), against the global executor's own enqueue.
public final class DispatchQueueExecutor: TaskExecutor {
  /// The dispatch queue the jobs run on.
  public let queue: DispatchQueue

  /// An executor that runs its jobs on `queue`.
  public init(_ queue: DispatchQueue) {
    self.queue = queue
  }

  /// Runs `job` on ``queue``.
  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
  }
}

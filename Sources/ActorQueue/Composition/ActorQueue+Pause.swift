/// Pausing and resuming operations: a paused operation holds no slot.
///
/// Foundation's `Operation` cannot pause: a "paused" download keeps its slot, so the downloads
/// waiting behind it never start, and lowering `maxConcurrentOperationCount` leaves the excess
/// running. Here an operation's body marks where it may pause with ``ActorQueue/checkpoint()``;
/// pausing it there gives its slot to the next waiting operation, and resuming it makes it
/// compete for a slot again.
extension AnyQueueOperation {
  /// Pauses the operation.
  ///
  /// - Waiting (pending or ready): it is held, `.pending`, and does not start until
  ///   ``resume()``, even once its dependencies have ended.
  /// - Executing: it pauses when its body next reaches ``ActorQueue/checkpoint()``: its slot goes
  ///   to the next waiting operation at once, its state becomes `.paused`, and its body waits
  ///   there until ``resume()``. A body that reaches no checkpoint is not interrupted: it stays
  ///   `.executing` (events report `.paused` only once it really paused).
  /// - Paused already, or ended: no effect. External work that is running (a legacy `Operation`
  ///   through the adapter) has no checkpoint: it goes on executing.
  ///
  /// ``cancel()`` works in every state, paused included. A paused operation stays paused until
  /// ``resume()`` (or ``ActorQueue/resumeAllOperations()``): keep its handle, or its queue, to
  /// resume it. Once its queue is released, only references outside the queue keep a paused or
  /// held operation (your handles, and an unfinished operation that depends on it): when the
  /// last of them goes, it is cancelled (its body's checkpoint throws `CancellationError`, its
  /// completion handlers run) and freed with everything its body captured. A body that captures
  /// its own handle keeps it alive, so it stays paused until cancelled: capture it `weak`, or
  /// cancel it before you let go. When a *suspended* queue is released, its paused operations
  /// are cancelled at once with its waiting ones, since nothing could start them again.
  /// Foundation has no equivalent. Cost: O(1) (plus O(log n) to withdraw a ready operation).
  public func pause() {
    Engine.run { $0.pause(recordIndex, now: Engine.now, &$1) }
  }

  /// Resumes the operation: withdraws every request to pause it, whoever made it.
  ///
  /// A held waiting operation becomes ready once its dependencies have ended; a paused one
  /// becomes `.ready` and competes for a slot with the other ready operations (by priority,
  /// then by its original submission order; not while the queue is suspended), and its body
  /// continues, on the task it paused in, once it has one. An executing operation that had not
  /// reached a checkpoint yet goes on as if it had never been asked. Cost: O(log n).
  public func resume() {
    Engine.run { $0.resume(recordIndex, now: Engine.now, &$1) }
  }

  /// Whether the operation is paused (`.paused`), or held by ``pause()`` while it waits. An
  /// executing operation asked to pause is not paused until its body reaches a checkpoint.
  public var isPaused: Bool { Engine.read { $0.isPaused(recordIndex) } }
}

extension ActorQueue {
  /// The point where the calling operation's body may pause or stop: call it between units of
  /// work (each chunk of a transfer, each item of a loop).
  ///
  /// - Throws `CancellationError` if the operation, or the calling task, was cancelled.
  /// - If the operation was asked to pause (``AnyQueueOperation/pause()``,
  ///   ``pauseAllOperations()``, or ``setMaxConcurrentOperationCount(_:pausingExcess:)``), it
  ///   pauses here: its slot goes to the next waiting operation at once, and this call returns
  ///   only once the operation was resumed and given a slot again (or throws
  ///   `CancellationError` if it is cancelled meanwhile).
  /// - Otherwise it returns at once. Cost when there is nothing to do: the task's cancellation
  ///   check and one atomic load (a count of the operations asked to pause, process-wide), as
  ///   long as no operation is asked to pause; while one is, a short search by task under a
  ///   lock of its own (measured by the bench, `checkpoint`).
  ///
  /// Only the body's own task pauses its operation: called from a child task (of a `TaskGroup`
  /// in the body, say) or from an unstructured task the body created, or outside any
  /// operation, it only checks the task's cancellation — such a task may run beside the body, or
  /// outlive it, so it cannot give the operation's slot back. Foundation's `Operation` has no
  /// equivalent: it can only check `isCancelled`.
  public nonisolated static func checkpoint() async throws {
    try Task.checkCancellation()
    guard let context = Engine.checkpointContext() else { return }
    try await Engine.pauseAtCheckpoint(context)
  }

  /// A checkpoint that lets the body give up what it holds while paused, and take it again.
  ///
  /// As ``checkpoint()``; when the operation is about to pause here, `onPause` runs first
  /// (still holding the slot, so a limit on operations is also a limit on what they hold), and
  /// once it has been resumed and given a slot again, `onResume` runs before this returns. If
  /// the operation is cancelled while paused, this throws `CancellationError` and `onResume`
  /// does not run. If the request to pause is withdrawn while `onPause` runs (the limit was
  /// raised again, say), the operation does not pause and `onResume` runs at once: whenever
  /// `onPause` ran and this returns normally, `onResume` ran too.
  ///
  /// ```swift
  /// try await ActorQueue.checkpoint(
  ///   onPause: { resumeData = await transfer.stop() },     // close the connection, keep the data
  ///   onResume: { transfer = try await Transfer(resumingFrom: resumeData) })
  /// ```
  public static func checkpoint(
    isolation: isolated (any Actor)? = #isolation,
    onPause: () async throws -> Void,
    onResume: () async throws -> Void
  ) async throws {
    try Task.checkCancellation()
    guard let context = Engine.checkpointContext(), Engine.isPauseRequested(context) else { return }
    try await onPause()
    try await Engine.pauseAtCheckpoint(context)
    try await onResume()
  }

  /// Whether the calling operation's body is asked to pause at its next checkpoint. For bodies
  /// that prepare before they call ``checkpoint()``; `false` outside an operation's body.
  /// Cost: an atomic load while no operation in the process is asked to pause; otherwise a short
  /// search by task under a lock of its own, and the scheduler's lock when the caller's
  /// operation is the one asked.
  public nonisolated static var isPauseRequested: Bool {
    guard let context = Engine.checkpointContext() else { return false }
    return Engine.isPauseRequested(context)
  }

  /// Pauses every operation of this queue, as ``AnyQueueOperation/pause()`` on each: executing
  /// ones at their next checkpoint (their slots go to nobody: every waiting one is held too),
  /// waiting ones at once. Operations added afterwards are not paused. Unlike ``isSuspended``,
  /// which only stops new starts, this frees the slots of the operations that reach a
  /// checkpoint. Running external work (a legacy `Operation` through the adapter) goes on.
  /// Cost: O(n), in slices of at most 1,000 operations per hold of the scheduler's lock (other
  /// queues' callers take it in between; this queue starts nothing until it returns).
  public nonisolated func pauseAllOperations() {
    Engine.run { $0.pauseAll(in: index, now: Engine.now, &$1) }
  }

  /// Resumes every operation of this queue, however it was paused (by ``pauseAllOperations()``,
  /// by ``AnyQueueOperation/pause()``, or for a lowered limit): paused ones compete for slots by
  /// priority, then submission order, once every one is resumed. Cost: O(n log n), in slices of
  /// at most 1,000 operations per hold of the scheduler's lock (other queues' callers take it in
  /// between; this queue starts nothing until it returns).
  public nonisolated func resumeAllOperations() {
    Engine.run { $0.resumeAll(in: index, now: Engine.now, &$1) }
  }

  /// Sets ``maxConcurrentOperationCount`` and, with `pausingExcess`, asks the executing
  /// operations beyond the new limit to pause at their next checkpoint, so that the limit holds
  /// as soon as they reach one: the lowest priority first, and among equal priorities the most
  /// recently started first. A request is withdrawn when enough other operations free their
  /// slots first. Operations paused this way resume by themselves as slots free (by priority,
  /// then submission order); those paused with ``AnyQueueOperation/pause()`` stay paused.
  ///
  /// Without `pausingExcess` it is the property's setter: the new limit governs every later
  /// start, and executing operations go on (as in Foundation). Refuses values below 1 (other
  /// than `-1`, unlimited) with a precondition failure. Cost: O(n log n) when pausing the excess.
  public nonisolated func setMaxConcurrentOperationCount(_ limit: Int, pausingExcess: Bool) {
    let limit = validatedNewLimit(limit)
    if pausingExcess {
      Engine.run { $0.setLimitPausingExcess(limit, of: index, now: Engine.now, &$1) }
    } else {
      Engine.run { $0.setLimit(limit, of: index, now: Engine.now, &$1) }
    }
  }
}

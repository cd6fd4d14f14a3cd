extension ActorQueue {
  /// Adds one operation whose blocks run concurrently, each in a child task of a `TaskGroup`;
  /// its value is their values, in the order of `blocks`. Replaces `BlockOperation` with
  /// several `addExecutionBlock` blocks.
  ///
  /// The operation holds one slot of this queue however many blocks it has, and ends once every
  /// block has ended. Cancelling it cancels every block (they are child tasks of its task). The
  /// first block to throw cancels its siblings and the operation ends with that error
  /// (`.failed`, or `.cancelled` for `CancellationError`) — Foundation runs every block to the
  /// end and has no notion of failure. Its ``AnyQueueOperation/progress`` counts the blocks that
  /// returned, out of `blocks.count`. Cost: one child task per block.
  ///
  /// ```swift
  /// let thumbnails = queue.addOperation(name: "thumbnails", blocks: urls.map { url in
  ///   { try await thumbnail(for: url) }
  /// })
  /// let images = try await thumbnails.value   // [Image], in the order of urls
  /// ```
  @discardableResult
  public nonisolated func addOperation<Value: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal,
    blocks: [@Sendable () async throws -> Value]
  ) -> QueueOperation<[Value]> {
    addOperation(
      name: name, priority: priority,
      reportingProgress: { progress in
        progress.setTotal(blocks.count)
        return try await runConcurrently(
          blocks.map { block in
            {
              let value = try await block()
              progress.complete()
              return value
            }
          })
      })
  }

  /// Adds a barrier: its `body` runs after every operation added to this queue before it has
  /// ended (however it ended), and every operation added after it waits for it to end. Replaces
  /// `OperationQueue.addBarrierBlock(_:)`.
  ///
  /// The barrier is an operation like any other, as in Foundation: it appears in ``operations``
  /// and ``operationCount``, takes a slot while its body runs, and can be cancelled (which
  /// releases the operations behind it at once). Its edges are ordinary dependencies, so cycle
  /// detection covers them: making an operation added before the barrier depend on one added
  /// after it throws ``ActorQueueError/dependencyCycle``. Several barriers may be unfinished at
  /// once: an operation added later waits for every one of them. The ordering behind a barrier
  /// cannot be removed with ``AnyQueueOperation/removeDependency(_:)``. Cost: O(unfinished
  /// operations).
  @discardableResult
  public nonisolated func addBarrierBlock(
    name: String? = nil, _ body: @escaping @Sendable () async throws -> Void
  ) -> QueueOperation<Void> {
    let barrier = QueueOperation<Void>(name: name ?? "barrier", body)
    Engine.run { $0.submitBarrier(barrier, to: index, now: Engine.now, &$1) }
    return barrier
  }
}

/// Runs `blocks` as child tasks of one group; their values in the order of `blocks`. The first
/// error cancels the remaining blocks and is rethrown once they have ended.
func runConcurrently<Value: Sendable>(_ blocks: [@Sendable () async throws -> Value]) async throws -> [Value]
{
  try await withThrowingTaskGroup(of: (Int, Value).self) { group in
    for (index, block) in blocks.enumerated() {
      group.addTask { (index, try await block()) }
    }
    var values = [Value?](repeating: nil, count: blocks.count)
    for try await (index, value) in group {
      values[index] = value
    }
    return values.map { $0! }
  }
}

/// Cancelling and finding operations by tag (see ``OperationTag``).
extension ActorQueue {
  /// Cancels every unfinished operation of this queue tagged `tag`, as its own `cancel()`
  /// would: waiting ones end `.cancelled` at once (their completion handlers run and their
  /// waiters wake before this returns), executing ones have their tasks cancelled. Untagged
  /// and ended operations are untouched, and so are operations added while it runs. A group's
  /// children are its group's queue's (``OperationGroup/queue``), not this one's: reach them
  /// with that queue, with ``cancelOperations(tagged:)-swift.type.method``, or by tagging the
  /// group, whose cancellation cancels its children.
  ///
  /// Cost: O(k) in the k operations with the tag (on every queue), whatever the size of the
  /// queue (an index from tag to operations, in creation order; SwiftQueue's
  /// `cancelOperations(tag:)` scans every operation), in slices of at most 1,000 per hold of the
  /// scheduler's lock, however many operations carry the tag.
  public nonisolated func cancelOperations(tagged tag: OperationTag) {
    Engine.run { $0.cancelTagged(tag.id, in: index, now: Engine.now, &$1) }
  }

  /// ``cancelOperations(tagged:)-swift.method`` on every queue of the process, a group's queue included, in
  /// one call: what leaving a screen whose requests went to several queues needs. Prepared
  /// operations not yet added to a queue are left alone.
  public nonisolated static func cancelOperations(tagged tag: OperationTag) {
    Engine.run { $0.cancelTagged(tag.id, in: nil, now: Engine.now, &$1) }
  }

  /// The unfinished operations of this queue tagged `tag`, in the order they were created: what
  /// ``cancelOperations(tagged:)-swift.method`` would cancel (callers' handles to coalesced work included,
  /// the shared work itself not). A snapshot. Cost: O(k) in the k operations with the tag, in one
  /// hold of the scheduler's lock, as ``operations`` is.
  public nonisolated func operations(tagged tag: OperationTag) -> [AnyQueueOperation] {
    Engine.read { $0.taggedHandles(tag.id, in: index) }
  }
}

extension AnyQueueOperation {
  /// The tags it was given (``OperationTrait/tags(_:)-(OperationTag...)``), ended or not; empty
  /// when it has none. Cost: one hold of the scheduler's lock.
  public var tags: Set<OperationTag> {
    let ids = Engine.read { $0.tags(of: recordIndex) }
    return Set(ids.map(OperationTag.init(interned:)))
  }
}

extension MainQueue {
  /// See ``ActorQueue/cancelOperations(tagged:)-swift.method``.
  public func cancelOperations(tagged tag: OperationTag) { queue.cancelOperations(tagged: tag) }

  /// See ``ActorQueue/operations(tagged:)``.
  public func operations(tagged tag: OperationTag) -> [AnyQueueOperation] { queue.operations(tagged: tag) }
}

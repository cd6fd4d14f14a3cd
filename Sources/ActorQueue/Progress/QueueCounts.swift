/// How many of a queue's operations are in each state: those in the queue now by state, and
/// those that ended in it since it was created by terminal state.
///
/// Read one with ``ActorQueue/counts`` or follow them with ``ActorQueue/countUpdates``.
/// `pending + ready + executing + paused` is ``ActorQueue/operationCount``. The terminal counts
/// only grow: for the work of one batch, subtract what was read before it with
/// ``since(_:)``.
///
/// **Foundation:** `OperationQueue.progress` counts only finished operations against a
/// `totalUnitCount` set by hand, and shows nothing until it is set; `operationCount` is the only
/// other count, read through KVO.
public struct QueueCounts: Sendable, Hashable, CustomStringConvertible {
  /// Waiting for a dependency, a key, a condition, a retry's instant or `resume()`, or held
  /// by `pause()`: not startable yet.
  public var pending = 0
  /// Startable, waiting for a slot.
  public var ready = 0
  /// Running: holding a slot, or a legacy operation's work running after its cancellation.
  public var executing = 0
  /// Started, and paused at a checkpoint.
  public var paused = 0
  /// Ended ``OperationState/finished`` in this queue.
  public var finished = 0
  /// Ended ``OperationState/failed`` in this queue.
  public var failed = 0
  /// Ended ``OperationState/cancelled`` in this queue.
  public var cancelled = 0

  /// All zero.
  public init() {}

  /// The operations in the queue now: `pending + ready + executing + paused`.
  public var unfinished: Int { pending + ready + executing + paused }

  /// The operations that ended in the queue: `finished + failed + cancelled`.
  public var ended: Int { finished + failed + cancelled }

  /// The change from `earlier` to these counts, field by field: what ended between two reads
  /// (the terminal fields), and how the waiting and running ones moved. Replaces a batch API:
  ///
  /// ```swift
  /// let before = queue.counts
  /// // ... add and await a batch ...
  /// let batch = queue.counts.since(before)   // batch.finished, batch.failed, batch.cancelled
  /// ```
  public func since(_ earlier: QueueCounts) -> QueueCounts {
    var change = QueueCounts()
    change.pending = pending - earlier.pending
    change.ready = ready - earlier.ready
    change.executing = executing - earlier.executing
    change.paused = paused - earlier.paused
    change.finished = finished - earlier.finished
    change.failed = failed - earlier.failed
    change.cancelled = cancelled - earlier.cancelled
    return change
  }

  /// The count of operations in `state`.
  public subscript(state: OperationState) -> Int {
    switch state {
    case .pending: pending
    case .ready: ready
    case .executing: executing
    case .paused: paused
    case .finished: finished
    case .failed: failed
    case .cancelled: cancelled
    }
  }

  /// `pending 1, ready 2, executing 4, paused 0, finished 10, failed 0, cancelled 3`.
  public var description: String {
    "pending \(pending), ready \(ready), executing \(executing), paused \(paused), "
      + "finished \(finished), failed \(failed), cancelled \(cancelled)"
  }

  /// One operation of the queue left `old` for `new` (the scheduler, on each transition).
  @inline(__always)
  mutating func move(from old: OperationState, to new: OperationState) {
    add(-1, to: old)
    add(1, to: new)
  }

  @inline(__always)
  mutating func add(_ delta: Int, to state: OperationState) {
    switch state {
    case .pending: pending &+= delta
    case .ready: ready &+= delta
    case .executing: executing &+= delta
    case .paused: paused &+= delta
    case .finished: finished &+= delta
    case .failed: failed &+= delta
    case .cancelled: cancelled &+= delta
    }
  }
}

extension ActorQueue {
  /// How many of this queue's operations are in each state now, and how many ended in it by
  /// terminal state (see ``QueueCounts``). Exact: read under the scheduler's lock in one step,
  /// O(1). Kept by the scheduler on every transition at the cost of two counter updates.
  ///
  /// **Foundation:** `OperationQueue.progress` and `operationCount`.
  public nonisolated var counts: QueueCounts {
    Engine.read { $0.counts(of: index) }
  }

  /// The counts, each time they change: the current counts first, then the newest after each
  /// change, coalesced (a consumer that falls behind gets the latest, never a backlog). The stream
  /// finishes when the queue is released and its last operation has ended.
  ///
  /// Each access creates a new subscriber. Cost: nothing while nobody subscribes; while one does,
  /// a push per transition of one of its operations.
  public nonisolated var countUpdates: AsyncStream<QueueCounts> {
    let channel = EventChannel<QueueCounts>(capacity: 1)
    Engine.run { $0.watchCounts(channel, of: index, &$1) }
    return channel.makeStream()
  }
}

extension Scheduler {
  /// `queue`'s counts (see ``QueueCounts``).
  func counts(of queue: Int) -> QueueCounts { queues[queue].counts }

  /// Subscribes `channel` to `queue`'s counts, pushing the current ones first.
  mutating func watchCounts(_ channel: EventChannel<QueueCounts>, of queue: Int, _ effects: inout Effects) {
    _ = channel.push(queues[queue].counts, effects: &effects)
    queues[queue].countWatchers.append(channel)
  }

  /// Pushes `queue`'s counts to those who watch them; drops the watchers that went away. Out of
  /// line: most queues have none.
  @inline(never)
  mutating func pushCounts(of queue: Int, _ effects: inout Effects) {
    let counts = queues[queue].counts
    var dropped: [EventChannel<QueueCounts>] = []
    queues[queue].countWatchers.removeAll { channel in
      if channel.push(counts, effects: &effects) { return false }
      dropped.append(channel)
      return true
    }
    if !dropped.isEmpty { effects.garbage.releaseLater(dropped) }
  }
}

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

  /// One more operation in `state` (the scheduler, on an end).
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
  /// event that changed them, coalesced (a consumer that falls behind gets the latest, never a
  /// backlog). The stream finishes when the queue is released and its last operation has ended.
  ///
  /// Each access creates a new subscriber. Cost: nothing while nobody subscribes; while one does,
  /// what a bounded subscriber of ``events`` costs (a push per transition), and a read of the
  /// counts under the scheduler's lock each time the consumer takes the next value.
  public nonisolated var countUpdates: AsyncStream<QueueCounts> {
    // Each event wakes the consumer, which reads the counts once the event's hold has ended, so
    // every value it gives is the counts between two events, never halfway through one.
    let changes = EventChannel<QueueEvent>(capacity: 1, droppedMarker: QueueEvent.dropped(count:last:))
    let reference = reference
    let last = LockedValue<QueueCounts?>(nil)
    Engine.mutate { $0.subscribe(changes, to: reference.index) }
    let lifetime = CountsLifetime(changes)
    return AsyncStream(unfolding: {
      while true {
        guard let counts = Engine.read({ $0.isLive(reference) ? $0.counts(of: reference.index) : nil }) else {
          return nil
        }
        let isNew = last.withLock { last in
          defer { last = counts }
          return last != counts
        }
        if isNew { return counts }
        guard await lifetime.changes.next() != nil else { return nil }
      }
    })
  }
}

/// Owned by a counts stream's closure: its deinit abandons the subscription.
private final class CountsLifetime: Sendable {
  let changes: EventChannel<QueueEvent>
  init(_ changes: EventChannel<QueueEvent>) { self.changes = changes }
  deinit { changes.abandon() }
}

extension Scheduler {
  /// `queue`'s counts: the ended ones as counted at each end; the others derived from what the
  /// scheduler keeps anyway (the ready set, the slots, the list of unfinished operations, the
  /// started bodies), so a transition pays nothing for them. O(started bodies): the executing
  /// ones and those paused at a checkpoint.
  func counts(of queue: Int) -> QueueCounts {
    var counts = queues[queue].ended
    // Paused bodies, and resumed ones (`.ready`): among the started bodies, which the ready set
    // and the slots do not tell apart from the rest.
    var resumed = 0
    var index = queues[queue].firstStarted
    while index >= 0 {
      switch operations[index].phase {
      case .paused: counts.paused += 1
      case .resumed: resumed += 1
      case .pending, .ready, .executing, .detached, .following, .ended, .modifying: break
      }
      index = operations[index].nextStarted
    }
    counts.ready = queues[queue].machine.readyCount - queues[queue].pausedInReady + resumed
    counts.executing = queues[queue].machine.executing + queues[queue].detachedCount
    counts.pending = queues[queue].unfinishedCount - counts.ready - counts.executing - counts.paused
    return counts
  }
}

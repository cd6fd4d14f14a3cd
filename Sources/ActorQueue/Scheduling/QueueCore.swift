import Synchronization

/// A queue's scheduling state, apart from the public actor so that the actor can be released
/// while its operations still run (see ``ActorQueue``'s lifetime notes).
///
/// `@unchecked Sendable`: the `let`s are immutable (`lingererWake` is an atomic); every `var`
/// is read and written only while holding `Engine.lock` (hence `@exclusivity(unchecked)`, as
/// in `AnyQueueOperation`).
final class QueueCore: @unchecked Sendable {
  let name: String?
  let taskPriority: TaskPriority?

  /// The start rule: ready operations, slots, workers, limit, suspension.
  @exclusivity(unchecked) var machine: SchedulerStateMachine<AnyQueueOperation>  // guarded by Engine.lock
  /// Unfinished operations by submission; `nil` where one has ended. Holes are compacted away
  /// when they outnumber the operations, so memory follows the unfinished operations.
  @exclusivity(unchecked) private var submitted: [AnyQueueOperation?] = []  // guarded by Engine.lock
  @exclusivity(unchecked) private var holes = 0  // guarded by Engine.lock
  /// Tasks in `waitUntilAllOperationsAreFinished()`. Guarded by Engine.lock.
  @exclusivity(unchecked) var allFinishedWaiters: [UnsafeContinuation<Void, Never>] = []
  /// The last barrier added; operations added after it wait for it while it is unfinished.
  @exclusivity(unchecked) var barrier: AnyQueueOperation?  // guarded by Engine.lock
  /// Subscribers of `ActorQueue.events`.
  @exclusivity(unchecked) var subscribers: [EventChannel<QueueEvent>] = []  // guarded by Engine.lock
  /// Whether a worker that finds this queue idle lingers (see ``LingerPolicy``).
  @exclusivity(unchecked) var linger = LingerPolicy()  // guarded by Engine.lock
  /// Set (under the lock) when an operation is made ready while a worker lingers; the
  /// lingering worker polls it without the lock and takes the lock only once it is set.
  let lingererWake = Atomic<Bool>(false)

  init(name: String?, limit: Int, taskPriority: TaskPriority?) {
    self.name = name
    self.taskPriority = taskPriority
    self.machine = SchedulerStateMachine(limit: limit)
  }

  /// Unfinished operations. Under the lock.
  var unfinishedCount: Int { submitted.count - holes }

  /// Unfinished operations in submission order. Under the lock. O(n).
  var unfinished: [AnyQueueOperation] { submitted.compactMap { $0 } }

  /// Records a newly enqueued operation; returns its slot. Under the lock.
  func append(_ operation: AnyQueueOperation) -> Int {
    submitted.append(operation)
    return submitted.count - 1
  }

  /// Forgets an operation that ended; returns whether none is left. Under the lock.
  func remove(slot: Int) -> Bool {
    precondition(submitted[slot] != nil, "Internal inconsistency: an operation left its queue twice")
    submitted[slot] = nil
    holes += 1
    if holes == submitted.count {
      submitted.removeAll(keepingCapacity: submitted.count <= 1024)
      holes = 0
      return true
    }
    if holes > 64 && holes * 2 > submitted.count {
      submitted.removeAll { $0 == nil }
      holes = 0
      for (slot, operation) in submitted.enumerated() { operation!.slot = slot }
    }
    return false
  }

  /// Emits a queue event to every subscriber. Under the lock.
  func emit(_ kind: QueueEvent.Kind, _ state: inout Engine.State, _ effects: inout Effects) {
    guard !subscribers.isEmpty else { return }
    state.nextEventSequence += 1
    let event = QueueEvent(
      sequence: state.nextEventSequence, kind: kind, executingCount: machine.executing,
      maxConcurrentOperationCount: machine.limit, queueName: name)
    subscribers.removeAll { !$0.push(event, effects: &effects) }
  }
}

extension QueueCore {
  /// The barrier later operations must wait for, if one is unfinished. Under the lock.
  var activeBarrier: AnyQueueOperation? {
    guard let barrier, !barrier._state.isTerminal else { return nil }
    return barrier
  }
}

/// The submitters of one full queue waiting for space (``ActorQueue/capacity``), first come,
/// first served: each is an operation already created, added by the scheduler in the hold of the
/// lock that frees its space, so no other submission can take that space first.
struct CapacityLine: Sendable {
  struct Waiter: Sendable {
    let handle: Handle
    /// Attached once its submitter suspends (`nil` until then); resumed with `true` once the
    /// operation was added, `false` if the submitter's task was cancelled first.
    var continuation: CheckedContinuation<Bool, Never>?
  }

  /// In arrival order from `head` on; a waiter whose task was cancelled leaves a hole.
  private var waiters: [Waiter?] = []
  private var head = 0
  /// Each waiter's place in `waiters`, by its record index.
  private var places: [Int: Int] = [:]

  var isEmpty: Bool { places.isEmpty }

  /// The waiting operations' record indices, first served first.
  var order: [Int] { waiters[head...].compactMap { $0?.handle.recordIndex } }

  /// The waiting operations whose submitters have suspended (for tests).
  var suspended: [Int] {
    waiters[head...].compactMap { $0?.continuation == nil ? nil : $0?.handle.recordIndex }
  }

  mutating func append(_ handle: Handle) {
    places[handle.recordIndex] = waiters.count
    waiters.append(Waiter(handle: handle))
  }

  /// The first waiter, taken out of the line.
  mutating func popFirst() -> Waiter? {
    while head < waiters.count {
      let waiter = waiters[head].take()
      head += 1
      if let waiter {
        places[waiter.handle.recordIndex] = nil
        compactIfSparse()
        return waiter
      }
    }
    return nil
  }

  /// Takes the waiter of record `index` out of the line, wherever it is.
  mutating func remove(_ index: Int) -> Waiter? {
    guard let place = places.removeValue(forKey: index) else { return nil }
    defer { compactIfSparse() }
    return waiters[place].take()
  }

  /// Gives the waiter of record `index` the continuation its submitter suspends on; `false` if
  /// it is no longer in the line.
  mutating func attach(_ continuation: CheckedContinuation<Bool, Never>, to index: Int) -> Bool {
    guard let place = places[index] else { return false }
    waiters[place]!.continuation = continuation
    return true
  }

  /// Drops the holes before `head` once they are most of the storage: O(1) amortized per waiter.
  private mutating func compactIfSparse() {
    if places.isEmpty {
      waiters.removeAll(keepingCapacity: waiters.count <= 1024)
      head = 0
      return
    }
    guard head >= 64, head * 2 >= waiters.count else { return }
    waiters.removeFirst(head)
    head = 0
    for (place, waiter) in waiters.enumerated() {
      if let waiter { places[waiter.handle.recordIndex] = place }
    }
  }
}

/// What became of a submission that asked for space.
enum CapacitySubmission {
  /// Added now; the worker to start for it, if an idle queue's start asked for one.
  case added(Spawn?)
  /// Lined up: added once the queue has space.
  case lined
}

/// Bounded capacity: a queue that accepts at most so many unfinished operations from the
/// submitters that ask (`addOperationWaitingForCapacity`, `tryAddOperation`); the synchronous
/// add always accepts, and counts.
extension Scheduler {
  /// `queue`'s capacity; `nil`: unbounded.
  func queueCapacity(of queue: Int) -> Int? {
    queues[queue].capacity == .max ? nil : queues[queue].capacity
  }

  /// A new operation may be added now by a submitter that asks: below the capacity, and nobody
  /// waiting before it.
  func hasSpace(in queue: Int) -> Bool {
    !queues[queue].hasCapacityWaiters && queues[queue].unfinishedCount < queues[queue].capacity
  }

  /// Sets `queue`'s capacity (`Int.max`: unbounded). Lowering it ends nothing; raising it serves
  /// as many waiting submitters as there is space.
  mutating func setCapacity(
    _ capacity: Int, of queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    queues[queue].capacity = capacity
    if queues[queue].hasCapacityWaiters { noteSpace(in: queue) }
    settle(now: now, &effects)
  }

  /// Adds `handle`, a new operation, if `queue` has space (see ``hasSpace(in:)``), returning the
  /// worker an idle queue's start asks for as ``submitNew(_:to:now:_:)`` does; otherwise lines it
  /// up to be added once there is.
  mutating func submitOrLineUp(
    _ handle: Handle, to queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> CapacitySubmission {
    if hasSpace(in: queue) { return .added(submitNew(handle, to: queue, now: now, &effects)) }
    capacityLines[queue, default: CapacityLine()].append(handle)
    queues[queue].hasCapacityWaiters = true
    return .lined
  }

  /// The submitter of `index`, lined up in `queue`, suspends on `continuation`: attached, or
  /// resumed at once (`true`: added meanwhile; `false`: its task was cancelled meanwhile).
  mutating func waitForSpace(
    _ continuation: CheckedContinuation<Bool, Never>, of index: Int, in queue: Int, _ effects: inout Effects
  ) {
    if capacityLines[queue]?.attach(continuation, to: index) == true { return }
    effects.resumeSubmitter(continuation, added: operations[index].wasEnqueued)
  }

  /// The task of the submitter of `index` was cancelled: if it still waits in `queue`'s line, it
  /// leaves it, and its operation is never added.
  mutating func stopWaitingForSpace(of index: Int, in queue: Int, _ effects: inout Effects) {
    guard let waiter = capacityLines[queue]?.remove(index) else { return }
    if capacityLines[queue]!.isEmpty { endLine(of: queue) }
    if let continuation = waiter.continuation { effects.resumeSubmitter(continuation, added: false) }
    effects.garbage.releaseLater(handle: waiter.handle)
  }

  /// An operation of `queue`, which has waiting submitters, left it (or its capacity rose): they
  /// are served before the event decides its starts (`serveWaitingSubmitters`).
  mutating func noteSpace(in queue: Int) {
    guard queues[queue].unfinishedCount < queues[queue].capacity, !queuesWithSpace.contains(queue) else {
      return
    }
    queuesWithSpace.append(queue)
    hasCapacityWork = true
  }

  /// Adds the operations of waiting submitters, first come first served, while their queues
  /// have space: queues in index order, so that an event that frees space in several serves them
  /// in an order that does not depend on which operation ended first.
  @inline(never)  // rare: kept out of `settle`'s line
  mutating func serveWaitingSubmitters(now: () -> SchedulerInstant, _ effects: inout Effects) {
    while hasCapacityWork {
      hasCapacityWork = false
      var served = queuesWithSpace
      queuesWithSpace = []
      if served.count > 1 { served.sort() }
      for queue in served {
        while queues[queue].unfinishedCount < queues[queue].capacity,
          let waiter = capacityLines[queue]?.popFirst()
        {
          if capacityLines[queue]!.isEmpty { endLine(of: queue) }
          enqueue(waiter.handle, into: queue, now: now, &effects)
          if let continuation = waiter.continuation { effects.resumeSubmitter(continuation, added: true) }
          effects.garbage.releaseLater(handle: waiter.handle)
        }
      }
    }
  }

  private mutating func endLine(of queue: Int) {
    capacityLines[queue] = nil
    queues[queue].hasCapacityWaiters = false
  }

  /// The operations waiting for space in `queue`, first served first (record indices).
  func capacityWaiters(of queue: Int) -> [Int] { capacityLines[queue]?.order ?? [] }

  /// The operations whose submitters are suspended waiting for space in `queue` (for tests).
  func suspendedSubmitters(of queue: Int) -> [Int] { capacityLines[queue]?.suspended ?? [] }
}

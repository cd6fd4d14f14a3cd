// Exclusivity by key (`OperationTrait.exclusive(_:in:)`), decided in the scheduler value.
//
// - A lock is a key in a domain (`LockID`): its holder (an operation that started with it and
//   has not ended or gone back to waiting for a retry), at most one reserver (aging, below), and
//   its parked waiters by rank (priority, then the global submission order: `ReadyQueue`).
// - Starts of a queue that ever had an operation with keys (`hasExclusiveOperations`) are all
//   decided by `arbitrate`, never by a worker's own claim: released locks are scanned first, then
//   greedy rounds start, across those queues, the best-ranked head that may start: a queue's
//   ready head whose keys are taken is parked on each of its keys (it leaves the ready set, so
//   nothing behind it waits: no head-of-line blocking) and the next head is looked at. Keys are
//   taken all together in the step that takes the slot; an operation waiting for keys holds
//   nothing. One global order of decisions makes the outcome a function of the state, not of
//   which queue's worker came first: the reference model decides the same way.
// - A released lock is scanned: its waiters in rank order, each whose keys are now all free put
//   back in its ready set, until one whose queue has room (not stopped, a slot free); a waiter
//   still blocked by another key stays. A lock still free after the greedy rounds is scanned
//   again, so a free key never waits for a queue that cannot start anything.
// - Aging: when a start takes a key whose best parked waiter ranks before it (that waiter is
//   blocked by another key), the waiter is passed over; the 16th time, it reserves each of its
//   keys nobody reserves, and nobody else may take a reserved key until it starts, ends, is
//   held by `pause()`, gets a dependency, or its queue is suspended.
// - Paused bodies keep their keys (they are mid critical section); a retry's re-entry releases
//   them. Nothing here runs user code, and every key is a library integer.
//
// Calls in slices (`cancelAllOperations()` on a long queue) defer arbitration to their last
// slice, so the outcome is the same as if the call had been one step.

/// One key in one domain.
struct LockID: Hashable, Comparable, Sendable {
  let domain: UInt64
  let key: UInt64

  static func < (lhs: LockID, rhs: LockID) -> Bool {
    lhs.domain != rhs.domain ? lhs.domain < rhs.domain : lhs.key < rhs.key
  }
}

/// A lock's holder, reserver and parked waiters.
struct LockState: Sendable {
  var holder = -1
  var reservedBy = -1
  var waiters = ReadyQueue<Int>()

  var isUnused: Bool { holder < 0 && reservedBy < 0 && waiters.isEmpty }
}

/// What an operation with keys keeps (``Scheduler/exclusiveStates``).
struct ExclusiveState: Sendable {
  /// Its locks, sorted, without repeats; `keys` names each (the same order).
  var locks: [LockID]
  var keys: [ExclusivityKey]
  /// It started and holds them.
  var holds = false
  /// While parked: its stamp in each lock's waiters (`locks`' order; `noStamp` once taken out
  /// of one), and the priority they were inserted with.
  var parkedStamps: [ReadyStamp]?
  var parkedPriority = OperationPriority.normal
  /// Times a start took one of its keys while it waited with a better rank.
  var passedOver = 0

  static let noStamp = ReadyStamp.max
}

extension Scheduler {
  /// Passes over after which a waiter reserves its keys (``agingLimit`` by default).
  static let defaultAgingLimit = 16

  // MARK: Adding

  /// `index`, being added to `queue`, takes keys: its locks are resolved against the queue's own
  /// domain, and the queue decides its starts by arbitration from now on.
  mutating func beginExclusive(_ index: Int, _ requests: [ExclusiveRequest], on queue: Int) {
    var pairs: [(lock: LockID, key: ExclusivityKey)] = []
    for request in requests {
      let domain: UInt64
      if let given = request.domain {
        if let owner = given.ownerQueue, owner != queues[queue].generation {
          let name = queues[queue].name.map { " \"\($0)\"" } ?? ""
          fatalError(
            "ActorQueue: \(operations[index].name ?? "\(operations[index].id)") on queue\(name) names keys in "
              + "\(given), which only that queue's operations may use; to exclude across queues, "
              + "make an ExclusivityDomain() and name it in both")
        }
        domain = given.id
      } else {
        domain = ExclusivityDomain.queueDomainBit | queues[queue].generation
      }
      for key in request.keys { pairs.append((LockID(domain: domain, key: key.id), key)) }
    }
    pairs.sort { $0.lock < $1.lock }
    var locks: [LockID] = []
    var keys: [ExclusivityKey] = []
    for pair in pairs where locks.last != pair.lock {
      locks.append(pair.lock)
      keys.append(pair.key)
    }
    guard !locks.isEmpty else { return }
    exclusiveStates[index] = ExclusiveState(locks: locks, keys: keys)
    operations[index].timeMarks.insert(.exclusive)
    if !queues[queue].hasExclusiveOperations {
      queues[queue].hasExclusiveOperations = true
      exclusiveQueues.append(queue)
    }
  }

  // MARK: Reading

  /// Whether `index` may not take its keys now: one is held by another, or reserved by another.
  func isBlocked(_ index: Int) -> Bool {
    guard let state = exclusiveStates[index], !state.holds else { return false }
    for lock in state.locks {
      guard let current = locks[lock] else { continue }
      if current.holder >= 0 && current.holder != index { return true }
      if current.reservedBy >= 0 && current.reservedBy != index { return true }
    }
    return false
  }

  /// Whether `index` waits parked for keys.
  func isParked(_ index: Int) -> Bool {
    operations[index].timeMarks.contains(.exclusive) && exclusiveStates[index]?.parkedStamps != nil
  }

  /// What blocks parked `index`: each key held or reserved by another, with that operation.
  func blockingKeys(of index: Int) -> [(key: ExclusivityKey, by: OperationID)] {
    guard let state = exclusiveStates[index] else { return [] }
    var blocking: [(key: ExclusivityKey, by: OperationID)] = []
    for (position, lock) in state.locks.enumerated() {
      guard let current = locks[lock] else { continue }
      if current.holder >= 0 && current.holder != index {
        blocking.append((state.keys[position], operations[current.holder].id))
      } else if current.reservedBy >= 0 && current.reservedBy != index {
        blocking.append((state.keys[position], operations[current.reservedBy].id))
      }
    }
    return blocking
  }

  /// Whether `a` ranks before `b` among waiters: higher priority, then earlier submission.
  func ranksBefore(_ a: Int, _ b: Int) -> Bool {
    let pa = operations[a].priority
    let pb = operations[b].priority
    return pa != pb ? pa > pb : operations[a].order < operations[b].order
  }

  // MARK: Parking

  /// Parks `index`, the ready head of its queue, on each of its locks: it leaves the ready set.
  private mutating func park(_ index: Int, _ effects: inout Effects) {
    transition(index, to: .pending, &effects)
    insertWaiter(index)
  }

  private mutating func insertWaiter(_ index: Int) {
    let priority = operations[index].priority
    let order = operations[index].order
    var stamps: [ReadyStamp] = []
    for lock in exclusiveStates[index]!.locks {
      stamps.append(locks[lock, default: LockState()].waiters.insert(index, order: order, priority: priority))
    }
    exclusiveStates[index]!.parkedStamps = stamps
    exclusiveStates[index]!.parkedPriority = priority
  }

  /// Takes parked `index` out of its locks' waiters (it stays `.pending`).
  mutating func unpark(_ index: Int) {
    guard let stamps = exclusiveStates[index]?.parkedStamps else { return }
    let priority = exclusiveStates[index]!.parkedPriority
    for (lock, stamp) in zip(exclusiveStates[index]!.locks, stamps) where stamp != ExclusiveState.noStamp {
      locks[lock]!.waiters.remove(stamp: stamp, priority: priority)
      dropIfUnused(lock)
    }
    exclusiveStates[index]!.parkedStamps = nil
  }

  private mutating func dropIfUnused(_ lock: LockID) {
    if locks[lock]?.isUnused == true { locks[lock] = nil }
  }

  // MARK: Events of an operation with keys

  /// `index`'s priority changed: parked, it is re-sorted among the waiters.
  mutating func exclusivePriorityChanged(_ index: Int) {
    guard isParked(index) else { return }
    unpark(index)
    insertWaiter(index)
  }

  /// `index` stops competing for its keys for now (held by `pause()`, given a dependency): parked,
  /// it is taken out; its reservations go.
  mutating func exclusiveStopsWaiting(_ index: Int) {
    guard operations[index].timeMarks.contains(.exclusive) else { return }
    unpark(index)
    clearReservations(of: index)
  }

  /// `index` is held by `pause()`: if it waits for keys, it stops (a paused holder keeps its keys).
  mutating func exclusiveHeld(_ index: Int) {
    switch operations[index].phase {
    case .pending, .ready: exclusiveStopsWaiting(index)
    default: break
    }
  }

  /// `queue` was suspended: its operations' reservations go.
  mutating func exclusiveQueueSuspended(_ queue: Int) {
    guard queues[queue].hasExclusiveOperations, !reservers.isEmpty else { return }
    for reserver in reservers where operations[reserver].queue == queue { clearReservations(of: reserver) }
  }

  private mutating func clearReservations(of index: Int) {
    guard let position = reservers.firstIndex(of: index) else { return }
    reservers.remove(at: position)
    for lock in exclusiveStates[index]!.locks where locks[lock]?.reservedBy == index {
      locks[lock]!.reservedBy = -1
      markDirty(lock)
      dropIfUnused(lock)
    }
  }

  /// `index` releases its keys (it ended, or goes back to waiting for a retry).
  mutating func releaseLocks(of index: Int) {
    guard exclusiveStates[index]?.holds == true else { return }
    exclusiveStates[index]!.holds = false
    for lock in exclusiveStates[index]!.locks {
      locks[lock]!.holder = -1
      markDirty(lock)
      dropIfUnused(lock)
    }
  }

  /// `index` ended: its keys, its place among the waiters and its reservations go.
  mutating func endExclusive(_ index: Int) {
    releaseLocks(of: index)
    unpark(index)
    clearReservations(of: index)
    exclusiveStates[index] = nil
    operations[index].timeMarks.remove(.exclusive)
  }

  private mutating func markDirty(_ lock: LockID) {
    if !dirtyLocks.contains(lock) { dirtyLocks.append(lock) }
    needsArbitration = true
  }

  // MARK: Deciding starts

  /// A call is being done in slices (this event hands work out, or another call's slices are
  /// to come): arbitration waits for its last slice, so its outcome is the whole call's.
  var arbitrationDeferred: Bool { callsInSlices > 0 || (hasBulk && !bulk.isDone) }

  /// Decides every start of the queues with keys (see the top of this file). `taker`, a worker
  /// of `takerQueue` that holds nothing, is given the first operation started there; the others
  /// started get new workers. Returns the taker's action, `nil` when it got none.
  mutating func arbitrate(taker: Worker?, takerQueue: Int, _ effects: inout Effects) -> WorkerAction? {
    guard !arbitrationDeferred else {
      needsArbitration = true
      return nil
    }
    needsArbitration = false
    var takerAction: WorkerAction?
    var scanning = dirtyLocks.sorted()
    dirtyLocks.removeAll()
    while true {
      var again: [LockID] = []
      for lock in scanning where scan(lock, &effects) { again.append(lock) }
      startGreedily(taker: taker, takerQueue: takerQueue, takerAction: &takerAction, &effects)
      scanning = again.filter { locks[$0] != nil && locks[$0]!.holder < 0 }
      if scanning.isEmpty { break }
    }
    // Starts dirty only the locks their starters now hold (their own reservations cleared).
    dirtyLocks.removeAll()
    needsArbitration = false
    return takerAction
  }

  /// Scans free `lock`'s waiters (see the top of this file); returns whether it put one back.
  private mutating func scan(_ lock: LockID, _ effects: inout Effects) -> Bool {
    guard let state = locks[lock], state.holder < 0 else { return false }
    if state.reservedBy >= 0 {
      let reserver = state.reservedBy
      guard isParked(reserver), !isBlocked(reserver) else { return false }
      unpark(reserver)
      makeReady(reserver, &effects)
      return true
    }
    var skipped: [Int] = []
    var putBack = false
    while let waiter = locks[lock]!.waiters.popFirst() {
      let position = exclusiveStates[waiter]!.locks.firstIndex(of: lock)!
      exclusiveStates[waiter]!.parkedStamps![position] = ExclusiveState.noStamp
      if isBlocked(waiter) {
        skipped.append(waiter)
        continue
      }
      unpark(waiter)
      makeReady(waiter, &effects)
      putBack = true
      if queues[operations[waiter].queue].machine.hasRoom { break }
    }
    for waiter in skipped {
      let position = exclusiveStates[waiter]!.locks.firstIndex(of: lock)!
      exclusiveStates[waiter]!.parkedStamps![position] = locks[lock]!.waiters.insert(
        waiter, order: operations[waiter].order, priority: exclusiveStates[waiter]!.parkedPriority)
    }
    dropIfUnused(lock)
    return putBack
  }

  /// Greedy rounds: each starts the best-ranked head, across the queues with keys, that may
  /// start; heads whose keys are taken are parked on the way.
  private mutating func startGreedily(
    taker: Worker?, takerQueue: Int, takerAction: inout WorkerAction?, _ effects: inout Effects
  ) {
    while true {
      var best = -1
      var bestQueue = -1
      for queue in exclusiveQueues where queues[queue].machine.canStartNow {
        guard let head = firstStartable(in: queue, &effects) else { continue }
        if best < 0 || ranksBefore(head, best) {
          best = head
          bestQueue = queue
        }
      }
      guard best >= 0 else { return }
      if passOver(best) {
        park(best, &effects)
        continue
      }
      start(best, in: bestQueue, taker: taker, takerQueue: takerQueue, takerAction: &takerAction, &effects)
    }
  }

  /// The ready head of `queue` that may start, parking the blocked heads before it.
  private mutating func firstStartable(in queue: Int, _ effects: inout Effects) -> Int? {
    while let head = queues[queue].machine.peekReady() {
      guard operations[head].timeMarks.contains(.exclusive), isBlocked(head) else { return head }
      park(head, &effects)
    }
    return nil
  }

  /// `index` is about to take its keys: each key's best parked waiter that ranks before it is
  /// passed over, and reserves its keys the `agingLimit`th time. Returns whether a reservation
  /// now blocks `index`.
  private mutating func passOver(_ index: Int) -> Bool {
    guard let state = exclusiveStates[index], !state.holds else { return false }
    var reserved = false
    for lock in state.locks {
      guard locks[lock] != nil, let waiter = locks[lock]!.waiters.peekFirst(), ranksBefore(waiter, index)
      else {
        continue
      }
      exclusiveStates[waiter]!.passedOver += 1
      if exclusiveStates[waiter]!.passedOver >= agingLimit, !reservers.contains(waiter) {
        reservers.append(waiter)
        for other in exclusiveStates[waiter]!.locks where locks[other, default: LockState()].reservedBy < 0 {
          locks[other, default: LockState()].reservedBy = waiter
          if state.locks.contains(other) { reserved = true }
        }
      }
    }
    return reserved
  }

  /// Starts `index`, the ready head of `queue`: its slot and its keys in one step.
  private mutating func start(
    _ index: Int, in queue: Int, taker: Worker?, takerQueue: Int, takerAction: inout WorkerAction?,
    _ effects: inout Effects
  ) {
    _ = queues[queue].machine.claimWithoutWorker()
    if operations[index].timeMarks.contains(.exclusive), !exclusiveStates[index]!.holds {
      clearReservations(of: index)
      exclusiveStates[index]!.holds = true
      exclusiveStates[index]!.passedOver = 0
      for lock in exclusiveStates[index]!.locks { locks[lock, default: LockState()].holder = index }
    }
    if operations[index].phase.isPausedInBody {
      grantSlot(toPaused: index, &effects)
    } else if operations[index].external != nil {
      startExternalInSlot(index, &effects)
    } else if let taker, takerQueue == queue, takerAction == nil {
      takerAction = run(index, on: taker, queue: queue, &effects)
    } else {
      let worker = newWorker(for: queue)
      let first = run(index, on: worker, queue: queue, &effects)
      effects.spawn(Spawn(taskPriority: queues[queue].taskPriority, worker: worker, first: first))
    }
  }

  /// A worker of a queue with keys that holds nothing asks for work (`countedStarting`: the start
  /// rule counts it as starting): it is given what arbitration starts there first, or retires.
  mutating func claimByArbitration(
    _ worker: Worker, queue: Int, countedStarting: Bool, _ effects: inout Effects
  ) -> WorkerAction {
    if countedStarting { queues[queue].machine.workerRetired() }
    if let action = arbitrate(taker: worker, takerQueue: queue, &effects) { return action }
    freeQueueIfDone(queue, &effects)
    return .retire
  }
}

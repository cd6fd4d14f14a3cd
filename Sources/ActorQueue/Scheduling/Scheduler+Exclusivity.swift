// Exclusivity by key (`OperationTrait.exclusive(_:in:)`), decided in the scheduler value.
//
// - A lock is a key in a domain (`LockID`): its holder (an operation that started with it and
//   has not ended or gone back to waiting for a retry), at most one reserver (aging, below), and
//   its parked waiters by rank (priority, then the global submission order: `ReadyQueue`).
// - Starts of a queue that ever had an operation with keys, or shares a limiter (`isArbitrated`),
//   are all decided by arbitration, never by the start rule's own claim: released locks are scanned
//   first, then greedy rounds start, across those queues, the best-ranked head that may start: a queue's
//   ready head whose keys are taken is parked on each of its keys (it leaves the ready set, so
//   nothing behind it waits: no head-of-line blocking) and the next head is looked at. Keys are
//   taken all together in the step that takes the slot; an operation waiting for keys holds
//   nothing. One global order of decisions makes the outcome a function of the state, not of
//   which queue's worker came first: the reference model decides the same way. When only one
//   queue changed since the last arbitration, which left nothing startable, and no waited-for
//   lock was released and no queue has limiters, the rounds reduce to that queue's heads in
//   order: its claim and its settle decide them without the rounds (`decidesAlone`). A new
//   operation that the settle would only park (one key, taken; nothing else ready) is parked by
//   its add (`enqueueParkedIfBlocked`).
// - A released lock is scanned: its waiters in rank order, each whose keys are now all free put
//   back in its ready set, until one whose queue has room (not stopped, a slot free); a waiter
//   still blocked by another key stays. A lock still free after the greedy rounds is scanned
//   again, so a free key never waits for a queue that cannot start anything.
// - Aging: when a start takes a key whose best parked waiter ranks before it (that waiter is
//   blocked by another key) and whose queue could start it, the waiter is passed over; the 16th
//   time (or the next, while another reserves one of its keys), it reserves all its keys, and
//   nobody else may take a reserved key until it starts, ends, is held by `pause()`, gets a
//   dependency, or its queue is suspended. All or none: reserved sets never overlap, so a
//   reserver waits only for holders, never for another reserver.
// - Paused bodies keep their keys (they are mid critical section); a retry's re-entry releases
//   them. Nothing here runs user code, and every key is a library integer.
//
// Calls in slices (`cancelAllOperations()` on a long queue) that may change a queue with keys
// or limiters defer arbitration to their last slice, so the outcome is the same as if the call
// had been one step. A call whose work changes only other queues defers nothing: arbitration
// reads no queue without keys or limiters.

/// One key in one domain.
struct LockID: Hashable, Comparable, Sendable {
  let domain: UInt64
  let key: UInt64

  static func < (lhs: LockID, rhs: LockID) -> Bool {
    lhs.domain != rhs.domain ? lhs.domain < rhs.domain : lhs.key < rhs.key
  }
}

/// A lock in use (by ``Scheduler/lockStates`` slot): its holder, reserver and parked waiters.
struct LockState: Sendable {
  var id: LockID
  /// Operations with this lock among their keys (their states refer to this slot).
  var users = 0
  var holder = -1
  var reservedBy = -1
  var waiters = ReadyQueue<Int>()
  /// In ``Scheduler/dirtyLocks``.
  var isDirty = false
  /// The next slot of a lock on the same key, in another domain (-1: none).
  var nextWithKey = -1
}

/// What an operation with keys keeps (``Scheduler/exclusiveStates``, by record; `unused` for the
/// others): plain values, read in place and copied without reference counting. Its first lock is here; the others of an operation with
/// several keys are in ``Scheduler/moreLocks``.
struct ExclusiveState: Sendable {
  /// The slot of its first lock (in the order of `LockID`s).
  var slot: Int
  /// Its stamp in that lock's waiters while parked (`noStamp` once taken out of it).
  var stamp = ExclusiveState.noStamp
  /// Its other locks (index in ``Scheduler/moreLocks``; -1: it has one key).
  var more = -1
  /// It started and holds them.
  var holds = false
  /// Parked on its locks, with this priority.
  var isParked = false
  var parkedPriority = OperationPriority.normal
  /// Times a start took one of its keys while it waited with a better rank.
  var passedOver = 0

  static let noStamp = ReadyStamp.max
  /// The entry of a record without keys.
  static let unused = ExclusiveState(slot: -1)
}

/// The locks after the first of an operation with several keys, and its stamps there.
struct MoreLocks: Sendable {
  var slots: [Int]
  var stamps: [ReadyStamp]
}

extension Scheduler {
  /// Passes over after which a waiter reserves its keys (``agingLimit`` by default).
  static let defaultAgingLimit = 16

  // MARK: Adding

  /// `index`, being added to `queue`, takes keys: its locks are resolved against the queue's own
  /// domain, and the queue decides its starts by arbitration from now on.
  mutating func beginExclusive(_ index: Int, _ requests: ExclusiveRequests, on queue: Int) {
    guard let first = requests.first else { return }
    if requests.rest.isEmpty {
      beginExclusive(index, first, on: queue)
      return
    }
    beginExclusive(index, requests.all, on: queue)
  }

  /// ``beginExclusive(_:_:on:)`` for one request (a non-empty key list).
  mutating func beginExclusive(_ index: Int, _ request: ExclusiveRequest, on queue: Int) {
    guard request.keys.count == 1, !queues[queue].isGroup else {
      beginExclusive(index, [request], on: queue)
      return
    }
    // One key, the common case: no list to sort.
    let id = LockID(domain: domain(of: request, for: index, on: queue), key: request.keys[0].id)
    beginExclusive(index, ExclusiveState(slot: lockSlot(for: id)), on: queue)
  }

  private mutating func beginExclusive(_ index: Int, _ requests: [ExclusiveRequest], on queue: Int) {
    var ids: [LockID] = []
    if requests.count == 1 { ids.reserveCapacity(requests[0].keys.count) }
    for request in requests {
      let domain = domain(of: request, for: index, on: queue)
      for key in request.keys { ids.append(LockID(domain: domain, key: key.id)) }
    }
    // A group's child runs inside its group's hold of a key: the key is not its to take.
    if queues[queue].isGroup { ids.removeAll { isHeldByEnclosingGroup($0, queue: queue) } }
    guard !ids.isEmpty else { return }
    if ids.count > 1 { ids.sort() }
    var state = ExclusiveState(slot: lockSlot(for: ids[0]))
    var others: [Int] = []
    for position in ids.indices.dropFirst() where ids[position] != ids[position - 1] {
      others.append(lockSlot(for: ids[position]))
    }
    if !others.isEmpty {
      let more = MoreLocks(
        slots: others, stamps: Array(repeating: ExclusiveState.noStamp, count: others.count))
      if let free = freeMoreLocks.popLast() {
        state.more = free
        moreLocks[free] = more
      } else {
        state.more = moreLocks.count
        moreLocks.append(more)
      }
    }
    beginExclusive(index, state, on: queue)
  }

  @inline(__always)
  private mutating func beginExclusive(_ index: Int, _ state: ExclusiveState, on queue: Int) {
    if exclusiveStates.count <= index {
      // Usually a record just appended (a backlog growing): one element, not a range.
      if exclusiveStates.count < index {
        exclusiveStates.append(contentsOf: repeatElement(.unused, count: index - exclusiveStates.count))
      }
      exclusiveStates.append(state)
    } else {
      exclusiveStates[index] = state
    }
    operations[index].timeMarks.insert(.exclusive)
    if !queues[queue].isArbitrated { makeArbitrated(queue, taking: index) }
  }

  /// `queue`'s starts are decided by arbitration from now on (it has an operation with keys,
  /// `taking` them, or limiters).
  mutating func makeArbitrated(_ queue: Int, taking index: Int = -1) {
    guard !queues[queue].isArbitrated else { return }
    queues[queue].isArbitrated = true
    exclusiveQueues.append(queue)
    if callsInSlices > arbitratedCallsInSlices, mayBeInCallsInSlices(queue, taking: index) {
      // A call in slices found to change no such queue may change this one: what it was found to
      // change is stale until its next slice looks again.
      arbitrationEpoch &+= 1
      staleCallsInSlices = callsInSlices - arbitratedCallsInSlices
    }
    if queues[queue].gatesPermits {
      // Its waiting head's timer is arbitration's to arm now.
      stopGatingPermits(queue)
      needsArbitration = true
    }
  }

  /// Whether a call in slices whose work was found to change no queue with keys may yet change
  /// `queue`, which now takes keys (`index` the operation taking them, -1: limiters): unless the
  /// queue held nothing unfinished but `index`, is in no call's walk or hold, and `index` waits
  /// for no dependency (a release still to come) and has no tag (a cancel by tag).
  private func mayBeInCallsInSlices(_ queue: Int, taking index: Int) -> Bool {
    let count = queues[queue].unfinishedCount
    let onlyItself = count == 0 || (count == 1 && queues[queue].first == index)
    guard onlyItself, queues[queue].machine.walks == 0, index >= 0 else { return true }
    return operations[index].unfinishedDependencies > 0 || operations[index].isTagged
  }

  // MARK: An operation's locks

  /// The number of locks of `index` (it has keys).
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  func lockCount(of index: Int) -> Int {
    let more = exclusiveStates[index].more
    return more < 0 ? 1 : 1 + moreLocks[more].slots.count
  }

  /// The slot of the lock at `position` among `index`'s.
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  func lockSlot(of index: Int, at position: Int) -> Int {
    position == 0 ? exclusiveStates[index].slot : moreLocks[exclusiveStates[index].more].slots[position - 1]
  }

  /// The slots of all of `index`'s locks (the rare paths, and tests).
  func lockSlots(of index: Int) -> [Int] {
    let more = exclusiveStates[index].more
    return [exclusiveStates[index].slot] + (more < 0 ? [] : moreLocks[more].slots)
  }

  /// The position of lock `slot` among `index`'s.
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  private func position(of slot: Int, in index: Int) -> Int {
    if exclusiveStates[index].slot == slot { return 0 }
    return moreLocks[exclusiveStates[index].more].slots.firstIndex(of: slot)! + 1
  }

  private mutating func setStamp(_ stamp: ReadyStamp, of index: Int, at position: Int) {
    if position == 0 {
      exclusiveStates[index].stamp = stamp
    } else {
      moreLocks[exclusiveStates[index].more].stamps[position - 1] = stamp
    }
  }

  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  private func stamp(of index: Int, at position: Int) -> ReadyStamp {
    position == 0 ? exclusiveStates[index].stamp : moreLocks[exclusiveStates[index].more].stamps[position - 1]
  }

  /// The domain of `request`'s keys for `index` on `queue`: the one it names (refused with a
  /// message if it is another queue's own), else the queue's own.
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  private func domain(of request: ExclusiveRequest, for index: Int, on queue: Int) -> UInt64 {
    guard let given = request.domain else {
      return ExclusivityDomain.queueDomainBit | domainGeneration(of: queue)
    }
    if let owner = given.ownerQueue, owner != domainGeneration(of: queue) {
      let name = queues[queue].name.map { " \"\($0)\"" } ?? ""
      fatalError(
        "ActorQueue: \(operations[index].name ?? "\(operations[index].id)") on queue\(name) names keys in "
          + "\(given), which only that queue's operations may use; to exclude across queues, "
          + "make an ExclusivityDomain() and name it in both")
    }
    return given.id
  }

  /// The slot of lock `id`, counting one more user (made when none uses it).
  private mutating func lockSlot(for id: LockID) -> Int {
    let key = Int(id.key)
    if key < lockChains.count {
      var slot = lockChains[key]
      while slot >= 0 {
        if lockStates[slot].id == id {
          lockStates[slot].users += 1
          return slot
        }
        slot = lockStates[slot].nextWithKey
      }
    } else {
      lockChains.append(
        contentsOf: repeatElement(-1, count: max(key + 1, 2 * lockChains.count) - lockChains.count))
    }
    let slot: Int
    if let free = freeLockSlots.popLast() {
      // Freed empty (no holder, reserver or waiter): only its name changes.
      slot = free
      lockStates[slot].id = id
    } else {
      slot = lockStates.count
      lockStates.append(LockState(id: id))
    }
    lockStates[slot].users = 1
    lockStates[slot].nextWithKey = lockChains[key]
    lockChains[key] = slot
    return slot
  }

  /// The slot of lock `id` if it is in use (a group's child's keys, and tests).
  func lockSlot(of id: LockID) -> Int? {
    var slot = Int(id.key) < lockChains.count ? lockChains[Int(id.key)] : -1
    while slot >= 0 && lockStates[slot].id != id { slot = lockStates[slot].nextWithKey }
    return slot >= 0 ? slot : nil
  }

  /// Takes `slot`, which nobody uses any more, out of its key's chain.
  private mutating func unlinkLock(_ slot: Int) {
    let key = Int(lockStates[slot].id.key)
    let next = lockStates[slot].nextWithKey
    lockStates[slot].nextWithKey = -1
    if lockChains[key] == slot {
      lockChains[key] = next
      return
    }
    var previous = lockChains[key]
    while lockStates[previous].nextWithKey != slot { previous = lockStates[previous].nextWithKey }
    lockStates[previous].nextWithKey = next
  }

  // MARK: Reading

  /// Whether `index` may not take its keys now: one is held by another, or reserved by another.
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  func isBlocked(_ index: Int) -> Bool {
    guard exclusiveStates[index].holds == false else { return false }
    for position in 0..<lockCount(of: index) {
      let slot = lockSlot(of: index, at: position)
      let holder = lockStates[slot].holder
      if holder >= 0 && holder != index { return true }
      let reserver = lockStates[slot].reservedBy
      if reserver >= 0 && reserver != index { return true }
    }
    return false
  }

  /// Whether `index` waits parked for keys.
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  func isParked(_ index: Int) -> Bool {
    operations[index].timeMarks.contains(.exclusive) && exclusiveStates[index].isParked
  }

  /// The state of `index`, if it has keys (for tests).
  func exclusiveState(of index: Int) -> ExclusiveState? {
    operations[index].timeMarks.contains(.exclusive) ? exclusiveStates[index] : nil
  }

  /// What blocks `index` from taking its keys: each key held or reserved by another, with that
  /// operation (nothing once it holds them: a reservation waits for it).
  func blockingKeys(of index: Int) -> [(key: ExclusivityKey, by: OperationID)] {
    guard let state = exclusiveState(of: index), !state.holds else { return [] }
    var blocking: [(key: ExclusivityKey, by: OperationID)] = []
    for slot in lockSlots(of: index) {
      let lock = lockStates[slot]
      if lock.holder >= 0 && lock.holder != index {
        blocking.append((ExclusivityKey(interned: lock.id.key), operations[lock.holder].id))
      } else if lock.reservedBy >= 0 && lock.reservedBy != index {
        blocking.append((ExclusivityKey(interned: lock.id.key), operations[lock.reservedBy].id))
      }
    }
    return blocking
  }

  /// Whether `a` ranks before `b` among waiters: higher priority, then earlier submission.
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
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
    if exclusiveStates[index].more < 0 {
      // One key: no access to the other locks' lists (a write there would check them unique).
      let slot = exclusiveStates[index].slot
      exclusiveStates[index].stamp = lockStates[slot].waiters.insert(index, order: order, priority: priority)
    } else {
      for position in 0..<lockCount(of: index) {
        let slot = lockSlot(of: index, at: position)
        setStamp(
          lockStates[slot].waiters.insert(index, order: order, priority: priority), of: index, at: position)
      }
    }
    exclusiveStates[index].isParked = true
    exclusiveStates[index].parkedPriority = priority
  }

  /// Adds new `index`, whose one key another operation holds or reserves, to `queue` parked, when
  /// that is all its add would do: the queue decides alone, nothing else of it is ready and it has
  /// room, so the settle would make it the ready head and park it at once. Nobody hears the
  /// `.ready` it skips (no subscriber of it or its queue). Returns `false`, changing nothing,
  /// when the general add is needed.
  @inline(__always)
  mutating func enqueueParkedIfBlocked(_ handle: Handle, into queue: Int) -> Bool {
    let index = handle.recordIndex
    // A group's child whose keys are all its group's took none: it has no key state to read.
    guard operations[index].timeMarks.contains(.exclusive), exclusiveStates[index].more < 0,
      decidesAlone(queue), !hasBulk,
      queues[queue].machine.readyCount == 0, queues[queue].machine.hasRoom,
      !queues[queue].isGroup, queues[queue].barriers.isEmpty, queues[queue].subscribers.isEmpty,
      !queues[queue].hasExcessRequests, operations[index].startsAlone, !operations[index].isTagged
    else { return false }
    let slot = exclusiveStates[index].slot
    guard lockStates[slot].holder >= 0 || lockStates[slot].reservedBy >= 0 else { return false }
    operations[index].wasEnqueued = true
    appendToQueue(handle, queue)
    insertWaiter(index)
    return true
  }

  /// Takes parked `index` out of its locks' waiters (it stays `.pending`).
  mutating func unpark(_ index: Int) {
    guard exclusiveStates[index].isParked else { return }
    exclusiveStates[index].isParked = false
    let priority = exclusiveStates[index].parkedPriority
    for position in 0..<lockCount(of: index) {
      let stamp = stamp(of: index, at: position)
      if stamp != ExclusiveState.noStamp {
        lockStates[lockSlot(of: index, at: position)].waiters.remove(stamp: stamp, priority: priority)
      }
    }
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
    guard queues[queue].isArbitrated, !reservers.isEmpty else { return }
    for reserver in reservers where operations[reserver].queue == queue { clearReservations(of: reserver) }
  }

  private mutating func clearReservations(of index: Int) {
    guard !reservers.isEmpty, let position = reservers.firstIndex(of: index) else { return }
    reservers.remove(at: position)
    for slot in lockSlots(of: index) where lockStates[slot].reservedBy == index {
      lockStates[slot].reservedBy = -1
      markDirty(slot)
    }
  }

  /// `index` releases its keys (it ended, or goes back to waiting for a retry). A lock with no
  /// waiter and no reserver is not marked: its scan would put nothing back.
  mutating func releaseLocks(of index: Int) {
    guard exclusiveStates[index].holds else { return }
    exclusiveStates[index].holds = false
    for position in 0..<lockCount(of: index) {
      let slot = lockSlot(of: index, at: position)
      lockStates[slot].holder = -1
      if !lockStates[slot].waiters.isEmpty || lockStates[slot].reservedBy >= 0 { markDirty(slot) }
    }
  }

  /// `index` ended: its keys, its place among the waiters and its reservations go; a lock nobody
  /// uses any more is freed.
  mutating func endExclusive(_ index: Int) {
    if exclusiveStates[index].more < 0 {
      endExclusiveWithOneKey(index)
      return
    }
    releaseLocks(of: index)
    unpark(index)
    clearReservations(of: index)
    for position in 0..<lockCount(of: index) {
      let slot = lockSlot(of: index, at: position)
      lockStates[slot].users -= 1
      guard lockStates[slot].users == 0 else { continue }
      // Nobody uses it, so it has no holder, reserver or waiter: kept as it is for the next lock.
      unlinkLock(slot)
      if lockStates[slot].isDirty {
        dirtyLocks.removeFirst(slot)
        lockStates[slot].isDirty = false
      }
      freeLockSlots.append(slot)
    }
    if exclusiveStates[index].more >= 0 {
      moreLocks[exclusiveStates[index].more] = MoreLocks(slots: [], stamps: [])
      freeMoreLocks.append(exclusiveStates[index].more)
    }
    exclusiveStates[index] = .unused
    operations[index].timeMarks.remove(.exclusive)
  }

  /// ``endExclusive(_:)`` for an operation with one key: its lock is changed in one access.
  private mutating func endExclusiveWithOneKey(_ index: Int) {
    let slot = exclusiveStates[index].slot
    let holds = exclusiveStates[index].holds
    if exclusiveStates[index].isParked { unpark(index) }
    if !reservers.isEmpty { clearReservations(of: index) }
    let (users, scans) = Self.leave(&lockStates[slot], holding: holds)
    if scans { markDirty(slot) }
    if users == 0 {
      // Nobody uses it, so it has no holder, reserver or waiter: kept as it is for the next lock.
      unlinkLock(slot)
      if lockStates[slot].isDirty {
        dirtyLocks.removeFirst(slot)
        lockStates[slot].isDirty = false
      }
      freeLockSlots.append(slot)
    }
    exclusiveStates[index] = .unused
    operations[index].timeMarks.remove(.exclusive)
  }

  /// A user of `lock` leaves it, releasing it if it `holding` it; returns the users left and
  /// whether the lock must be scanned (released with a waiter or a reserver).
  private static func leave(_ lock: inout LockState, holding: Bool) -> (users: Int, scans: Bool) {
    lock.users -= 1
    guard holding else { return (lock.users, false) }
    lock.holder = -1
    return (lock.users, !lock.waiters.isEmpty || lock.reservedBy >= 0)
  }

  private mutating func markDirty(_ slot: Int) {
    needsArbitration = true
    guard !lockStates[slot].isDirty else { return }
    lockStates[slot].isDirty = true
    dirtyLocks.append(slot)
  }

  // MARK: Deciding starts

  /// A call that may change a queue with keys or limiters is being done in slices (this event
  /// hands work out, or another call's slices are to come): arbitration waits for its last
  /// slice, so its outcome is the whole call's. A call that changes only queues without either
  /// (cancelling a long plain queue, say) holds up no queue with keys, but for one slice once a
  /// queue it may change takes keys.
  var arbitrationDeferred: Bool {
    arbitratedCallsInSlices > 0 || staleCallsInSlices > 0 || (hasBulk && !bulk.isDone)
  }

  /// Decides every start of the queues with keys (see the top of this file). `taker`, a worker
  /// of `takerQueue` that holds nothing, is given the first operation started there; the others
  /// started get new workers. Returns the taker's action, `nil` when it got none.
  mutating func arbitrate(
    taker: Worker?, takerQueue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction? {
    guard !arbitrationDeferred else {
      needsArbitration = true
      return nil
    }
    let action = arbitrateNow(taker: taker, takerQueue: takerQueue, now: now, &effects)
    if !limitedQueues.isEmpty { armPermitTimers() }
    return action
  }

  private mutating func arbitrateNow(
    taker: Worker?, takerQueue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction? {
    needsArbitration = false
    var takerAction: WorkerAction?
    if dirtyLocks.isEmpty {
      startGreedily(taker: taker, takerQueue: takerQueue, takerAction: &takerAction, now: now, &effects)
      return takerAction
    }
    if dirtyLocks.count == 1 {
      // One lock released (an operation with one key ended): the loop below, without its lists.
      let slot = dirtyLocks.removeLast()
      lockStates[slot].isDirty = false
      while !handOff(
        slot, taker: taker, takerQueue: takerQueue, takerAction: &takerAction, now: now, &effects)
      {
        let putBack = scan(slot, &effects)
        startGreedily(taker: taker, takerQueue: takerQueue, takerAction: &takerAction, now: now, &effects)
        if !putBack || lockStates[slot].holder >= 0 { break }
      }
    } else {
      var scanning: [Int] = []
      swap(&scanning, &dirtyLocks)
      for slot in scanning { lockStates[slot].isDirty = false }
      scanning.sort { lockStates[$0].id < lockStates[$1].id }
      while true {
        // Locks scanned that put a waiter back, and are still free after the rounds: again.
        var kept = 0
        for position in scanning.indices where scan(scanning[position], &effects) {
          scanning[kept] = scanning[position]
          kept += 1
        }
        scanning.removeLast(scanning.count - kept)
        startGreedily(taker: taker, takerQueue: takerQueue, takerAction: &takerAction, now: now, &effects)
        scanning.removeAll { lockStates[$0].holder >= 0 }
        if scanning.isEmpty { break }
      }
      if dirtyLocks.isEmpty { swap(&scanning, &dirtyLocks) }  // keeps the list's storage
    }
    // Starts dirty only the locks their starters now hold (their own reservations cleared).
    while let slot = dirtyLocks.popLast() { lockStates[slot].isDirty = false }
    needsArbitration = false
    return takerAction
  }

  /// Starts free lock `slot`'s first waiter at once when the scan and the greedy rounds could
  /// start nothing else: it has this one key, its queue has room and nothing ready, no other
  /// queue with keys can start anything, and nobody hears the `.ready` state it skips. The chain
  /// of one key's operations (one ends, the next starts) then goes through no ready set. Returns
  /// whether it did.
  @inline(__always)
  private mutating func handOff(
    _ slot: Int, taker: Worker?, takerQueue: Int, takerAction: inout WorkerAction?,
    now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> Bool {
    guard lockStates[slot].holder < 0, lockStates[slot].reservedBy < 0, !lockStates[slot].waiters.isEmpty,
      let waiter = lockStates[slot].waiters.peekFirst(), exclusiveStates[waiter].more < 0
    else { return false }
    let queue = operations[waiter].queue
    guard queues[queue].machine.hasRoom, !queues[queue].hasLimiters,
      queues[queue].machine.readyCount == 0,
      queues[queue].subscribers.isEmpty,
      operations[waiter].subscribers.isEmpty, operations[waiter].extrasBox == nil,
      !operations[waiter].pauseHeld,
      !operations[waiter].timeMarks.contains(.inBackoff)
    else { return false }
    var position = 0
    while position < exclusiveQueues.count {  // by index: no copy of the array
      let other = exclusiveQueues[position]
      if other != queue && queues[other].machine.canStartNow { return false }
      position += 1
    }
    _ = lockStates[slot].waiters.popFirst()
    exclusiveStates[waiter].stamp = ExclusiveState.noStamp
    exclusiveStates[waiter].isParked = false
    queues[queue].machine.takeSlot()
    greedyRound &+= 1  // what a round would decide: no queue passed over
    start(
      waiter, in: queue, taker: taker, takerQueue: takerQueue, takerAction: &takerAction, now: now, &effects)
    return true
  }

  /// Scans free lock `slot`'s waiters (see the top of this file); returns whether it put one back.
  /// What it puts back is not marked changed: the greedy rounds that follow decide its start, and
  /// a mark would only make the event's end arbitrate again for nothing.
  private mutating func scan(_ slot: Int, _ effects: inout Effects) -> Bool {
    guard lockStates[slot].holder < 0 else { return false }
    let reserver = lockStates[slot].reservedBy
    if reserver >= 0 {
      guard isParked(reserver), !isBlocked(reserver) else { return false }
      unpark(reserver)
      _ = enterReadySet(reserver, &effects)
      return true
    }
    // Read first: taking a waiter out is a write to every lock's state.
    guard !lockStates[slot].waiters.isEmpty else { return false }
    var skipped: [Int] = []  // allocates only when a waiter is blocked by another key
    var putBack = false
    while let waiter = lockStates[slot].waiters.popFirst() {
      setStamp(ExclusiveState.noStamp, of: waiter, at: position(of: slot, in: waiter))
      if isBlocked(waiter) {
        skipped.append(waiter)
        continue
      }
      unpark(waiter)
      _ = enterReadySet(waiter, &effects)
      putBack = true
      if queues[operations[waiter].queue].machine.hasRoom { break }
    }
    for waiter in skipped {
      let stamp = lockStates[slot].waiters.insert(
        waiter, order: operations[waiter].order, priority: exclusiveStates[waiter].parkedPriority)
      setStamp(stamp, of: waiter, at: position(of: slot, in: waiter))
    }
    return putBack
  }

  /// Greedy rounds: each starts the best-ranked head, across the queues with keys, that may
  /// start; heads whose keys are taken are parked on the way, and a queue whose head waits for
  /// permits is passed over (`Scheduler+RateLimits.swift`).
  private mutating func startGreedily(
    taker: Worker?, takerQueue: Int, takerAction: inout WorkerAction?, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) {
    repeat {
      greedyRound &+= 1
      roundSystemNow = nil
      startGreedilyInRound(
        taker: taker, takerQueue: takerQueue, takerAction: &takerAction, now: now, &effects)
    } while !limitedQueues.isEmpty && skippedHeadIsBlocked()
  }

  /// Whether a head passed over for permits in this round is now blocked by keys a later start
  /// took: another round parks it, and drops what it reserved, as a fresh arbitration would.
  private mutating func skippedHeadIsBlocked() -> Bool {
    var position = 0
    while position < limitedQueues.count {  // by index: the loop mutates `self`
      let queue = limitedQueues[position]
      position += 1
      if queues[queue].skippedRound == greedyRound, let head = queues[queue].machine.peekReady(),
        operations[head].timeMarks.contains(.exclusive), isBlocked(head)
      {
        return true
      }
    }
    return false
  }

  private mutating func startGreedilyInRound(
    taker: Worker?, takerQueue: Int, takerAction: inout WorkerAction?, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) {
    while true {
      var best = -1
      var bestQueue = -1
      var position = 0
      while position < exclusiveQueues.count {  // by index: the loop mutates `self`
        let queue = exclusiveQueues[position]
        position += 1
        guard queues[queue].machine.canStartNow, queues[queue].skippedRound != greedyRound,
          let head = firstStartable(in: queue, &effects)
        else {
          continue
        }
        if best < 0 || ranksBefore(head, best) {
          best = head
          bestQueue = queue
        }
      }
      guard best >= 0 else { return }
      if queues[bestQueue].hasLimiters, !admits(best, in: bestQueue, now: now) { continue }
      if operations[best].timeMarks.contains(.exclusive), passOver(best) {
        park(best, &effects)
        continue
      }
      _ = queues[bestQueue].machine.claimWithoutWorker()
      start(
        best, in: bestQueue, taker: taker, takerQueue: takerQueue, takerAction: &takerAction, now: now,
        &effects)
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

  /// `index` (with keys) is about to take them: each key's best parked waiter that ranks before
  /// it is passed over, and reserves its keys the `agingLimit`th time. Returns whether a
  /// reservation now blocks `index`.
  private mutating func passOver(_ index: Int) -> Bool {
    guard !exclusiveStates[index].holds else { return false }
    var reserved = false
    for position in 0..<lockCount(of: index) {
      let slot = lockSlot(of: index, at: position)
      // A waiter whose queue could not start it now (suspended, full) is not passed over: it must
      // not come to reserve keys that other queues' operations then wait for.
      guard !lockStates[slot].waiters.isEmpty, let waiter = lockStates[slot].waiters.peekFirst(),
        ranksBefore(waiter, index),
        queues[operations[waiter].queue].machine.hasRoom
      else { continue }
      exclusiveStates[waiter].passedOver += 1
      guard exclusiveStates[waiter].passedOver >= agingLimit, !reservers.contains(waiter) else { continue }
      // All of its keys or none: two waiters that each reserved some of the other's keys would
      // block each other for ever. One that finds a key reserved tries again when passed over next.
      let wanted = lockSlots(of: waiter)
      guard wanted.allSatisfy({ lockStates[$0].reservedBy < 0 }) else { continue }
      reservers.append(waiter)
      for other in wanted {
        lockStates[other].reservedBy = waiter
        if lockSlots(of: index).contains(other) { reserved = true }
      }
    }
    return reserved
  }

  /// A queue with keys changed (``Scheduler/settle(now:_:)``, its excess requests recounted): its
  /// starts are decided now when ``decidesAlone(_:)``, else by arbitration once the touched
  /// queues are done. A change that leaves it unable to start anything, with no lock released and
  /// no limiter to re-ask, leaves the last arbitration's outcome as it was (an add to a full
  /// queue): no arbitration for it.
  mutating func settleArbitrated(_ queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects) {
    guard queues[queue].machine.canStartNow || !dirtyLocks.isEmpty || !limitedQueues.isEmpty else { return }
    var none: WorkerAction?
    if decidesAlone(queue), startAlone(queue, taker: nil, takerAction: &none, now: now, &effects) { return }
    needsArbitration = true
  }

  /// Starts `index`, just given a slot in `queue`: its keys in the same step.
  private mutating func start(
    _ index: Int, in queue: Int, taker: Worker?, takerQueue: Int, takerAction: inout WorkerAction?,
    now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    if queues[queue].hasLimiters { takePermits(of: index, in: queue, now: now) }
    if operations[index].timeMarks.contains(.exclusive), !exclusiveStates[index].holds {
      if !reservers.isEmpty { clearReservations(of: index) }
      exclusiveStates[index].holds = true
      exclusiveStates[index].passedOver = 0
      for position in 0..<lockCount(of: index) {
        lockStates[lockSlot(of: index, at: position)].holder = index
      }
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
    _ worker: Worker, queue: Int, countedStarting: Bool, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction {
    if countedStarting { queues[queue].machine.workerRetired() }
    var action: WorkerAction?
    if !decidesAlone(queue) || !startAlone(queue, taker: worker, takerAction: &action, now: now, &effects),
      let next = arbitrate(taker: action == nil ? worker : nil, takerQueue: queue, now: now, &effects)
    {
      action = next
    }
    if let action { return action }
    freeQueueIfDone(queue, &effects)
    return .retire
  }

  /// Whether arbitration now would decide `queue`'s starts alone, head by head: the last
  /// arbitration left every queue with keys unable to start anything, and since then only `queue`
  /// changed (touched last, or not at all: its slot freed, heads added), no lock was released that
  /// anyone waits for, and no queue has limiters.
  @inline(__always)
  private func decidesAlone(_ queue: Int) -> Bool {
    !needsArbitration && dirtyLocks.isEmpty && limitedQueues.isEmpty && !arbitrationDeferred
      && (firstTouched < 0 || (firstTouched == queue && queues[queue].nextTouched < 0))
  }

  /// Arbitration's rounds when ``decidesAlone(_:)``, without them: `queue`'s heads in order, each
  /// whose one key is taken parked, each whose one key is free with nobody waiting for it started
  /// (nobody to pass over), the first on `taker`. Stops at a head it cannot decide so (several keys,
  /// waiters to pass over, a paused body, external work) and returns `false`: arbitration decides
  /// from there. Returns `true` when `queue` can start nothing more.
  @inline(__always)
  private mutating func startAlone(
    _ queue: Int, taker: Worker?, takerAction: inout WorkerAction?, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) -> Bool {
    while queues[queue].machine.canStartNow, let head = queues[queue].machine.peekReady() {
      guard operations[head].external == nil, !operations[head].phase.isPausedInBody else { return false }
      if operations[head].timeMarks.contains(.exclusive) {
        let slot = exclusiveStates[head].slot
        guard exclusiveStates[head].more < 0, !exclusiveStates[head].holds else { return false }
        let holder = lockStates[slot].holder
        let reserver = lockStates[slot].reservedBy
        if (holder >= 0 && holder != head) || (reserver >= 0 && reserver != head) {
          park(head, &effects)
          continue
        }
        guard lockStates[slot].waiters.isEmpty else { return false }
      }
      _ = queues[queue].machine.claimWithoutWorker()
      greedyRound &+= 1  // what a round would count
      start(head, in: queue, taker: taker, takerQueue: queue, takerAction: &takerAction, now: now, &effects)
    }
    return true
  }
}

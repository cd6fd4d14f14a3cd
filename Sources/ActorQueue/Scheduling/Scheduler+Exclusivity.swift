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
}

/// A short list kept inline when it has one element (an operation's lock slots and their
/// stamps): most operations take one key, and then their state allocates nothing.
struct InlineList<Element: Sendable & Equatable>: Sendable {
  var first: Element
  var rest: [Element] = []

  var count: Int { 1 + rest.count }

  subscript(position: Int) -> Element {
    get { position == 0 ? first : rest[position - 1] }
    set {
      if position == 0 { first = newValue } else { rest[position - 1] = newValue }
    }
  }

  func firstIndex(of element: Element) -> Int? {
    if first == element { return 0 }
    return rest.firstIndex(of: element).map { $0 + 1 }
  }

  func contains(_ element: Element) -> Bool { first == element || rest.contains(element) }

  /// The elements, for the rare paths and tests.
  var array: [Element] { [first] + rest }
}

/// What an operation with keys keeps (``Scheduler/exclusiveStates``, by record).
struct ExclusiveState: Sendable {
  /// Its locks' slots, in the order of their `LockID`s, without repeats.
  var slots: InlineList<Int>
  /// It started and holds them.
  var holds = false
  /// Parked: its stamp in each lock's waiters (`slots`' order; `noStamp` once taken out of one),
  /// and the priority they were inserted with.
  var isParked = false
  var stamps = InlineList<ReadyStamp>(first: ExclusiveState.noStamp)
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
    if requests.count == 1, requests[0].keys.count == 1 {
      // One key, the common case: no list to sort.
      let id = LockID(domain: domain(of: requests[0], for: index, on: queue), key: requests[0].keys[0].id)
      beginExclusive(index, slots: InlineList(first: lockSlot(for: id)), on: queue)
      return
    }
    var ids: [LockID] = []
    if requests.count == 1 { ids.reserveCapacity(requests[0].keys.count) }
    for request in requests {
      let domain = domain(of: request, for: index, on: queue)
      for key in request.keys { ids.append(LockID(domain: domain, key: key.id)) }
    }
    guard !ids.isEmpty else { return }
    if ids.count > 1 { ids.sort() }
    var slots = InlineList(first: lockSlot(for: ids[0]))
    for position in ids.indices.dropFirst() where ids[position] != ids[position - 1] {
      slots.rest.append(lockSlot(for: ids[position]))
    }
    beginExclusive(index, slots: slots, on: queue)
  }

  private mutating func beginExclusive(_ index: Int, slots: InlineList<Int>, on queue: Int) {
    if exclusiveStates.count <= index {
      exclusiveStates.append(contentsOf: repeatElement(nil, count: index + 1 - exclusiveStates.count))
    }
    exclusiveStates[index] = ExclusiveState(slots: slots)
    operations[index].timeMarks.insert(.exclusive)
    if !queues[queue].hasExclusiveOperations {
      queues[queue].hasExclusiveOperations = true
      exclusiveQueues.append(queue)
    }
  }

  /// The domain of `request`'s keys for `index` on `queue`: the one it names (refused with a
  /// message if it is another queue's own), else the queue's own.
  private func domain(of request: ExclusiveRequest, for index: Int, on queue: Int) -> UInt64 {
    guard let given = request.domain else {
      return ExclusivityDomain.queueDomainBit | queues[queue].generation
    }
    if let owner = given.ownerQueue, owner != queues[queue].generation {
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
    if let slot = lockSlots[id] {
      lockStates[slot].users += 1
      return slot
    }
    let slot: Int
    if let free = freeLockSlots.popLast() {
      slot = free
      lockStates[slot] = LockState(id: id)
    } else {
      slot = lockStates.count
      lockStates.append(LockState(id: id))
    }
    lockStates[slot].users = 1
    lockSlots[id] = slot
    return slot
  }

  // MARK: Reading

  /// Whether `index` may not take its keys now: one is held by another, or reserved by another.
  func isBlocked(_ index: Int) -> Bool {
    guard exclusiveStates[index]!.holds == false else { return false }
    let slots = exclusiveStates[index]!.slots
    for position in 0..<slots.count {
      let slot = slots[position]
      let holder = lockStates[slot].holder
      if holder >= 0 && holder != index { return true }
      let reserver = lockStates[slot].reservedBy
      if reserver >= 0 && reserver != index { return true }
    }
    return false
  }

  /// Whether `index` waits parked for keys.
  func isParked(_ index: Int) -> Bool {
    operations[index].timeMarks.contains(.exclusive) && exclusiveStates[index]!.isParked
  }

  /// The state of `index`, if it has keys (for tests).
  func exclusiveState(of index: Int) -> ExclusiveState? {
    operations[index].timeMarks.contains(.exclusive) ? exclusiveStates[index] : nil
  }

  /// What blocks parked `index`: each key held or reserved by another, with that operation.
  func blockingKeys(of index: Int) -> [(key: ExclusivityKey, by: OperationID)] {
    guard let state = exclusiveState(of: index) else { return [] }
    var blocking: [(key: ExclusivityKey, by: OperationID)] = []
    for slot in state.slots.array {
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
    let slots = exclusiveStates[index]!.slots
    var stamps = InlineList(
      first: lockStates[slots.first].waiters.insert(index, order: order, priority: priority))
    for slot in slots.rest {
      stamps.rest.append(lockStates[slot].waiters.insert(index, order: order, priority: priority))
    }
    exclusiveStates[index]!.stamps = stamps
    exclusiveStates[index]!.isParked = true
    exclusiveStates[index]!.parkedPriority = priority
  }

  /// Takes parked `index` out of its locks' waiters (it stays `.pending`).
  mutating func unpark(_ index: Int) {
    guard exclusiveStates[index]!.isParked else { return }
    exclusiveStates[index]!.isParked = false
    let priority = exclusiveStates[index]!.parkedPriority
    let slots = exclusiveStates[index]!.slots
    for position in 0..<slots.count {
      let stamp = exclusiveStates[index]!.stamps[position]
      if stamp != ExclusiveState.noStamp {
        lockStates[slots[position]].waiters.remove(stamp: stamp, priority: priority)
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
    guard queues[queue].hasExclusiveOperations, !reservers.isEmpty else { return }
    for reserver in reservers where operations[reserver].queue == queue { clearReservations(of: reserver) }
  }

  private mutating func clearReservations(of index: Int) {
    guard !reservers.isEmpty, let position = reservers.firstIndex(of: index) else { return }
    reservers.remove(at: position)
    for slot in exclusiveStates[index]!.slots.array where lockStates[slot].reservedBy == index {
      lockStates[slot].reservedBy = -1
      markDirty(slot)
    }
  }

  /// `index` releases its keys (it ended, or goes back to waiting for a retry).
  mutating func releaseLocks(of index: Int) {
    guard exclusiveStates[index]!.holds else { return }
    exclusiveStates[index]!.holds = false
    let slots = exclusiveStates[index]!.slots
    for position in 0..<slots.count {
      lockStates[slots[position]].holder = -1
      markDirty(slots[position])
    }
  }

  /// `index` ended: its keys, its place among the waiters and its reservations go; a lock nobody
  /// uses any more is freed.
  mutating func endExclusive(_ index: Int) {
    releaseLocks(of: index)
    unpark(index)
    clearReservations(of: index)
    let slots = exclusiveStates[index]!.slots
    for position in 0..<slots.count {
      let slot = slots[position]
      lockStates[slot].users -= 1
      guard lockStates[slot].users == 0 else { continue }
      lockSlots[lockStates[slot].id] = nil
      if lockStates[slot].isDirty { dirtyLocks.removeFirst(slot) }
      lockStates[slot] = LockState(id: LockID(domain: 0, key: 0))
      freeLockSlots.append(slot)
    }
    exclusiveStates[index] = nil
    operations[index].timeMarks.remove(.exclusive)
  }

  private mutating func markDirty(_ slot: Int) {
    needsArbitration = true
    guard !lockStates[slot].isDirty else { return }
    lockStates[slot].isDirty = true
    dirtyLocks.append(slot)
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
    if dirtyLocks.isEmpty {
      startGreedily(taker: taker, takerQueue: takerQueue, takerAction: &takerAction, &effects)
      return takerAction
    }
    var scanning: [Int] = []
    swap(&scanning, &dirtyLocks)
    for slot in scanning { lockStates[slot].isDirty = false }
    if scanning.count > 1 { scanning.sort { lockStates[$0].id < lockStates[$1].id } }
    while true {
      // Locks scanned that put a waiter back, and are still free after the rounds: again.
      var kept = 0
      for position in scanning.indices where scan(scanning[position], &effects) {
        scanning[kept] = scanning[position]
        kept += 1
      }
      scanning.removeLast(scanning.count - kept)
      startGreedily(taker: taker, takerQueue: takerQueue, takerAction: &takerAction, &effects)
      scanning.removeAll { lockStates[$0].holder >= 0 }
      if scanning.isEmpty { break }
    }
    // Starts dirty only the locks their starters now hold (their own reservations cleared).
    for slot in dirtyLocks { lockStates[slot].isDirty = false }
    scanning.removeAll(keepingCapacity: true)
    swap(&scanning, &dirtyLocks)
    needsArbitration = false
    return takerAction
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
    var skipped: [Int] = []  // allocates only when a waiter is blocked by another key
    var putBack = false
    while let waiter = lockStates[slot].waiters.popFirst() {
      let position = exclusiveStates[waiter]!.slots.firstIndex(of: slot)!
      exclusiveStates[waiter]!.stamps[position] = ExclusiveState.noStamp
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
      let position = exclusiveStates[waiter]!.slots.firstIndex(of: slot)!
      exclusiveStates[waiter]!.stamps[position] = lockStates[slot].waiters.insert(
        waiter, order: operations[waiter].order, priority: exclusiveStates[waiter]!.parkedPriority)
    }
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
      if operations[best].timeMarks.contains(.exclusive), passOver(best) {
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

  /// `index` (with keys) is about to take them: each key's best parked waiter that ranks before
  /// it is passed over, and reserves its keys the `agingLimit`th time. Returns whether a
  /// reservation now blocks `index`.
  private mutating func passOver(_ index: Int) -> Bool {
    guard !exclusiveStates[index]!.holds else { return false }
    var reserved = false
    let slots = exclusiveStates[index]!.slots
    for position in 0..<slots.count {
      let slot = slots[position]
      guard let waiter = lockStates[slot].waiters.peekFirst(), ranksBefore(waiter, index) else { continue }
      exclusiveStates[waiter]!.passedOver += 1
      if exclusiveStates[waiter]!.passedOver >= agingLimit, !reservers.contains(waiter) {
        reservers.append(waiter)
        for other in exclusiveStates[waiter]!.slots.array where lockStates[other].reservedBy < 0 {
          lockStates[other].reservedBy = waiter
          if slots.contains(other) { reserved = true }
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
      let slots = exclusiveStates[index]!.slots
      for position in 0..<slots.count { lockStates[slots[position]].holder = index }
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

// Rate limits (`RateLimiter`), decided in the scheduler value: by the queue's own start rule, or
// in exclusivity's arbitration.
//
// - A limiter is a `PermitSchedule` on a clock (`LimiterState`, by slot). A queue whose limiters
//   no other queue lists, and which has no keys, gates its own starts (below, "A queue that
//   gates its own starts"). The others decide their starts by arbitration
//   (`Scheduler+Exclusivity.swift`), so that one greedy round decides keys, permits and slots
//   together, across queues, in rank order (priority, then submission order).
// - In a round, the best-ranked head that may start is admitted only if every limiter of its
//   queue has the permits its cost asks for now. If not, it waits where it is (strict order:
//   nothing behind it starts first), its queue is passed over for the rest of the round, and its
//   limiters are reserved against every head ranked after it (a cheap head of another queue
//   cannot take the permits it waits for). It holds no slot and no task.
// - Permits are taken in the step that takes the slot: a first start and each retry attempt; a
//   paused body given a slot again takes none.
// - One timer per passed-over queue, at the instant its head's permits conform (computed, never
//   polled), armed when arbitration ends; it fires an arbitration. A head that waits for a
//   better-ranked head sharing its limiter has none: that head's start re-runs arbitration.
// - A manual clock's advance stops at each such instant (`advanceManualClock`): the grants of a
//   long advance happen at their instants, in order with deadlines, as the system clock's do.
// - A cost above what a limiter can ever grant ends the operation (`RateLimitError`) when the
//   event settles: when it is added, when its queue's limiters change, or when it reaches the
//   head (a retry's next attempt).

/// A limiter's state (``Scheduler/limiterStates``, by slot).
struct LimiterState: Sendable {
  var schedule: PermitSchedule
  /// The clock its instants are of.
  var clock: UInt64
  /// The greedy round in which a waiting head reserved it against later-ranked heads.
  var blockedRound: UInt64 = 0
}

extension Scheduler {
  // MARK: Limiters

  /// A new limiter's slot.
  mutating func createLimiter(_ schedule: PermitSchedule, clock: UInt64) -> Int {
    let state = LimiterState(schedule: schedule, clock: clock)
    if let slot = freeLimiterSlots.popLast() {
      limiterStates[slot] = state
      return slot
    }
    limiterStates.append(state)
    return limiterStates.count - 1
  }

  /// The limiter's object is gone: no queue lists it any more (a queue's record keeps the
  /// objects of its limiters).
  mutating func freeLimiter(_ slot: Int) {
    freeLimiterSlots.append(slot)
  }

  /// The permits a start could take at `now` on the limiter's clock.
  func availablePermits(of slot: Int, now: Int64) -> Int64 {
    limiterStates[slot].schedule.available(at: now)
  }

  /// Nothing starts through the limiter before `end`.
  mutating func penalize(_ slot: Int, until end: Int64, now: () -> SchedulerInstant, _ effects: inout Effects)
  {
    limiterStates[slot].schedule.penalize(until: end)
    // Heads waiting for its permits wait longer: their timers are armed again.
    needsArbitration = true
    for queue in limitedQueues where queues[queue].gatesPermits && queues[queue].limiters.contains(slot) {
      touch(queue)
    }
    settle(now: now, &effects)
  }

  // MARK: A queue's limiters

  /// The limiters `queue` lists.
  func rateLimiters(of queue: Int) -> [RateLimiter] { queues[queue].limiterObjects }

  /// `queue` limits its starts with the limiters of `listed` slots from now on (their clocks were
  /// checked against the queue's), keeping `limiters`, their objects. Operations waiting there
  /// whose cost one of them can never grant end.
  mutating func setRateLimiters(
    _ listed: [Int], keeping limiters: [RateLimiter], of queue: Int, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) {
    var slots: [Int] = []
    for slot in listed where !slots.contains(slot) { slots.append(slot) }
    var replaced = limiters
    swap(&replaced, &queues[queue].limiterObjects)
    effects.garbage.releaseLater(replaced)
    queues[queue].limiters = slots
    queues[queue].hasLimiters = !slots.isEmpty
    queues[queue].soleLimiter = slots.count == 1 ? slots[0] : -1
    if slots.isEmpty {
      limitedQueues.removeFirst(queue)
      if queues[queue].gatesPermits { stopGatingPermits(queue) }
      disarmPermitTimer(of: queue)
    } else {
      if !limitedQueues.contains(queue) { limitedQueues.append(queue) }
      // A limiter another queue lists grants in the order of both queues' heads: arbitration
      // decides their starts. A queue with keys is arbitrated already.
      var shared = false
      for other in limitedQueues
      where other != queue && queues[other].limiters.contains(where: slots.contains) {
        shared = true
        makeArbitrated(other)
      }
      if shared || queues[queue].isArbitrated {
        makeArbitrated(queue)
      } else {
        queues[queue].gatesPermits = true
      }
      if !costs.isEmpty { noteImpossibleCosts(in: queue) }
    }
    touch(queue)
    needsArbitration = true
    settle(now: now, &effects)
  }

  /// Waiting operations of `queue` that cost more than one of its limiters grants at once, in
  /// submission order.
  private mutating func noteImpossibleCosts(in queue: Int) {
    let capacity = capacity(of: queue)
    var found: [Int] = []
    for (index, cost) in costs
    where cost > capacity && operations[index].queue == queue && operations[index].phase.hasNotStarted {
      found.append(index)
    }
    found.sort { operations[$0].order < operations[$1].order }
    for index in found { noteImpossibleCost(index) }
  }

  /// The most one start may cost in `queue`: the smallest capacity of its limiters.
  func capacity(of queue: Int) -> Int64 {
    var capacity = Int64.max
    for slot in queues[queue].limiters { capacity = min(capacity, limiterStates[slot].schedule.capacity) }
    return capacity
  }

  private mutating func noteImpossibleCost(_ index: Int) {
    impossibleCosts.append((index, operations[index].id))
    hasTimeWork = true
  }

  /// The queue's limiters' permit timer goes (the queue has none, or is freed).
  mutating func disarmPermitTimer(of queue: Int) {
    guard queues[queue].armedThrottle != nil else { return }
    queues[queue].armedThrottle = nil
    unarm(on: queues[queue].clock)
    dropStaleFront(on: queues[queue].clock)
  }

  // MARK: Costs

  /// `index`, being added to `queue`, costs `cost` permits per start (1 when it says nothing). A
  /// cost the queue's limiters can never grant ends it when the event settles.
  mutating func beginCost(_ cost: Int64?, of index: Int, on queue: Int) {
    if let cost, cost != 1 { costs[index] = cost }
    if queues[queue].hasLimiters, (cost ?? 1) > capacity(of: queue) { noteImpossibleCost(index) }
  }

  /// What one start of `index` costs.
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  func cost(of index: Int) -> Int64 {
    costs.isEmpty ? 1 : costs[index] ?? 1
  }

  /// Ends the operations found with a cost their queue's limiters can never grant (part of
  /// `settleTime`).
  mutating func endImpossibleCosts(_ effects: inout Effects) {
    var found: [(index: Int, id: OperationID)] = []
    swap(&found, &impossibleCosts)
    for (index, id) in found {
      guard operations[index].isLive, operations[index].id == id, !operations[index].phase.hasEnded,
        operations[index].queue >= 0
      else { continue }
      let cost = cost(of: index)
      let capacity = capacity(of: operations[index].queue)
      guard cost > capacity, queues[operations[index].queue].hasLimiters else { continue }
      let error = RateLimitError(
        operationID: id, operationName: operations[index].name, cost: Int(cost), capacity: Int(capacity))
      terminate(index, as: .failed, error: error, &effects)
    }
  }

  // MARK: Admission (in the greedy rounds)

  /// The current instant of `clock`, the system's read once per greedy round.
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  mutating func roundInstant(of clock: UInt64, _ now: () -> SchedulerInstant) -> Int64 {
    if clock != 0 { return manualNow(of: clock) }
    if let instant = roundSystemNow { return instant }
    let instant = now().nanoseconds
    roundSystemNow = instant
    return instant
  }

  /// Whether `head`, the best-ranked head of the round, in `queue` (which has limiters), has its
  /// permits now. If not, its queue is passed over for the rest of the round and its limiters
  /// are reserved against the heads ranked after it (see the top of this file).
  mutating func admits(_ head: Int, in queue: Int, now: () -> SchedulerInstant) -> Bool {
    if operations[head].phase.isPausedInBody { return true }
    let cost = cost(of: head)
    if cost == 0 { return true }
    let instant = roundInstant(of: queues[queue].clock, now)
    var conforms = Int64.min
    var waitsForAnother = false
    var impossible = false
    for slot in queues[queue].limiters {
      if limiterStates[slot].blockedRound == greedyRound {
        waitsForAnother = true
      } else if cost > limiterStates[slot].schedule.capacity {
        impossible = true
      } else {
        conforms = max(conforms, limiterStates[slot].schedule.conformingInstant(cost: cost, now: instant))
      }
    }
    if !impossible && !waitsForAnother && conforms <= instant { return true }
    queues[queue].skippedRound = greedyRound
    queues[queue].throttledUntil = impossible || waitsForAnother ? nil : conforms
    if impossible {
      noteImpossibleCost(head)  // it ends when the event settles; it reserves nothing
    } else {
      for slot in queues[queue].limiters { limiterStates[slot].blockedRound = greedyRound }
    }
    return false
  }

  /// `index`, admitted, starts in `queue`: its cost is taken from each of the queue's limiters.
  mutating func takePermits(of index: Int, in queue: Int, now: () -> SchedulerInstant) {
    if operations[index].phase.isPausedInBody { return }
    let cost = cost(of: index)
    guard cost > 0 else { return }
    let instant = roundInstant(of: queues[queue].clock, now)
    for slot in queues[queue].limiters { limiterStates[slot].schedule.consume(cost: cost, at: instant) }
  }

  // MARK: Timers

  /// Arms each arbitrated limited queue's permit timer for what its last greedy round decided:
  /// the instant its head's permits conform, or none.
  mutating func armPermitTimers() {
    for queue in limitedQueues where !queues[queue].gatesPermits {
      let wanted = queues[queue].skippedRound == greedyRound ? queues[queue].throttledUntil : nil
      guard wanted != queues[queue].armedThrottle else { continue }
      disarmPermitTimer(of: queue)
      if let at = wanted {
        queues[queue].armedThrottle = at
        arm(TimerEntry(at: at, queue: queue, generation: queues[queue].generation), on: queues[queue].clock)
      }
    }
  }

  /// Whether `entry`, a permit timer, still applies.
  func isLivePermitTimer(_ entry: TimerEntry) -> Bool {
    let queue = Int(entry.index)
    return queue < queues.count && queues[queue].isLive
      && entry.key == TimerEntry.permitKey(queues[queue].generation)
      && queues[queue].armedThrottle == entry.at
  }

  /// A queue's permit timer fired: its starts are decided again.
  mutating func permitTimerFired(_ entry: TimerEntry) {
    let queue = Int(entry.index)
    queues[queue].armedThrottle = nil
    if queues[queue].gatesPermits { touch(queue) } else { needsArbitration = true }
  }

  // MARK: A queue that gates its own starts

  // A queue whose limiters no other queue lists, and which has no keys, decides its starts with
  // the start rule, as a queue without limiters does, not by arbitration: nothing else competes
  // for its permits, so the order is its own. Its start rule's gate (`throttled`) is set right
  // before each claim: closed while the head of its ready set waits for permits (a timer armed
  // for the instant they conform), open otherwise. A gate that opens for a head takes the head's
  // permits itself: the start rule claims exactly that head next, in the same step (its claim
  // condition is the gate's: starts not stopped, room, a ready head), so a start touches the
  // queue's limiters once.

  /// Sets `queue`'s gate before a claim (see above).
  // Inlined: with no room or nothing ready, and no gate to reopen, nothing is claimed, whatever
  // the gate says: the common case of a queue with a backlog makes no call.
  @inline(__always)
  mutating func gatePermits(_ queue: Int, now: () -> SchedulerInstant) {
    let claims = queues[queue].machine.readyCount > 0 && queues[queue].machine.hasRoom
    if claims || queues[queue].machine.throttled || queues[queue].armedThrottle != nil {
      // The clock is read here: a gate that took the closure would be specialized for each caller.
      let instant: Int64? =
        !claims ? nil : queues[queue].clock == 0 ? now().nanoseconds : manualInstant(of: queue)
      setGate(queue, at: instant)
    }
  }

  /// The current instant of `queue`'s manual clock.
  @inline(never)
  private mutating func manualInstant(of queue: Int) -> Int64 {
    manualNow(of: queues[queue].clock)
  }

  /// `gatePermits`, `instant` being the queue's clock's current instant when it has room and
  /// a ready head (nil otherwise): closed while the head (a ready operation that costs permits)
  /// does not conform now, with a timer armed for when it does; otherwise open, with the head's
  /// permits taken. A head whose cost no limiter can grant ends when the event settles.
  @inline(never)
  private mutating func setGate(_ queue: Int, at instant: Int64?) {
    assert(gatePaid < 0, "Internal inconsistency: permits taken at a gate were not claimed")
    let (closed, until): (Bool, Int64?)
    let sole = queues[queue].soleLimiter
    if let instant, sole >= 0, costs.isEmpty, queues[queue].pausedInReady == 0 {
      // The common case: one limiter, and a head that costs 1 (which any limiter can grant).
      until = limiterStates[sole].schedule.take(cost: 1, at: instant)
      closed = until != nil
      if !closed { gatePaid = queue }
    } else if let instant {
      (closed, until) = gateHead(queue, at: instant)
    } else {
      (closed, until) = (false, nil)
    }
    // Written only when it changes: the write is an exclusive access to every queue's record.
    if queues[queue].machine.throttled != closed { queues[queue].machine.throttled = closed }
    guard until != queues[queue].armedThrottle else { return }
    disarmPermitTimer(of: queue)
    if let at = until {
      queues[queue].armedThrottle = at
      arm(TimerEntry(at: at, queue: queue, generation: queues[queue].generation), on: queues[queue].clock)
    }
  }

  /// `setGate` for a queue with room and a ready head, at `instant`: whether the gate closes,
  /// and until when (nil: no timer, the head is a paused body, costs nothing, or ends).
  private mutating func gateHead(_ queue: Int, at instant: Int64) -> (closed: Bool, until: Int64?) {
    guard let head = queues[queue].machine.peekReady(), operations[head].phase.isReadyToStart else {
      return (false, nil)  // a paused body given a slot again takes no permits
    }
    let cost = cost(of: head)
    guard cost > 0 else { return (false, nil) }
    let (conforms, impossible) = conformance(of: queue, cost: cost, at: instant)
    if impossible {
      noteImpossibleCost(head)
      return (true, nil)
    }
    if conforms > instant { return (true, conforms) }
    for slot in queues[queue].limiters {
      limiterStates[slot].schedule.consumeChecked(cost: cost, at: instant)
    }
    gatePaid = queue
    return (false, nil)
  }

  /// The instant at or after `instant` from which a start costing `cost` (at least 1) conforms
  /// to every limiter of `queue` that can grant it, and whether one never can.
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  func conformance(of queue: Int, cost: Int64, at instant: Int64) -> (instant: Int64, impossible: Bool) {
    var conforms = Int64.min
    var impossible = false
    for slot in queues[queue].limiters {
      if cost > limiterStates[slot].schedule.capacity {
        impossible = true
      } else {
        conforms = max(conforms, limiterStates[slot].schedule.conformingInstant(cost: cost, now: instant))
      }
    }
    return (conforms, impossible)
  }

  /// `index` was just claimed in `queue`, which gates its starts: the gate took its permits
  /// (checked in debug builds).
  @inline(__always)
  mutating func claimedThroughGate(_ index: Int, in queue: Int) {
    assert(
      gatePaid == queue || cost(of: index) == 0,
      "Internal inconsistency: \(operations[index].id) was claimed without its permits")
    gatePaid = -1
  }

  /// `queue` no longer gates its own starts (arbitration decides them, or it has no limiter).
  mutating func stopGatingPermits(_ queue: Int) {
    queues[queue].gatesPermits = false
    queues[queue].machine.throttled = false
    disarmPermitTimer(of: queue)
  }

  /// The head of `queue`'s ready set may have changed (an operation left it, or a priority
  /// changed): the queue decides its starts again.
  mutating func limitedHeadMayHaveChanged(_ queue: Int) {
    if queues[queue].gatesPermits { touch(queue) } else { needsArbitration = true }
  }

  /// The earliest permit timer armed on manual clock `clock`.
  func earliestPermitTimer(on clock: UInt64) -> Int64? {
    var earliest: Int64?
    for queue in limitedQueues where queues[queue].clock == clock {
      if let at = queues[queue].armedThrottle, earliest.map({ at < $0 }) ?? true { earliest = at }
    }
    return earliest
  }
}

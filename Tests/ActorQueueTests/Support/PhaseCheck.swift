import Synchronization

@testable import ActorQueue

/// Each operation's phase against what the rest of the scheduler value keeps in step with it:
/// every queue's ready set, its count of paused bodies in it, its slots and its list of started
/// bodies. Each problem names the queue or record and what disagrees.
enum PhaseCheck {
  /// Records checked so far (the random testers print it).
  static let checkedRecords = Atomic<Int>(0)

  /// `settled`: no event is between its slices (the value tester after a step's bulk work is
  /// done), so an enqueued pending operation must wait for something.
  static func problems(in scheduler: Scheduler, settled: Bool) -> [String] {
    var problems: [String] = []
    var stamps: [Int: Set<ReadyStamp>] = [:]
    var pausedInReady: [Int: Int] = [:]
    var slots: [Int: Int] = [:]
    var started: [Int: Set<Int>] = [:]
    var checked = 0
    for (index, record) in scheduler.operations.enumerated() where record.isLive {
      checked += 1
      let queue = record.queue
      func problem(_ text: String) { problems.append("record \(index) (\(record.phase)): \(text)") }
      switch record.phase {
      case .modifying:
        problem("seen while its payload changes")
      case .ended:
        if queue >= 0 { problem("ended, still in queue \(queue)") }
      case .following:
        if record.leader < 0 { problem("follows no coalesced work") }
        if queue >= 0 { problem("a caller's handle in queue \(queue)") }
      case .pending:
        if settled, queue >= 0, record.unfinishedDependencies == 0, !record.pauseHeld,
          !record.timeMarks.contains(.inBackoff), !scheduler.isParked(index)
        {
          problem("pending in queue \(queue), waiting for nothing")
        }
        // Parked for keys: waits for a key another operation holds or reserves, holding none.
        if scheduler.isParked(index) {
          if settled, !scheduler.isBlocked(index) { problem("parked for keys that are all free") }
          if record.unfinishedDependencies > 0 || record.pauseHeld { problem("parked while not ready") }
          if scheduler.exclusiveState(of: index)?.holds == true { problem("parked holding its keys") }
        }
        // Waiting out a retry's backoff or a condition's "not yet": no slot, no worker, its body
        // kept for the next attempt.
        if record.timeMarks.contains(.inBackoff),
          record.body == nil || (record.retrySlot < 0 && scheduler.time(of: index)?.deferredBy == nil)
        {
          problem("in a backoff without its body, or its retry state or deferring condition")
        }
        if scheduler.time(of: index)?.deferredBy != nil, !scheduler.hasConditions(index) {
          problem("deferred by a condition it does not have")
        }
      case .ready, .executing, .detached, .paused, .resumed:
        if queue < 0 { problem("in no queue") }
        if case .ready = record.phase, record.unfinishedDependencies > 0 {
          problem("ready with \(record.unfinishedDependencies) unfinished dependencies")
        }
      }
      if case .resumed(let body) = record.phase, body.stamp == nil {
        problem("resumed, not in the ready set")
      }
      if record.phase.isPausedInBody, record.phase.worker == nil { problem("a paused body with no worker") }
      guard queue >= 0 else { continue }
      if let stamp = record.phase.stamp, !stamps[queue, default: []].insert(stamp).inserted {
        problem("shares ready stamp \(stamp)")
      }
      if record.phase.isPausedInReady { pausedInReady[queue, default: 0] += 1 }
      if case .executing = record.phase { slots[queue, default: 0] += 1 }
      if record.phase.worker != nil { started[queue, default: []].insert(index) }
    }
    checkedRecords.add(checked, ordering: .relaxed)
    for (queue, record) in scheduler.queues.enumerated() where record.isLive {
      let ready = stamps[queue]?.count ?? 0
      if record.machine.readyCount != ready {
        problems.append(
          "queue \(queue): \(record.machine.readyCount) in the ready set, \(ready) phases with a stamp")
      }
      if record.pausedInReady != pausedInReady[queue, default: 0] {
        problems.append(
          "queue \(queue): pausedInReady \(record.pausedInReady), \(pausedInReady[queue, default: 0]) phases")
      }
      if record.machine.executing != slots[queue, default: 0] {
        problems.append(
          "queue \(queue): \(record.machine.executing) slots held, \(slots[queue, default: 0]) phases executing"
        )
      }
      var listed = Set<Int>()
      var index = record.firstStarted
      while index >= 0, listed.insert(index).inserted { index = scheduler.operations[index].nextStarted }
      if listed != started[queue, default: []] {
        problems.append(
          "queue \(queue): started list \(listed.sorted()), bodies with a worker \(started[queue, default: []].sorted())"
        )
      }
    }
    problems += lockProblems(in: scheduler)
    return problems
  }

  /// Exclusivity: at most one holder per key and domain, and it is a live operation that started
  /// and holds that key; a reserver reserves its own keys; every operation with keys is live and
  /// unfinished; every lock in use is counted by exactly its users.
  private static func lockProblems(in scheduler: Scheduler) -> [String] {
    var problems: [String] = []
    var holders: [Int: Int] = [:]
    var users: [Int: Int] = [:]
    for (index, state) in scheduler.exclusiveStates.enumerated() where state.slot >= 0 {
      let record = scheduler.operations[index]
      guard record.isLive, !record.phase.hasEnded, record.timeMarks.contains(.exclusive) else {
        problems.append("record \(index): exclusive state kept while not live and unfinished")
        continue
      }
      for slot in scheduler.lockSlots(of: index) { users[slot, default: 0] += 1 }
      guard state.holds else { continue }
      switch record.phase {
      case .executing, .paused, .resumed: break
      default: problems.append("record \(index) (\(record.phase)): holds keys without having started")
      }
      for slot in scheduler.lockSlots(of: index) {
        if let other = holders.updateValue(index, forKey: slot) {
          problems.append("records \(other) and \(index) both hold lock \(slot)")
        }
        if scheduler.lockStates[slot].holder != index {
          problems.append(
            "record \(index) holds lock \(slot), whose holder is \(scheduler.lockStates[slot].holder)")
        }
      }
    }
    for (slot, lock) in scheduler.lockStates.enumerated() where lock.users > 0 {
      if scheduler.lockSlot(of: lock.id) != slot { problems.append("lock \(slot) is not where its id says") }
      if users[slot, default: 0] != lock.users {
        problems.append("lock \(slot) counts \(lock.users) users, \(users[slot, default: 0]) states name it")
      }
      if lock.holder >= 0, holders[slot] != lock.holder {
        problems.append("lock \(slot) names holder \(lock.holder), which does not hold it")
      }
      if lock.reservedBy >= 0,
        scheduler.exclusiveState(of: lock.reservedBy) == nil
          || !scheduler.lockSlots(of: lock.reservedBy).contains(slot)
      {
        problems.append("lock \(slot) reserved by record \(lock.reservedBy), which does not want it")
      }
    }
    // A free slot is empty (it is reused as it is), and the key chains reach exactly the locks in use.
    for (slot, lock) in scheduler.lockStates.enumerated() where lock.users == 0 {
      if lock.holder >= 0 || lock.reservedBy >= 0 || !lock.waiters.isEmpty || lock.isDirty
        || lock.nextWithKey >= 0
      {
        problems.append("free lock slot \(slot) is not empty")
      }
    }
    // Reservations are all or none: a reserver reserves every one of its keys.
    for reserver in scheduler.reservers
    where scheduler.lockSlots(of: reserver).contains(where: {
      scheduler.lockStates[$0].reservedBy != reserver
    }) {
      problems.append("record \(reserver) reserves only some of its keys")
    }
    // A suspended queue keeps no key from the others: none of its operations reserves one.
    for reserver in scheduler.reservers
    where scheduler.queues[scheduler.operations[reserver].queue].machine.isSuspended {
      problems.append("record \(reserver) reserves keys while its queue is suspended")
    }
    var chained = 0
    for head in scheduler.lockChains {
      var slot = head
      while slot >= 0 {
        chained += 1
        slot = scheduler.lockStates[slot].nextWithKey
      }
    }
    let inUse = scheduler.lockStates.count { $0.users > 0 }
    if chained != inUse { problems.append("the key chains reach \(chained) locks, \(inUse) are in use") }
    return problems
  }
}

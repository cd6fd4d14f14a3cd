/// Why operations are not running (``ActorQueue/waitReport()``): a read, under the lock.
extension Scheduler {
  /// Every operation of `queue` that has not started or whose body is paused, with what it waits
  /// for, in submission order, then the operations of submitters waiting for space, first served
  /// first. O(operations of the queue + timers of its clock), in one hold of
  /// the lock; copies names, retains nothing of the user's. `now`: the system clock's instant.
  func waitReport(of queue: Int, now: () -> SchedulerInstant) -> [OperationWaitReport] {
    let clock = QueueClock(id: queues[queue].clock)
    let instants = timerInstants(on: clock.id)
    let suspended = queues[queue].machine.isSuspended
    let throttledHead = suspended ? nil : throttledHead(of: queue, now: now)
    var reports: [OperationWaitReport] = []
    var index = queues[queue].first
    while index >= 0 {
      if var reasons = waitReasons(of: index, suspended: suspended) {
        if let (head, until) = throttledHead, head == index {
          if queues[queue].machine.hasRoom { reasons.removeAll { $0 == .slot } }
          reasons.append(.permits(until: QueueDeadline(clock: clock, nanoseconds: until)))
        }
        let marks = operations[index].timeMarks
        if marks.contains(.inBackoff), let at = instants[index]?.retry {
          let instant = QueueDeadline(clock: clock, nanoseconds: at)
          if let name = time(of: index)?.deferredBy {
            reasons.append(.condition(name, until: instant))
          } else {
            reasons.append(.retry(at: instant))
          }
        }
        if marks.contains(.deadlineArmed), let at = instants[index]?.deadline {
          reasons.append(.deadline(QueueDeadline(clock: clock, nanoseconds: at)))
        }
        reports.append(
          OperationWaitReport(
            id: operations[index].id, name: operations[index].name, state: operations[index].phase.state,
            priority: operations[index].priority, waitingFor: reasons))
      }
      index = operations[index].nextInQueue
    }
    for waiting in capacityWaiters(of: queue) {
      reports.append(
        OperationWaitReport(
          id: operations[waiting].id, name: operations[waiting].name, state: operations[waiting].phase.state,
          priority: operations[waiting].priority, waitingFor: [.capacity]))
    }
    return reports
  }

  /// What `index`, an unfinished operation of its queue, waits for besides time; `nil` when it
  /// runs (executing, detached, or a paused body that was cancelled or timed out, running to its
  /// end without a slot).
  private func waitReasons(of index: Int, suspended: Bool) -> [OperationWaitReport.Reason]? {
    var reasons: [OperationWaitReport.Reason] = []
    switch operations[index].phase {
    case .pending:
      // An unfinished dependent holds its dependencies, so each edge's record is its own.
      for edge in operations[index].dependencies where !operations[edge.index].phase.hasEnded {
        reasons.append(.dependency(operations[edge.index].id))
      }
      if reasons.isEmpty, operations[index].unfinishedDependencies > 0 {
        // A dependency ended and its dependents are released in later slices of that call.
        reasons = operations[index].dependencies.map { .dependency(operations[$0.index].id) }
      }
      if operations[index].pauseHeld { reasons.append(.paused) }
      if isParked(index) {
        for (key, holder) in blockingKeys(of: index) { reasons.append(.key(key, heldBy: holder)) }
      }
    case .ready, .resumed:
      // In a suspended queue, the suspension is what it waits for.
      if !suspended { reasons.append(.slot) }
      // Not parked while its queue cannot start it (full, suspended): its taken keys too.
      for (key, holder) in blockingKeys(of: index) { reasons.append(.key(key, heldBy: holder)) }
    case .paused:
      guard !operations[index].cancelRequested, !operations[index].timeMarks.contains(.timedOut) else {
        return nil
      }
      if operations[index].pauseHeld {
        reasons.append(.paused)
      } else if !suspended {
        reasons.append(.slot)
      }
    case .executing, .detached, .following, .ended, .modifying:
      return nil
    }
    if suspended { reasons.append(.suspended) }
    return reasons
  }

  /// The ready head of `queue` (which has limiters) and the instant its permits conform, when that
  /// is later than now; `nil` otherwise.
  private func throttledHead(of queue: Int, now: () -> SchedulerInstant) -> (index: Int, until: Int64)? {
    guard !queues[queue].limiters.isEmpty else { return nil }
    var machine = queues[queue].machine  // a copy: peeking may drop withdrawn entries
    guard let head = machine.peekReady(), operations[head].phase.isReadyToStart else { return nil }
    let cost = cost(of: head)
    guard cost > 0 else { return nil }
    let instant = instant(of: queues[queue].clock, now: now)
    // A head whose cost a limiter never grants is ending: the others say when it could start.
    let conforms = conformance(of: queue, cost: cost, at: instant).instant
    return conforms > instant ? (head, conforms) : nil
  }

  /// The armed deadlines and backoffs on `clock`, by record: one pass over its timers.
  private func timerInstants(on clock: UInt64) -> [Int: (deadline: Int64?, retry: Int64?)] {
    let timers = clock == 0 ? systemTimers : manualClocks[clock]?.timers ?? TimerQueue()
    var instants: [Int: (deadline: Int64?, retry: Int64?)] = [:]
    for entry in timers.runEntries where entry.action == .deadline || entry.action == .retry {
      noteInstant(of: entry, in: &instants)
    }
    for entry in timers.heapEntries where entry.action == .deadline || entry.action == .retry {
      noteInstant(of: entry, in: &instants)
    }
    return instants
  }

  private func noteInstant(of entry: TimerEntry, in instants: inout [Int: (deadline: Int64?, retry: Int64?)])
  {
    guard isLive(entry) else { return }
    let index = Int(entry.index)
    if entry.action == .deadline {
      instants[index, default: (nil, nil)].deadline = entry.at
    } else {
      instants[index, default: (nil, nil)].retry = entry.at
    }
  }
}

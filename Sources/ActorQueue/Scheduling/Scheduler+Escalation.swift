/// Priority escalation through dependencies (beyond.md §1.10).
///
/// A task that awaits an operation (`value`, `result`, `waitUntilFinished()`) raises the
/// operation's `escalation` to its own priority, and, with a work list, that of every unfinished
/// operation it waits for: its dependencies, on any queue, transitively, and for a caller's handle
/// to coalesced work, the work. Escalation only grows. An operation whose body runs has its
/// worker's task escalated (an effect) and that worker retires after it, so the raised priority
/// does not carry into the next operation; one that starts later escalates the worker that claims
/// it. A queue whose policy is ``EscalationPolicy/taskPriorityAndOrder`` also raises an escalated
/// waiting operation's ``OperationPriority`` to `.veryHigh`, so it starts before the others
/// (not coalesced work, whose priority is its callers' highest).
extension Scheduler {
  /// The priority a queue's worker tasks run at when it names none (`Task.detached` without one).
  static let unspecifiedTaskPriority = TaskPriority.medium.rawValue

  /// Raises `index` and the unfinished operations it waits for to `priority`
  /// (`TaskPriority.rawValue`). O(operations raised): each is raised at most once per priority
  /// level, so repeated awaits cost nothing more; a long chain is raised in slices (at most
  /// ``sliceLimit`` operations per hold, the rest handed to the caller, as a long cancel is). An
  /// operation moved ahead may be its queue's new head: the event then decides starts, as a
  /// priority change does (`changePriority`).
  mutating func escalate(
    _ index: Int, to priority: UInt8, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    guard operations[index].escalation < priority, !operations[index].phase.hasEnded else { return }
    var work = [OperationReference(index: index, id: operations[index].id)]
    spreadEscalation(to: priority, &work, &effects)
    if !work.isEmpty {
      bulk.escalations.append(BulkWork.Escalation(priority: priority, work: work))
      markBulk()
    }
    if needsArbitration || firstTouched >= 0 || hasBulk {
      settle(now: now, &effects)
    } else {
      endSlice(&effects)  // the units counted: the next event's slice starts from none
    }
  }

  /// Raises the operations of `work` to `priority`, and what they wait for, transitively, until
  /// the slice's limit (one unit per operation looked at); what is left stays in `work`.
  mutating func spreadEscalation(
    to priority: UInt8, _ work: inout [OperationReference], _ effects: inout Effects
  ) {
    while sliceWork < sliceLimit, let reference = work.popLast() {
      sliceWork += 1
      let next = reference.index
      guard operations[next].isLive, operations[next].id == reference.id,
        operations[next].escalation < priority,
        !operations[next].phase.hasEnded
      else { continue }
      operations[next].escalation = priority
      let queue = operations[next].queue
      let leader = operations[next].extrasBox != nil ? operations[next].leader : -1
      if let worker = operations[next].phase.worker, queue >= 0, priority > basePriority(of: queue) {
        escalateWorker(of: next, worker, in: queue, &effects)
      } else if operations[next].priority < .veryHigh, leader >= 0 || !isSharedWork(next),
        mayMoveAhead(leader >= 0 ? leader : next, at: priority)
      {
        // A caller's handle moves its shared work ahead (its priority is its callers' highest).
        setPriority(.veryHigh, of: next)
      }
      // An unfinished operation holds its dependencies and its work: their records are theirs.
      for edge in operations[next].dependencies {
        work.append(OperationReference(index: edge.index, id: operations[edge.index].id))
      }
      if leader >= 0 { work.append(OperationReference(index: leader, id: operations[leader].id)) }
    }
  }

  /// Whether `index`, escalated to `priority`, moves ahead in its queue: the queue's policy says
  /// so, it has not started, and `priority` is above the queue's.
  private func mayMoveAhead(_ index: Int, at priority: UInt8) -> Bool {
    let queue = operations[index].queue
    guard queue >= 0, queues[queue].reordersEscalated else { return false }
    return operations[index].phase.hasNotStarted && priority > basePriority(of: queue)
  }

  /// Coalesced work with callers' handles: its priority is theirs, raised through them.
  private func isSharedWork(_ index: Int) -> Bool {
    operations[index].extrasBox != nil && operations[index].leader < 0
      && !(operations[index].extras?.followers.isEmpty ?? true)
  }

  /// Escalates the task of `worker`, which runs `index`'s body, to the operation's escalation if
  /// that is above its queue's priority; the worker retires after the operation.
  mutating func escalateWorker(of index: Int, _ worker: Worker, in queue: Int, _ effects: inout Effects) {
    let priority = operations[index].escalation
    guard priority > basePriority(of: queue) else { return }
    worker.markEscalated(to: priority)
    effects.complete { worker.escalate(to: priority) }
  }

  /// The priority of `queue`'s worker tasks.
  func basePriority(of queue: Int) -> UInt8 {
    queues[queue].taskPriority ?? Self.unspecifiedTaskPriority
  }

  /// The priority `index`'s body runs at, or will: its queue's, raised by its escalation; `nil`
  /// for one in no queue that was never escalated.
  func effectiveTaskPriority(of index: Int) -> UInt8? {
    // A caller's handle to coalesced work reads as the work.
    if operations[index].extrasBox != nil, operations[index].leader >= 0, !operations[index].phase.hasEnded {
      return effectiveTaskPriority(of: operations[index].leader)
    }
    let queue = operations[index].queue
    let base = queue >= 0 ? basePriority(of: queue) : 0
    let priority = max(base, operations[index].escalation)
    return priority == 0 ? nil : priority
  }
}

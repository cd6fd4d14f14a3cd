/// Readiness conditions: evaluated by the worker between the claim and the body.
///
/// A claim of an operation with conditions keeps its body in its record and sends the worker to
/// evaluate them (``WorkerAction/evaluate(operation:id:conditions:handle:)``), outside the lock;
/// the answer comes back as ``conditionsAnswered(_:id:worker:queue:answer:now:_:)``, which hands
/// the body out, ends the operation, or returns it to `.pending` (slot-free re-entry, as a
/// retry's). Conditions live in the operation's time state (`traits.conditions`) and are let go
/// of, after unlocking, when it ends.
extension Scheduler {
  /// Whether `index` was given conditions.
  func hasConditions(_ index: Int) -> Bool {
    guard operations[index].timeSlot >= 0 else { return false }
    return !timeStates[Int(operations[index].timeSlot)].traits.conditions.isEmpty
  }

  /// `index`, which has a time state, was just claimed by `worker` with `body`: its body starts
  /// (``bodyStarts(_:_:on:)``), or, with conditions, stays in the record while the worker
  /// evaluates them. Out of line: operations without traits never come here.
  @inline(never)
  mutating func timedStart(_ index: Int, _ body: OperationBody, on worker: Worker) -> WorkerAction {
    let slot = Int(operations[index].timeSlot)
    let id = operations[index].id
    guard !timeStates[slot].traits.conditions.isEmpty else { return bodyStarts(index, body, on: worker) }
    timeStates[slot].deferredBy = nil
    operations[index].body = body
    // Its queue let go of it (held by `pause()` once its queue was released): its handle is the
    // user's, if it still exists; `nil` ends it `.cancelled`, as nobody can see it any more.
    let handle = operations[index].enqueuedHandle ?? timeStates[slot].conditionsHandle?.object
    return .evaluate(operation: index, id: id, conditions: timeStates[slot].traits.conditions, handle: handle)
  }

  /// The body of `index`, with a time state, is handed to `worker`: its attempt is counted, and
  /// an execution timeout is armed when the worker reports the body's first line
  /// (``WorkerAction/runTimed(operation:id:body:)``). A condition's evaluation is neither.
  private mutating func bodyStarts(_ index: Int, _ body: OperationBody, on worker: Worker) -> WorkerAction {
    let slot = Int(operations[index].timeSlot)
    if operations[index].retrySlot >= 0 { startAttempt(index, body, on: worker) }
    let id = operations[index].id
    guard timeStates[slot].traits.timeout != nil else { return .run(operation: index, id: id, body: body) }
    return .runTimed(operation: index, id: id, body: body)
  }

  /// The body of `index`, handed to `worker` with an execution timeout, runs its first line now:
  /// the timeout is armed from this instant (when the event settles), also if its deadline
  /// passed meanwhile: what is armed does not depend on when the task got to run.
  mutating func bodyStarting(
    _ index: Int, id: OperationID, worker: Worker, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    guard operations[index].id == id, case .executing(.worker(let runner)) = operations[index].phase,
      runner === worker
    else { return }
    noteTimedStart(index)
    settle(now: now, &effects)
  }

  /// `worker` evaluated the conditions of `index` (`answer`: the first that was not satisfied,
  /// `nil` if all were). Cancelled, or its deadline passed, meanwhile: it ends `.cancelled`, or
  /// `.failed` with the deadline's error. Satisfied: the worker runs the body. Skip: it ends
  /// `.cancelled`; failed: `.failed` with a ``ConditionFailedError``. Not yet: slot-free re-entry
  /// after the delay, or `.cancelled` in a queue released while suspended. None of these is
  /// retried, nor counts as an attempt: the body never ran.
  mutating func conditionsAnswered(
    _ index: Int, id: OperationID, worker: Worker, queue: Int, answer: ConditionAnswer?,
    now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction {
    guard operations[index].id == id, case .executing(.worker(let runner)) = operations[index].phase,
      runner === worker
    else {
      preconditionFailure(
        "Internal inconsistency: a worker evaluated conditions of an operation it did not run")
    }
    let stopped = operations[index].cancelRequested || operations[index].timeMarks.contains(.timedOut)
    // No body starts: `attemptCount` counts body starts, not claims.
    if stopped || answer != nil { operations[index].startOrder = 0 }
    if stopped {
      return endAttempt(
        index, worker: worker, queue: queue, outcome: .cancelled, yieldAfter: false, now: now, &effects)
    }
    guard let answer else {
      // A retried operation keeps its body for the next attempt.
      let body = operations[index].retrySlot >= 0 ? operations[index].body : operations[index].body.take()
      guard let body else {
        preconditionFailure("Internal inconsistency: \(id) lost its body while its conditions were evaluated")
      }
      let action = bodyStarts(index, body, on: worker)
      settle(now: now, &effects)
      return action
    }
    let outcome: OutcomeBox
    switch answer.result.kind {
    case .satisfied:
      preconditionFailure("Internal inconsistency: a satisfied condition decided")
    case .notYet(_, let delay) where !isUnreachable(queue: queue):
      return deferByCondition(
        index, worker: worker, queue: queue, name: answer.name, delay: delay, now: now, &effects)
    case .notYet:
      // Its queue was released while suspended: it would never get a slot again. It ends as the
      // operations that waited there did.
      outcome = .cancelled
    case .skip:
      outcome = .cancelled
    case .failed(let error):
      outcome = OutcomeBox(.failure(ConditionFailedError(conditionName: answer.name, underlyingError: error)))
    }
    return endAttempt(
      index, worker: worker, queue: queue, outcome: outcome, yieldAfter: false, now: now, &effects)
  }

  /// A condition of `index` named `name` answered "not yet": it returns to `.pending`, holding
  /// no slot, key or task, and is ready again after `delay` nanoseconds of its queue's clock (its
  /// deadline, if any, still applies meanwhile).
  private mutating func deferByCondition(
    _ index: Int, worker: Worker, queue: Int, name: String, delay: Int64, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) -> WorkerAction {
    let needsInstant = delay > 0 || !queues[queue].subscribers.isEmpty
    let at = needsInstant ? SaturatingTime.adding(instant(of: queues[queue].clock, now: now), delay) : 0
    timeStates[Int(operations[index].timeSlot)].deferredBy = name
    return returnToPending(
      index, worker: worker, queue: queue, delay: delay, at: at,
      detail: { .conditionNotYet(name, until: $0) }, now: now, &effects)
  }

  // MARK: Produced dependencies

  /// The cycle a produced dependency of `index` would close, if one does: checked before a
  /// batch is added, so that a refused batch changes nothing.
  func cycleOfProduced(_ index: Int) -> [Int]? {
    guard operations[index].timeSlot >= 0 else { return nil }
    return cycleOfProduced(index, timeStates[Int(operations[index].timeSlot)].produced)
  }

  /// `index`, being added to a queue, waits for its conditions' produced dependencies
  /// (``enqueueProduced(of:into:now:_:)`` adds them after it). Returns the cycle one would close
  /// instead, linking nothing and letting go of them (the caller ends `index`).
  @inline(never)
  mutating func linkProduced(_ index: Int, _ effects: inout Effects) -> [Int]? {
    let slot = Int(operations[index].timeSlot)
    if let cycle = cycleOfProduced(index, timeStates[slot].produced) {
      effects.garbage.releaseLater(timeStates[slot].produced)
      timeStates[slot].produced = []
      return cycle
    }
    for dependency in timeStates[slot].produced {
      link(dependency, to: index, part: .explicit(requiresSuccess: false), &effects)
      if let position = operations[index].dependencies.lastIndex(where: { $0.index == dependency.recordIndex }
      ) {
        operations[index].dependencies[position].isProduced = true
      }
    }
    return nil
  }

  /// `index` ended without running: the unfinished dependencies its conditions produced, which
  /// no other unfinished operation depends on (read before `index`'s dependents are released,
  /// so the answer does not depend on how its end is sliced), are cancelled: their reason is
  /// gone (a login for a sync that will not run). O(its dependencies and theirs).
  @inline(never)
  mutating func cancelOrphanedProduced(of index: Int, _ effects: inout Effects) {
    var orphaned: [Int] = []
    for edge in operations[index].dependencies where edge.isProduced {
      let produced = edge.index
      guard let handle = edge.handle, handle.recordIndex == produced, !operations[produced].phase.hasEnded
      else { continue }
      let waitedFor = operations[produced].dependents.contains { entry in
        entry.index != index && operations[entry.index].id == entry.id
          && !operations[entry.index].phase.hasEnded
      }
      if !waitedFor { orphaned.append(produced) }
    }
    for produced in orphaned where !operations[produced].phase.hasEnded { cancelOne(produced, &effects) }
  }

  /// Adds to `queue` the produced dependencies of `index`, just added there, that are in no
  /// queue yet: after it, so that their submission order and their first events follow its own.
  @inline(never)
  mutating func enqueueProduced(
    of index: Int, into queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    let slot = Int(operations[index].timeSlot)
    let produced = timeStates[slot].produced
    timeStates[slot].produced = []
    effects.garbage.releaseLater(produced)
    for dependency in produced where !operations[dependency.recordIndex].wasEnqueued {
      enqueue(dependency, into: queue, now: now, &effects)
    }
  }

  private func cycleOfProduced(_ index: Int, _ produced: [Handle]) -> [Int]? {
    for dependency in produced {
      if let cycle = cycle(closedBy: dependency.recordIndex, index) { return cycle }
    }
    return nil
  }

  /// What `index`'s conditions hold of the user's, let go of after unlocking (its end, or its
  /// handle's release before it was added).
  mutating func releaseConditions(of index: Int, into garbage: inout Garbage) {
    let slot = Int(operations[index].timeSlot)
    guard !timeStates[slot].traits.conditions.isEmpty || !timeStates[slot].produced.isEmpty else { return }
    garbage.releaseLater((timeStates[slot].traits.conditions, timeStates[slot].produced))
    timeStates[slot].traits.conditions = []
    timeStates[slot].produced = []
  }
}

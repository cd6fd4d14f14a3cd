/// What a worker does after a step.
enum WorkerAction: Sendable {
  /// Run this operation's body, then report ``Scheduler/operationEnded(_:worker:queue:outcome:yieldAfter:now:)``.
  case run(operation: Int, id: OperationID, body: OperationBody)
  /// ``run(operation:id:body:)`` for a body with an execution timeout: report
  /// ``Scheduler/bodyStarting(_:id:worker:now:_:)`` first, so that the timeout counts from the
  /// body's first line, not from the slot's grant.
  case runTimed(operation: Int, id: OperationID, body: OperationBody)
  /// Start the work of an externally completed operation (it keeps its slot until the work
  /// reports its end), then claim the next (``Scheduler/claimNext(_:queue:now:)``).
  case start(operation: Int, id: OperationID, work: any ExternalWork)
  /// Evaluate the conditions of an operation just given its slot (user code: outside the lock),
  /// then report ``Scheduler/conditionsAnswered(_:id:worker:queue:answer:now:_:)``; its body
  /// stays in its record meanwhile.
  /// `handle` is `nil` when nothing holds the operation any more: it ends `.cancelled` unevaluated.
  case evaluate(
    operation: Int, id: OperationID, conditions: [any OperationCondition], handle: AnyQueueOperation?)
  /// Ask the retry policy of an operation whose attempt failed (user code: outside the lock),
  /// then report ``Scheduler/retryDecided(_:delay:worker:queue:now:_:)``.
  case decideRetry(PendingRetry)
  /// Give the thread away once, then claim the next (``Scheduler/workerAsksForWork(_:queue:now:_:)``).
  case yieldThenContinue
  /// The queue went idle at this instant: poll for work, yielding in between, for at most
  /// `LingerPolicy.window`, then report ``Scheduler/lingerEnded(_:queue:since:now:)``.
  case linger(since: SchedulerInstant)
  /// End the worker task.
  case retire
}

/// The workers' events.
extension Scheduler {
  /// A worker task began (or came back from a yield): it claims the next operation, lingers, or
  /// retires.
  mutating func workerAsksForWork(
    _ worker: Worker, queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction {
    let action = claimOrIdle(worker, queue: queue, now: now, &effects)
    settle(now: now, &effects)
    return action
  }

  /// The body of `index`, run by `worker`, ended with `outcome`. The worker claims the next
  /// operation in the same critical section (or yields first, when `yieldAfter`), unless its
  /// task was cancelled: then it retires and a replacement is asked for if work waits.
  mutating func operationEnded(
    _ index: Int, worker: Worker, queue: Int, outcome: OutcomeBox, yieldAfter: Bool,
    now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction {
    if operations[index].retrySlot >= 0,
      let action = attemptEnded(index, worker: worker, queue: queue, outcome: outcome, now: now, &effects)
    {
      return action
    }
    return endAttempt(
      index, worker: worker, queue: queue, outcome: outcome, yieldAfter: yieldAfter, now: now, &effects)
  }

  /// ``operationEnded(_:worker:queue:outcome:yieldAfter:now:_:)`` once no retry follows: the
  /// operation ends with `outcome`.
  @inline(__always)
  mutating func endAttempt(
    _ index: Int, worker: Worker, queue: Int, outcome: OutcomeBox, yieldAfter: Bool,
    now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction {
    switch operations[index].phase {
    case .executing(.worker(let runner)) where runner === worker:
      queues[queue].machine.operationEnded()
    case .paused(let body) where body.worker === worker:
      // Cancelled while paused: it ran to its end holding no slot.
      queues[queue].machine.slotlessOperationEnded()
    default:
      preconditionFailure("Internal inconsistency: a worker ended an operation it did not run")
    }
    let terminal = record(outcome, of: index)
    let taskCancelled = unlinkStarted(index, in: queue, worker: worker)
    worker.setPauseRequested(false, in: pauses)
    if queues[queue].hasExcessRequests { touch(queue) }  // a freed slot may withdraw a request
    terminate(index, as: terminal, error: nil, &effects)
    // Dependents still to release in later slices may be this queue's: it claims nothing before.
    if hasBulk { holdForBulk(queue) }
    let action: WorkerAction
    if taskCancelled {
      queues[queue].machine.workerRetired()
      touch(queue)
      freeQueueIfDone(queue, &effects)
      action = .retire
    } else if yieldAfter {
      action = .yieldThenContinue
    } else {
      action = claimOrIdle(worker, queue: queue, now: now, &effects)
    }
    settle(now: now, &effects)
    return action
  }

  /// A worker that started external work claims the next ready operation, if a slot is free,
  /// or retires.
  mutating func claimNext(
    _ worker: Worker, queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction {
    let action =
      queues[queue].isArbitrated
      ? claimByArbitration(worker, queue: queue, countedStarting: false, now: now, &effects)
      : claimNextGated(worker, queue: queue, now: now, &effects)
    settle(now: now, &effects)
    return action
  }

  private mutating func claimNextGated(
    _ worker: Worker, queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction {
    if queues[queue].gatesPermits { gatePermits(queue, now: now) }
    return apply(queues[queue].machine.claimNext(), worker: worker, queue: queue, now: now, &effects)
  }

  /// The external work of `index` reported its end (from any thread; a second report, or one
  /// for an operation whose work is not running, is ignored). Frees its slot, unless it ran
  /// detached.
  mutating func externalEnded(
    _ index: Int, id: OperationID, outcome: OutcomeBox, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) {
    guard index < operations.count, operations[index].isLive, operations[index].id == id,
      operations[index].phase.runsExternally
    else { return }
    let queue = operations[index].queue
    if case .executing(.external) = operations[index].phase {
      queues[queue].machine.externalOperationEnded()
      touch(queue)
    }
    let terminal = record(outcome, of: index)
    terminate(index, as: terminal, error: nil, &effects)
    settle(now: now, &effects)
  }

  /// A lingering worker was woken (an operation was made ready) or its time is up: it claims,
  /// lingers on (the operation that woke it is gone already), or retires.
  mutating func lingerEnded(
    _ worker: Worker, queue: Int, since start: SchedulerInstant, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) -> WorkerAction {
    let spell = now().nanoseconds &- start.nanoseconds
    lingeringWorkers -= 1
    if queues[queue].isArbitrated {
      // Keys arrived while it lingered: arbitration decides this queue's starts now.
      queues[queue].machine.stopLingering()
      let action = claimByArbitration(worker, queue: queue, countedStarting: true, now: now, &effects)
      settle(now: now, &effects)
      return action
    }
    if queues[queue].gatesPermits { gatePermits(queue, now: now) }
    let step = queues[queue].machine.lingerEnded()
    let action: WorkerAction
    if step.run != nil {
      queues[queue].linger.observe(idleSpellNanoseconds: spell)
      action = apply(step, worker: worker, queue: queue, now: now, &effects)
    } else if spell < LingerPolicy.windowNanoseconds, queues[queue].machine.lingerIfIdle() {
      lingeringWorkers += 1
      action = .linger(since: start)
    } else {
      if spell >= LingerPolicy.windowNanoseconds {
        queues[queue].linger.observe(idleSpellNanoseconds: spell)
      } else if queues[queue].machine.executing == 0 {
        queues[queue].linger.wentIdle(at: start)
      }
      action = apply(step, worker: worker, queue: queue, now: now, &effects)
    }
    settle(now: now, &effects)
    return action
  }

}

/// The lifecycle transitions. Each runs under `Engine.lock` and records its effects.
extension Engine {
  /// Moves `operation` to a non-terminal `newState` and tells its subscribers.
  static func transition(
    _ operation: AnyQueueOperation, to newState: OperationState,
    _ state: inout State, _ effects: inout Effects
  ) {
    operation._state = newState
    if !operation.subscribers.isEmpty {
      operation.subscribers.removeAll { !$0.push(newState, effects: &effects) }
    }
    if let queue = operation.queue, !queue.subscribers.isEmpty {
      queue.emit(.operation(id: operation.id, name: operation.name, state: newState), &state, &effects)
    }
  }

  // MARK: Submission

  /// Adds `operations` to `queue`: all of them, or none.
  static func enqueue(
    _ operations: [AnyQueueOperation], into queue: QueueCore,
    _ state: inout State, _ effects: inout Effects
  ) throws(ActorQueueError) {
    var seen = Set<ObjectIdentifier>(minimumCapacity: operations.count)
    for operation in operations {
      guard !operation.wasEnqueued, seen.insert(ObjectIdentifier(operation)).inserted else {
        throw .alreadyEnqueued
      }
    }
    // Waiting for the current barrier must not close a cycle (a prepared operation that
    // something before the barrier waits for). The checks are independent of each other: the
    // barrier edges added below lead away from the barrier, never back to it.
    if let barrier = queue.activeBarrier {
      for operation in operations where createsCycle(barrier, operation) { throw .dependencyCycle }
    }
    for operation in operations {
      enqueue(operation, into: queue, &state, &effects)
    }
  }

  /// Adds one operation that is known not to be enqueued yet.
  static func enqueue(
    _ operation: AnyQueueOperation, into queue: QueueCore,
    _ state: inout State, _ effects: inout Effects
  ) {
    operation.wasEnqueued = true
    // An operation that ended before it was added (cancelled, or an input it required failed)
    // has nothing left to do; it is accepted and stays as it is.
    guard !operation._state.isTerminal else { return }
    state.nextSubmission += 1
    operation.order = state.nextSubmission
    operation.queue = queue
    operation.slot = queue.append(operation)
    if let barrier = queue.activeBarrier {
      do {
        try addDependency(barrier, to: operation, kind: .completion, &state, &effects)
      } catch {
        preconditionFailure("Internal inconsistency: waiting for a barrier failed after the check: \(error)")
      }
    }
    if operation.unfinishedDependencies == 0 {
      makeReady(operation, in: queue, &state, &effects)
    } else {
      queue.emit(.operation(id: operation.id, name: operation.name, state: .pending), &state, &effects)
    }
  }

  /// A pending, enqueued operation whose dependencies have all ended may start.
  static func makeReady(
    _ operation: AnyQueueOperation, in queue: QueueCore,
    _ state: inout State, _ effects: inout Effects
  ) {
    transition(operation, to: .ready, &state, &effects)
    let (stamp, spawn, wakeLingerer) = queue.machine.makeReady(
      operation, order: operation.order, priority: operation.priority)
    operation.readyStamp = stamp
    if wakeLingerer { queue.lingererWake.store(true, ordering: .releasing) }
    guard spawn else { return }
    if queue.machine.executing == 0 {
      // An idle queue: the new worker starts with this operation claimed (latency).
      queue.linger.workArrived(at: .now)
      spawnClaimingWorker(for: queue, &state, &effects)
    } else {
      // A busy one: the new worker claims when it runs, and until then counts as the one
      // worker starting, so a burst of additions starts one task, not one per operation.
      effects.spawnWorker(for: queue)
    }
  }

  // MARK: The end

  /// Ends `operation` in `terminal` state and releases everything that waited for it: its
  /// waiters, completion handlers, subscribers, queue slot record and dependents. Dependents
  /// that required it to succeed end too, transitively (a work list, not recursion, so a long
  /// chain cannot exhaust the stack). `error`: the operation ends without its body having
  /// returned (cancelled while waiting, or a required input did not finish); `nil` when the
  /// body ran and its outcome is stored already.
  static func terminate(
    _ operation: AnyQueueOperation, as terminal: OperationState, error: (any Error)? = nil,
    _ state: inout State, _ effects: inout Effects
  ) {
    var work: [(AnyQueueOperation, OperationState, any Error)] = []
    endOne(operation, as: terminal, error: error, into: &work, &state, &effects)
    while let (dependent, terminal, error) = work.popLast() {
      endOne(dependent, as: terminal, error: error, into: &work, &state, &effects)
    }
  }

  private static func endOne(
    _ operation: AnyQueueOperation, as terminal: OperationState, error: (any Error)?,
    into work: inout [(AnyQueueOperation, OperationState, any Error)],
    _ state: inout State, _ effects: inout Effects
  ) {
    precondition(terminal.isTerminal, "Internal inconsistency: ending in non-terminal state \(terminal)")
    precondition(!operation._state.isTerminal, "Internal inconsistency: \(operation.id) ended twice")
    if let stamp = operation.readyStamp, let queue = operation.queue {
      queue.machine.withdraw(stamp: stamp, priority: operation.priority)
      operation.readyStamp = nil
    }
    if let error {
      operation.outcome = .failure(error)
      operation.body = nil
      operation.externalStart = nil
      operation.externalCancel = nil
    }

    // Events: the subscriber streams end after the terminal state.
    operation._state = terminal
    for subscriber in operation.subscribers where subscriber.push(terminal, effects: &effects) {
      subscriber.finish(effects: &effects)
    }
    operation.subscribers = []
    if let queue = operation.queue {
      if !queue.subscribers.isEmpty {
        queue.emit(.operation(id: operation.id, name: operation.name, state: terminal), &state, &effects)
      }
      operation.queue = nil
      if queue.remove(slot: operation.slot), !queue.allFinishedWaiters.isEmpty {
        effects.wake(queue.allFinishedWaiters)
        queue.allFinishedWaiters = []
      }
    }

    if let completion = operation.takeCompletion() { effects.complete(completion) }
    if !operation.waiters.isEmpty {
      effects.wake(operation.waiters)
      operation.waiters = []
    }

    // Dependents: each counts this dependency as ended.
    let dependents = operation.dependentEdges
    operation.dependentEdges = []
    for dependent in dependents {
      guard let dependentOp = dependent.operation, !dependentOp._state.isTerminal else { continue }
      precondition(
        dependentOp._state == .pending && dependentOp.unfinishedDependencies > 0,
        "Internal inconsistency: \(dependentOp.id) was \(dependentOp._state) with an unfinished dependency")
      dependentOp.unfinishedDependencies -= 1
      if dependent.requiresSuccess && terminal != .finished {
        if terminal == .cancelled {
          dependentOp.cancelRequested = true
          work.append((dependentOp, .cancelled, Engine.cancellation))
        } else {
          let failure = DependencyFailedError(
            input: operation, failure: operation.failure ?? Engine.cancellation)
          work.append((dependentOp, .failed, failure))
        }
      } else if dependentOp.unfinishedDependencies == 0, let queue = dependentOp.queue {
        makeReady(dependentOp, in: queue, &state, &effects)
      }
    }
  }

  // MARK: Cancellation

  /// Cancels `operation`: a waiting one ends at once; an executing one has its task cancelled.
  static func cancel(_ operation: AnyQueueOperation, _ state: inout State, _ effects: inout Effects) {
    guard !operation._state.isTerminal else { return }
    operation.cancelRequested = true
    switch operation._state {
    case .executing, .paused:
      guard let worker = operation.worker else {
        guard let externalCancel = operation.externalCancel else {
          preconditionFailure("Internal inconsistency: \(operation.id) executes without a worker")
        }
        effects.complete(externalCancel)
        return
      }
      if !worker.cancelRequested {
        worker.cancelRequested = true
        effects.cancel(worker)
      }
    case .pending, .ready:
      terminate(operation, as: .cancelled, error: Engine.cancellation, &state, &effects)
    case .finished, .failed, .cancelled:
      preconditionFailure("Internal inconsistency: terminal states were handled above")
    }
  }

  /// Cancels every unfinished operation of `queue`.
  static func cancelAll(in queue: QueueCore, _ state: inout State, _ effects: inout Effects) {
    let operations = queue.unfinished
    // Every ready operation is about to end: withdrawing them all at once keeps cancelling
    // n waiting operations O(n).
    queue.machine.withdrawAll()
    for operation in operations { operation.readyStamp = nil }
    for operation in operations { cancel(operation, &state, &effects) }
  }

  // MARK: Priority

  /// Changes the priority; a ready operation is re-sorted at once.
  static func setPriority(
    _ priority: OperationPriority, of operation: AnyQueueOperation,
    _ state: inout State, _ effects: inout Effects
  ) {
    let old = operation.priority
    guard old != priority else { return }
    operation.priority = priority
    if let stamp = operation.readyStamp, let queue = operation.queue {
      operation.readyStamp = queue.machine.reprioritize(
        operation, stamp: stamp, order: operation.order, from: old, to: priority)
    }
  }

  // MARK: Queue settings

  static func setLimit(_ limit: Int, of queue: QueueCore, _ state: inout State, _ effects: inout Effects) {
    guard limit != queue.machine.limit else { return }
    let spawn = queue.machine.setLimit(limit)
    queue.emit(.limitChanged(limit), &state, &effects)
    if spawn { effects.spawnWorker(for: queue) }
  }

  static func setSuspended(
    _ suspended: Bool, of queue: QueueCore, _ state: inout State, _ effects: inout Effects
  ) {
    guard suspended != queue.machine.isSuspended else { return }
    let spawn = queue.machine.setSuspended(suspended)
    queue.emit(suspended ? .suspended : .resumed, &state, &effects)
    if spawn { effects.spawnWorker(for: queue) }
  }
}

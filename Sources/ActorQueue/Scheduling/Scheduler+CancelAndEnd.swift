/// The error of every operation cancelled before its body returned: one boxed instance, so
/// cancelling 100,000 waiting operations allocates no error box per operation.
let cancellationError: any Error = CancellationError()

/// The end of an operation, and cancellation.
extension Scheduler {
  // MARK: Cancellation

  /// `cancel()`: a waiting operation ends at once; an executing one has its task cancelled.
  mutating func cancel(_ index: Int, now: () -> SchedulerInstant, _ effects: inout Effects) {
    cancelOne(index, &effects)
    settle(now: now, &effects)
  }

  /// `cancelAllOperations()`: cancels every unfinished operation of `queue` (those added before
  /// the call), in slices of the lock (see `BulkWork`). The queue starts nothing until every one
  /// of them is cancelled, so an operation that a cancellation makes ready (its dependency was
  /// cancelled) is cancelled too before anything could claim it. O(n) in all, O(1) per hold.
  mutating func cancelAll(in queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects) {
    beginWalk(.cancel, in: queue, &effects)
    settle(now: now, &effects)
  }

  /// ``cancel(_:now:_:)`` without deciding starts: the caller's event settles.
  mutating func cancelOne(_ index: Int, _ effects: inout Effects) {
    if operations[index].extrasBox != nil, operations[index].leader >= 0 {
      if case .following = operations[index].phase { cancelFollower(index, &effects) }
      return
    }
    switch operations[index].phase {
    case .pending, .ready:
      operations[index].cancelRequested = true
      cancelWaiting(index, &effects)
    case .executing(.worker(let worker)):
      operations[index].cancelRequested = true
      cancelTask(of: index, worker, &effects)
    case .paused(let body), .resumed(let body):
      // Its tasks at a checkpoint throw; it runs on to its end holding no slot.
      operations[index].cancelRequested = true
      cancelPaused(index, &effects)
      cancelTask(of: index, body.worker, &effects)
    case .executing(.external):
      operations[index].cancelRequested = true
      guard let external = operations[index].external else {
        preconditionFailure("Internal inconsistency: \(operations[index].id) executes with no work")
      }
      effects.runExternalCancel(external)
    case .detached, .following, .ended:
      return
    case .modifying:
      preconditionFailure("Internal inconsistency: \(operations[index].id) cancelled while its phase changes")
    }
  }

  /// Cancels the task of the worker that runs `index`'s body, once.
  mutating func cancelTask(of index: Int, _ worker: Worker, _ effects: inout Effects) {
    guard !operations[index].taskCancelled else { return }
    operations[index].taskCancelled = true
    effects.cancel(worker)
  }

  /// Cancels an operation that has not started: it ends `.cancelled` at once, or, if its work
  /// starts when cancelled (a legacy operation), that work is started outside the slot
  /// accounting and the operation ends when it reports its end.
  mutating func cancelWaiting(_ index: Int, _ effects: inout Effects) {
    operations[index].cancelRequested = true
    if startsWhenCancelled(index), operations[index].queue >= 0 {
      detach(index, &effects)
    } else {
      terminate(index, as: .cancelled, error: cancellationError, &effects)
    }
  }

  /// Cancels the external work of a cancelled waiting operation and starts it, holding no slot
  /// (after unlocking: the cancellation first, then the start, as Foundation starts a cancelled
  /// operation so that it can see `isCancelled` and finish).
  private mutating func detach(_ index: Int, _ effects: inout Effects) {
    guard let external = operations[index].external, operations[index].queue >= 0 else {
      preconditionFailure("Internal inconsistency: detaching an operation with no external work")
    }
    transition(index, to: .detached, &effects)
    queues[operations[index].queue].detachedCount += 1
    effects.runExternalCancel(external)
    effects.startExternal(index, id: operations[index].id, external)
  }

  // MARK: The end

  /// Stores the outcome of an operation whose work ran, and returns the terminal state it
  /// implies. Once cancellation was requested, a thrown error cancels: the operation ends
  /// `.cancelled` (its value throws `CancellationError`) and the thrown error is kept as its
  /// ``thrownError(of:)``. A thrown `CancellationError` cancels (and marks it cancelled); any
  /// other error fails; a value finishes, even after a cancellation request.
  mutating func record(_ outcome: OutcomeBox, of index: Int) -> OperationState {
    if outcome.holdsNoBox {
      // A body that returned `()`: read without making its `Result`, an existential to destroy.
      operations[index].outcome = outcome
      return .finished
    }
    if operations[index].timeMarks.contains(.timedOut), let timeout = timeoutError(of: index) {
      return recordAfterTimeout(outcome, timeout, of: index)
    }
    switch outcome.value {
    case .success:
      operations[index].outcome = outcome
      return .finished
    case .failure(is CancellationError):
      operations[index].outcome = outcome
      operations[index].cancelRequested = true
      return .cancelled
    case .failure(let error):
      operations[index].thrownError = error
      if operations[index].cancelRequested {
        operations[index].outcome = .cancelled
        return .cancelled
      }
      operations[index].outcome = outcome
      return .failed
    }
  }

  /// ``record(_:of:)`` for an operation whose deadline or timeout passed while it ran: a value
  /// still finishes it; any throw fails it with `timeout`, keeping the body's error as its
  /// ``thrownError(of:)``.
  @inline(never)
  private mutating func recordAfterTimeout(
    _ outcome: OutcomeBox, _ timeout: OperationTimeoutError, of index: Int
  ) -> OperationState {
    switch outcome.value {
    case .success:
      operations[index].outcome = outcome
      return .finished
    case .failure(let error):
      operations[index].thrownError = error
      operations[index].outcome = OutcomeBox(.failure(timeout))
      return .failed
    }
  }

  /// Ends `index` in `terminal` state and releases everything that waited for it: its waiters,
  /// completion handlers, subscribers, queue slot record and dependents. Dependents that
  /// required it to succeed end too, transitively (a work list, not recursion, so a long chain
  /// cannot exhaust the stack; an operation reached twice, as the bottom of a diamond, ends
  /// once). `error`: the operation ends without its work having run (cancelled while waiting,
  /// or a required input did not finish); `nil` when the outcome was recorded already.
  ///
  /// Within one hold of the lock, at most ``sliceLimit`` dependents are released or ended; the
  /// rest is left to the caller's next slices (see `BulkWork`).
  mutating func terminate(
    _ index: Int, as terminal: OperationState, error: (any Error)?, _ effects: inout Effects
  ) {
    var work: [PendingEnd] = []
    endOne(index, as: terminal, error: error, into: &work, &effects)
    if !work.isEmpty { finishEnds(&work, &effects) }
  }

  mutating func endOne(
    _ index: Int, as terminal: OperationState, error: (any Error)?,
    into work: inout [PendingEnd], _ effects: inout Effects
  ) {
    precondition(terminal.isTerminal, "Internal inconsistency: ending in non-terminal state \(terminal)")
    precondition(
      !operations[index].phase.hasEnded, "Internal inconsistency: \(operations[index].id) ended twice")
    if operations[index].phase.isPausedInBody { releasePauseWaiters(of: index, &effects) }
    // A body that never ran, or external work that ended: released after unlocking.
    let (unused, external) = operations[index].dropUnfinished()
    if let unused { effects.garbage.releaseLater(body: unused) }
    if let external {
      if operations[index].phase.isDetached { queues[operations[index].queue].detachedCount -= 1 }
      effects.externalEnded(external)
    }
    if let error { recordEndWithoutRunning(index, as: terminal, error: error) }

    // Events: the subscriber streams end after the terminal state.
    transition(index, to: .ended(terminal), &effects)
    if !groupRecords.isEmpty { keepGroupProgress(of: index) }
    let queue = operations[index].queue
    // Its keys, its place among a key's waiters, its reservations: released, to be scanned.
    if operations[index].timeMarks.contains(.exclusive) { endExclusive(index) }
    if !costs.isEmpty { costs[index] = nil }
    if operations[index].isTagged { unlistTags(of: index) }
    // Before it leaves its queue, whose clock it reads (a released queue's record is freed then).
    if !operations[index].timeMarks.isEmpty { endTimers(of: index, queue: queue, &effects) }
    var leftHandle: Handle?
    if queue >= 0 {
      if queues[queue].isGroup {
        if terminal == .failed { noteChildFailure(index, in: queue, &effects) }
        noteChildEnded(index, in: queue, &effects)
      }
      if operations[index].extrasBox != nil, let coalescing = operations[index].extras?.coalescing {
        releaseCoalescingKey(of: index, hash: coalescing.hash, in: queue, &effects)
      }
      leftHandle = leave(queue, index, as: terminal, &effects)
      if operations[index].isBarrier { queues[queue].barriers.removeFirst(index) }
    }

    if !operations[index].completionHandlers.isEmpty { scheduleCompletionHandlers(of: index, &effects) }
    if !operations[index].waiters.isEmpty { wakeWaiters(of: index, &effects) }
    if operations[index].timeSlot >= 0 { endTimedWaiters(of: index, &effects) }

    if operations[index].extrasBox != nil, operations[index].hasFollowers {
      endFollowers(of: index, as: terminal, into: &work, &effects)
    }

    // What its conditions produced for it goes with it, when it never ran: before its dependents
    // are released, so that one waiting for both ends the same way whatever the slices.
    if error != nil, !operations[index].dependencies.isEmpty {
      cancelOrphanedProduced(of: index, &effects)
    }

    // Dependents: each counts this dependency as ended.
    if !operations[index].dependents.isEmpty { releaseDependents(of: index, terminal, into: &work, &effects) }

    // An ended operation no longer owns its dependencies (no retain cycle can form through it);
    // it lists those still alive.
    if !operations[index].dependencies.isEmpty { weakenDependencies(of: index, &effects) }

    if var handle = leftHandle.take() {
      // The queue held the last reference (a handle its caller dropped, the common case for
      // fire-and-forget work): the record is freed now, in this critical section, and the
      // handle's `deinit` (after unlocking) has nothing left to do. That saves each such
      // operation a second lock acquisition on the worker's side. Sound because no new strong
      // reference can appear meanwhile: every other reference to a handle is strong and
      // counted, except the weak ones an ended dependent keeps, which are loaded only under
      // this lock and which `isWeaklyReferenced` rules out; and coalesced work (whose
      // followers refer to its record by index) keeps the ordinary path.
      if !isEndingInBulk, operations[index].extrasBox == nil, !operations[index].isWeaklyReferenced,
        isKnownUniquelyReferenced(&handle)
      {
        freeEnded(index, owner: handle.id, &effects)
        handle.recordWasFreed()
      }
      effects.garbage.releaseLater(handle: handle)
    }
    if operations[index].isHandleGone { freeEnded(index, owner: operations[index].id, &effects) }
  }

  // MARK: The parts of an end that most operations skip, kept out of `endOne`'s line: its fast
  // path then sets up no generic types.

  /// Stores the outcome of an operation that ends without its work having run.
  @inline(never)
  private mutating func recordEndWithoutRunning(_ index: Int, as terminal: OperationState, error: any Error) {
    operations[index].outcome = error is CancellationError ? .cancelled : OutcomeBox(.failure(error))
    if terminal == .cancelled { operations[index].cancelRequested = true }
  }

  /// Pushes the terminal state to the operation's subscribers and ends their streams.
  @inline(never)
  mutating func finishSubscribers(of index: Int, _ terminal: OperationState, _ effects: inout Effects) {
    for subscriber in operations[index].subscribers where subscriber.push(terminal, effects: &effects) {
      subscriber.finish(effects: &effects)
    }
    operations[index].subscribers = []
  }

  /// Emits the operation's new state to its queue's subscribers.
  @inline(never)
  mutating func emitState(of index: Int, _ state: OperationState, in queue: Int, _ effects: inout Effects) {
    if state == .executing, !keyRecordings.isEmpty, operations[index].timeMarks.contains(.exclusive) {
      noteKeys(of: index, in: queue)
    }
    emit(
      .operation(id: operations[index].id, name: operations[index].name, state: state), in: queue, &effects)
  }

  /// Hands the completion handlers, with the outcome, to the effects (they run after unlocking).
  @inline(never)
  private mutating func scheduleCompletionHandlers(of index: Int, _ effects: inout Effects) {
    guard let outcome = operations[index].outcome else { return }
    let handlers = operations[index].completionHandlers
    operations[index].completionHandlers = []
    effects.complete {
      for handler in handlers { handler(outcome.value) }
    }
  }

  /// Hands the tasks awaiting the operation to the effects (resumed after unlocking).
  @inline(never)
  private mutating func wakeWaiters(of index: Int, _ effects: inout Effects) {
    effects.wake(operations[index].waiters)
    operations[index].waiters = []
  }

  /// Each dependent of the ended `index` counts it as ended: it becomes ready, or ends too (added
  /// to `work`) when it required `index` to finish.
  @inline(never)
  private mutating func releaseDependents(
    of index: Int, _ terminal: OperationState, into work: inout [PendingEnd], _ effects: inout Effects
  ) {
    let dependents = operations[index].dependents
    operations[index].dependents = []
    let failure: (any Error)? =
      switch terminal {
      case .finished: nil
      case .cancelled: cancellationError
      default: dependencyFailure(of: index)
      }
    let id = operations[index].id
    let stopped = releaseEntries(
      dependents, from: 0, of: index, id: id, terminal: terminal, failure: failure, deferred: false,
      into: &work,
      &effects)
    guard stopped < dependents.count else { return }
    // The rest in the caller's next slices.
    bulk.releases.append(
      BulkWork.Release(
        dependency: index, dependencyID: id, terminal: terminal, failure: failure, entries: dependents,
        next: stopped))
    markBulk()
  }

  /// An ended operation no longer owns its dependencies (no retain cycle can form through it);
  /// it lists those still alive.
  @inline(never)
  private mutating func weakenDependencies(of index: Int, _ effects: inout Effects) {
    for position in operations[index].dependencies.indices {
      guard let handle = operations[index].dependencies[position].handle else { continue }
      operations[index].dependencies[position].weakHandle = WeakHandle(object: handle)
      operations[index].dependencies[position].handle = nil
      operations[operations[index].dependencies[position].index].isWeaklyReferenced = true
      effects.garbage.releaseLater(handle: handle)
    }
  }

  /// Takes the ended operation `index` out of `queue`'s list and returns the handle the queue
  /// held (none if it let go of it); wakes the queue's waiters when none is left, and frees a released queue that is
  /// done. O(1).
  private mutating func leave(
    _ queue: Int, _ index: Int, as terminal: OperationState, _ effects: inout Effects
  ) -> Handle? {
    let (handle, previous, next) = operations[index].leaveQueue()
    precondition(
      handle != nil || operations[index].isLetGo, "Internal inconsistency: an operation left its queue twice")
    if !queues[queue].walkCursors.isEmpty { advanceWalkCursors(in: queue, past: index, to: next) }
    if previous >= 0 { operations[previous].nextInQueue = next } else { queues[queue].first = next }
    if next >= 0 { operations[next].previousInQueue = previous } else { queues[queue].last = previous }
    queues[queue].unfinishedCount -= 1
    queues[queue].ended.add(1, to: terminal)
    if queues[queue].hasCapacityWaiters { noteSpace(in: queue) }
    if queues[queue].unfinishedCount == 0 {
      if !queues[queue].allFinishedWaiters.isEmpty {
        effects.wake(queues[queue].allFinishedWaiters)
        queues[queue].allFinishedWaiters = []
      }
      freeQueueIfDone(queue, &effects)
    }
    return handle
  }
}

extension Scheduler {
  /// Tells the test recorders of `queue` the locks `index` starts with.
  @inline(never)
  fileprivate func noteKeys(of index: Int, in queue: Int) {
    guard let recordings = keyRecordings[queue] else { return }
    let ids = lockSlots(of: index).map { lockStates[$0].id }
    for recording in recordings { recording.note(operations[index].id, ids) }
  }
}

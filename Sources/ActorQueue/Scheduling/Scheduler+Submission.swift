/// Submission: adding operations to a queue, barriers, and becoming ready.
extension Scheduler {
  /// Adds prepared operations to `queue`: all of them, or none. The batch is added whole, then
  /// scheduled, so its operations start by priority, not in the order of the array.
  ///
  /// - Throws: `.alreadyEnqueued` if one was added before or appears twice; `.dependencyCycle`
  ///   if waiting for the queue's barriers would close a cycle. Nothing changes then.
  mutating func submit(
    _ handles: [Handle], to queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) throws(ActorQueueError) {
    if handles.count == 1 {
      guard !operations[handles[0].recordIndex].wasEnqueued else { throw .alreadyEnqueued }
    } else {
      var seen = Set<Int>(minimumCapacity: handles.count)
      for handle in handles {
        guard !operations[handle.recordIndex].wasEnqueued, seen.insert(handle.recordIndex).inserted else {
          throw .alreadyEnqueued
        }
      }
    }
    // Waiting for a barrier must not close a cycle (a prepared operation that something before
    // the barrier waits for). The checks are independent of each other: the barrier edges
    // added below lead away from the barriers, never back to them.
    for barrier in queues[queue].barriers {
      for handle in handles {
        if let cycle = cycle(closedBy: barrier, handle.recordIndex) { throw cycleError(cycle) }
      }
    }
    // So must being waited for by the group whose queue this is.
    if queues[queue].isGroup { try checkGroupAdmission(of: handles, to: queue) }
    // So must waiting for a condition's produced dependency.
    for handle in handles where operations[handle.recordIndex].timeSlot >= 0 {
      if let cycle = cycleOfProduced(handle.recordIndex) { throw cycleError(cycle) }
    }
    // A produced dependency in the batch is added with the operation that produced it.
    for handle in handles where !operations[handle.recordIndex].wasEnqueued {
      enqueue(handle, into: queue, now: now, &effects)
    }
    settle(now: now, &effects)
  }

  /// Adds a new operation that has no inputs, in one step (``ActorQueue/addOperation(name:priority:_:)``):
  /// it can neither close a cycle nor have started.
  mutating func submit(
    _ handle: Handle, to queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    if let spawn = submitNew(handle, to: queue, now: now, &effects) { effects.spawn(spawn) }
  }

  /// ``submit(_:to:now:_:)``, except that the worker an idle queue's start asks for is returned
  /// instead of recorded in `effects` (which that start leaves empty): `addOperation` starts it
  /// itself, so that the commonest start of a queue fed from time to time does not go through
  /// the effects' generic code (each function it touches is code to fetch, with cold caches).
  mutating func submitNew(
    _ handle: Handle, to queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> Spawn? {
    if let spawn = startOnIdle(handle, on: queue, now: now) { return spawn }
    enqueue(handle, into: queue, now: now, &effects)
    settle(now: now, &effects)
    return nil
  }

  /// Adds a new operation whose typed inputs are `inputs`, in one step: it can neither close a
  /// cycle (nothing waits for it yet) nor have started. If an input has failed or been
  /// cancelled already, it ends at once, in the queue's order of events, without running.
  mutating func submit(
    _ handle: Handle, inputs: [Handle], to queue: Int, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) {
    let index = handle.recordIndex
    for input in inputs {
      if operations[index].phase.hasEnded {
        // An input before this one failed and ended it: the rest are listed, not waited for.
        listInput(input, ofEnded: index)
      } else {
        link(input, to: index, part: .input, &effects)
      }
    }
    submit(handle, to: queue, now: now, &effects)
  }

  /// Adds `barrier` behind every unfinished operation of `queue`; operations added later wait
  /// for it (and for every earlier barrier still unfinished). O(unfinished operations).
  mutating func submitBarrier(
    _ barrier: Handle, to queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    let index = barrier.recordIndex
    operations[index].isBarrier = true
    for unfinished in unfinishedIndices(of: queue) {
      // The barrier is new: nothing waits for it, so no cycle can close.
      guard let handle = operations[unfinished].enqueuedHandle else { continue }
      link(handle, to: index, part: .barrier, &effects)
    }
    enqueue(barrier, into: queue, now: now, &effects)
    if !operations[index].phase.hasEnded { queues[queue].barriers.append(index) }
    settle(now: now, &effects)
  }

  /// Appends new operation `handle` to `queue`'s list of unfinished operations, last in
  /// submission order.
  @inline(__always)
  mutating func appendToQueue(_ handle: Handle, _ queue: Int) {
    let index = handle.recordIndex
    nextSubmission += 1
    let previous = queues[queue].append(index)
    operations[index].join(queue: queue, order: nextSubmission, handle: handle, previous: previous)
    if previous >= 0 { operations[previous].nextInQueue = index }
  }

  /// Adds one operation known not to be enqueued yet.
  mutating func enqueue(
    _ handle: Handle, into queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    let index = handle.recordIndex
    operations[index].wasEnqueued = true
    // An operation that ended before it was added (cancelled, or an input it required failed)
    // has nothing left to do; it is accepted and stays as it is.
    guard !operations[index].phase.hasEnded else { return }
    appendToQueue(handle, queue)
    if operations[index].isTagged { listTags(of: index) }
    if queues[queue].isGroup, !admitChild(index, to: queue, now: now, &effects) { return }
    if operations[index].external != nil { queues[queue].hasExternalWork = true }
    if !queues[queue].barriers.isEmpty { waitForBarriers(index, of: queue, &effects) }
    var producesDependencies = false
    if operations[index].timeSlot >= 0 {
      let slot = Int(operations[index].timeSlot)
      if !timeStates[slot].traits.exclusive.isEmpty, !operations[index].timeMarks.contains(.exclusive) {
        beginExclusive(index, timeStates[slot].traits.exclusive, on: queue)
      }
      if timeStates[slot].traits.cost != nil { beginCost(timeStates[slot].traits.cost, of: index, on: queue) }
      armDeadline(of: index, on: queue, now: now)
      // Read now and not again: what of the user's the traits hold (a retry policy's closures, a
      // domain) is let go of after unlocking, not when the slot is reused under the lock.
      if timeStates[slot].traits.retry != nil || !timeStates[slot].traits.exclusive.isEmpty {
        effects.garbage.releaseLater((timeStates[slot].traits.retry, timeStates[slot].traits.exclusive))
        timeStates[slot].traits.retry = nil
        timeStates[slot].traits.exclusive = ExclusiveRequests()
      }
      if !timeStates[slot].produced.isEmpty {
        if let cycle = linkProduced(index, &effects) {
          // Only an add that cannot throw gets here (the others check first): it ends at once.
          terminate(index, as: .failed, error: cycleError(cycle), &effects)
          return
        }
        producesDependencies = true
      }
    }
    if operations[index].unfinishedDependencies == 0 && !operations[index].pauseHeld {
      makeReady(index, &effects)
    } else if !queues[queue].subscribers.isEmpty {
      emitState(of: index, .pending, in: queue, &effects)
    }
    // After it, in submission order and in its queue's events.
    if producesDependencies { enqueueProduced(of: index, into: queue, now: now, &effects) }
  }

  /// `index`, just added to `queue`, waits for every unfinished barrier of the queue. Out of
  /// line: few queues have barriers, and an idle queue's start touches only what it runs (see
  /// ``settle(now:_:)``).
  @inline(never)
  private mutating func waitForBarriers(_ index: Int, of queue: Int, _ effects: inout Effects) {
    for barrier in queues[queue].barriers {
      guard let barrierHandle = operations[barrier].enqueuedHandle else {
        preconditionFailure("Internal inconsistency: an unfinished barrier left its queue")
      }
      link(barrierHandle, to: index, part: .barrier, &effects)
    }
  }

}

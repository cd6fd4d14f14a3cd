/// Pausing and resuming operations, and lowering a limit with the excess paused.
///
/// An executing operation pauses only where its body says it may: at a checkpoint
/// (``ActorQueue/checkpoint()``). There it gives its slot back (`.paused`) and its task waits;
/// when it may continue, it competes for a slot like a ready operation (by priority, then its
/// original submission order, and not while the queue is suspended), and the task that paused
/// continues with the slot it was given. A waiting operation that is paused is held: it does
/// not become ready until resumed.
///
/// Two reasons to pause, kept apart: `pause()` (``OperationRecord/pauseHeld``) holds the
/// operation until `resume()`; excess pausing (``OperationRecord/excessPaused``) asks it to
/// give its slot back because the limit was lowered, and it competes for a slot again at once.
extension Scheduler {
  /// What a task at a checkpoint does.
  enum CheckpointDecision: Sendable {
    /// Nothing to do: continue.
    case proceed
    /// The operation was cancelled: throw `CancellationError`.
    case cancelled
    /// The operation paused (or was paused already): the task waits until it is resumed with a
    /// slot, or cancelled.
    case suspended
  }

  // MARK: One operation

  /// Whether the body of `index` (still the operation `id`) is asked to pause, or is paused.
  func isPauseRequested(_ index: Int, id: OperationID) -> Bool {
    guard operations[index].isLive, operations[index].id == id else { return false }
    switch operations[index].phase {
    case .executing(.worker): return operations[index].pauseHeld || operations[index].excessPaused
    case .paused, .resumed: return true
    case .pending, .ready, .executing(.external), .detached, .following, .ended, .modifying: return false
    }
  }

  /// Whether `index` is paused (its body waits at a checkpoint), or held by `pause()` while it
  /// waits to start. An executing body asked to pause is not paused until it reaches a
  /// checkpoint.
  func isPaused(_ index: Int) -> Bool {
    switch operations[index].phase {
    case .paused: return true
    case .pending: return operations[index].pauseHeld
    case .following: return isPaused(operations[index].leader)
    case .ready, .executing, .resumed, .detached, .ended, .modifying: return false
    }
  }

  /// `pause()`, then the starts it allows decided.
  mutating func pause(_ index: Int, now: () -> SchedulerInstant, _ effects: inout Effects) {
    pauseOne(index, &effects)
    settle(now: now, &effects)
  }

  /// `pause()`: holds a waiting operation, asks an executing one to pause at its next
  /// checkpoint, and keeps a paused one paused until `resume()`. No effect on an operation that
  /// has ended, and none on external work that runs (it has no checkpoint).
  ///
  /// A helper: the caller's event decides the starts it allows.
  mutating func pauseOne(_ index: Int, _ effects: inout Effects) {
    switch operations[index].phase {
    case .following: return pauseOne(operations[index].leader, &effects)
    case .executing(.external), .detached, .ended: return
    case .pending, .ready, .executing(.worker), .paused, .resumed: break
    case .modifying:
      preconditionFailure("Internal inconsistency: \(operations[index].id) paused while its phase changes")
    }
    operations[index].pauseHeld = true
    if operations[index].timeMarks.contains(.exclusive) { exclusiveHeld(index) }
    if operations[index].queue >= 0 {
      touch(operations[index].queue)  // recounts excess requests
      if queues[operations[index].queue].isReleased { letGo(index, &effects) }
    }
    switch operations[index].phase {
    case .ready:
      transition(index, to: .pending, &effects)
    case .executing(.worker(let worker)):
      worker.setPauseRequested(true, in: pauses)
    case .paused(var body), .resumed(var body):
      // Out of the ready set: resumed, or paused for the excess and competing for a slot.
      body.stamp = nil
      transition(index, to: .paused(body), &effects)
    case .pending, .executing(.external), .detached, .following, .ended, .modifying:
      break
    }
  }

  /// `resume()`: withdraws every pause request. A held waiting operation becomes ready (when
  /// its dependencies have ended); a paused one competes for a slot (state `.ready`); an
  /// executing one that had not reached a checkpoint yet goes on as if never asked.
  mutating func resume(_ index: Int, now: () -> SchedulerInstant, _ effects: inout Effects) {
    resumeOne(index, &effects)
    settle(now: now, &effects)
  }

  /// ``resume(_:now:_:)`` without deciding starts: the caller's event settles.
  mutating func resumeOne(_ index: Int, _ effects: inout Effects) {
    switch operations[index].phase {
    case .following: return resumeOne(operations[index].leader, &effects)
    case .ended: return
    case .pending, .ready, .executing, .paused, .resumed, .detached: break
    case .modifying:
      preconditionFailure("Internal inconsistency: \(operations[index].id) resumed while its phase changes")
    }
    let wasHeld = operations[index].pauseHeld
    operations[index].pauseHeld = false
    if operations[index].queue >= 0 { touch(operations[index].queue) }  // recounts excess requests
    if operations[index].excessPaused, case .executing = operations[index].phase {
      queues[operations[index].queue].hasExcessRequests = true  // recounted when settled
    }
    operations[index].excessPaused = false
    switch operations[index].phase {
    case .pending:
      if wasHeld, operations[index].queue >= 0, operations[index].unfinishedDependencies == 0 {
        makeReady(index, &effects)
      }
    case .executing(.worker(let worker)):
      worker.setPauseRequested(false, in: pauses)
    case .paused(var body) where !operations[index].cancelRequested && !isTimedOut(index):
      if body.stamp == nil { body.stamp = insertPausedIntoReady(index) }
      transition(index, to: .resumed(body), &effects)
      touch(operations[index].queue)
    case .ready, .executing(.external), .paused, .resumed, .detached, .following, .ended, .modifying:
      break
    }
  }

  /// A task of `index`'s body reached a checkpoint (the slow path: a pause was requested, or the
  /// operation is paused already); `resume` is called when the task may go on, if the
  /// decision is ``CheckpointDecision/suspended``. `id` is the operation the task belongs to: a
  /// task that outlived its operation proceeds.
  mutating func checkpoint(
    _ index: Int, id: OperationID, token: UInt64, resume: @escaping @Sendable (_ cancelled: Bool) -> Void,
    now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> CheckpointDecision {
    guard operations[index].isLive, operations[index].id == id else { return .proceed }
    switch operations[index].phase {
    case .executing(.worker), .paused, .resumed:
      if operations[index].cancelRequested || isTimedOut(index) { return .cancelled }
    case .pending, .ready, .executing(.external), .detached, .following, .ended, .modifying:
      return .proceed
    }
    switch operations[index].phase {
    case .executing(.worker(let worker)) where operations[index].pauseHeld || operations[index].excessPaused:
      let queue = operations[index].queue
      if queues[queue].isReleased, queues[queue].machine.isSuspended {
        // Nobody can resume its queue: paused now, it could never get a slot again. It is
        // cancelled instead, as releasing the queue cancelled what waited in it.
        cancelOne(index, &effects)
        settle(now: now, &effects)
        return .cancelled
      }
      // The worker's flag stays set while paused: other tasks of the body that reach a
      // checkpoint wait too.
      queues[queue].machine.operationPaused()
      let stamp = operations[index].pauseHeld ? nil : insertPausedIntoReady(index)
      transition(
        index,
        to: .paused(
          PausedBody(worker: worker, waiters: [PauseWaiter(token: token, resume: resume)], stamp: stamp)),
        &effects)
      operations[index].excessPaused = false
      touch(queue)
      settle(now: now, &effects)
      return .suspended
    case .paused, .resumed:
      operations[index].modifyPauseWaiters { $0.append(PauseWaiter(token: token, resume: resume)) }
      return .suspended
    case .executing, .pending, .ready, .detached, .following, .ended, .modifying:
      return .proceed
    }
  }

  /// The task of a waiter at a checkpoint was cancelled (not the operation): it stops waiting and
  /// throws `CancellationError`. The operation stays paused.
  mutating func checkpointCancelled(_ index: Int, id: OperationID, token: UInt64, _ effects: inout Effects) {
    guard operations[index].isLive, operations[index].id == id, operations[index].phase.isPausedInBody,
      let waiter = operations[index].modifyPauseWaiters({ waiters in
        waiters.firstIndex(where: { $0.token == token }).map { waiters.remove(at: $0) }
      })
    else { return }
    effects.resumeCheckpoint(waiter.resume, cancelled: true)
  }

  /// The paused body of `index` was cancelled: its tasks at a checkpoint throw
  /// `CancellationError` at once; it runs to its end holding no slot, and stays `.paused` until
  /// then.
  mutating func cancelPaused(_ index: Int, _ effects: inout Effects) {
    switch operations[index].phase {
    case .paused(var body), .resumed(var body):
      body.stamp = nil
      transition(index, to: .paused(body), &effects)
    case .pending, .ready, .executing, .detached, .following, .ended, .modifying:
      preconditionFailure("Internal inconsistency: \(operations[index].id) has no paused body to cancel")
    }
    releasePauseWaiters(of: index, &effects)
  }

  /// Resumes every task of `index` suspended at a checkpoint, throwing `CancellationError`.
  @inline(never)  // rare: kept out of the hot paths that test for it
  mutating func releasePauseWaiters(of index: Int, _ effects: inout Effects) {
    let waiters = operations[index].modifyPauseWaiters { waiters in
      defer { waiters = [] }
      return waiters
    }
    for waiter in waiters {
      effects.resumeCheckpoint(waiter.resume, cancelled: true)
    }
  }

  /// Puts a paused body into its queue's ready set, with its original submission order; returns
  /// its place, which the caller's transition records.
  private mutating func insertPausedIntoReady(_ index: Int) -> ReadyStamp {
    queues[operations[index].queue].machine.insertReady(
      index, order: operations[index].order, priority: operations[index].priority)
  }

  // MARK: Started bodies

  /// `index` got a worker: it joins its queue's started bodies. O(1).
  @inline(__always)
  mutating func linkStarted(_ index: Int, in queue: Int) {
    let next = queues[queue].firstStarted
    if next >= 0 { operations[next].previousStarted = index }
    operations[index].nextStarted = next
    operations[index].previousStarted = -1
    queues[queue].firstStarted = index
  }

  /// `index`'s body ended on `worker`: it leaves its queue's started bodies. O(1). Returns
  /// whether the worker must retire: its task was asked to cancel, or was escalated for this
  /// operation (the raised priority must not carry into the next one).
  @inline(__always)
  mutating func unlinkStarted(_ index: Int, in queue: Int, worker: Worker) -> Bool {
    let (previous, next, taskCancelled) = operations[index].leaveStarted()
    if previous >= 0 { operations[previous].nextStarted = next } else { queues[queue].firstStarted = next }
    if next >= 0 { operations[next].previousStarted = previous }
    return taskCancelled || worker.isEscalated
  }

  // MARK: Held in a released queue

  /// Lets go of the queue's reference to `index`, held by `pause()` in its released queue (for
  /// coalesced work, of its callers' handles): nobody can resume it but through a handle outside
  /// the queue, so those alone keep it. Released after unlocking; a `deinit` it causes runs
  /// ``handleGone(_:now:)``.
  mutating func letGo(_ index: Int, _ effects: inout Effects) {
    guard !operations[index].isLetGo else { return }
    operations[index].isLetGo = true
    if operations[index].extrasBox != nil, operations[index].extras!.coalescing != nil {
      for handle in operations[index].extras!.followerHandles { effects.garbage.releaseLater(handle: handle) }
      operations[index].extras!.followerHandles = []
    } else if let handle = operations[index].enqueuedHandle.take() {
      // Its conditions' evaluation needs its handle, if one is left when it starts.
      if hasConditions(index) {
        timeStates[Int(operations[index].timeSlot)].conditionsHandle = WeakHandle(object: handle)
      }
      effects.garbage.releaseLater(handle: handle)
    }
  }

  /// Whether `index` is a caller's handle to coalesced work whose queue let go of its callers.
  func isFollowerOfLetGoWork(_ index: Int) -> Bool {
    operations[index].extrasBox != nil && operations[index].leader >= 0
      && operations[operations[index].leader].isLetGo
  }

  /// The last handle of the unfinished `index`, let go of by its released queue, was
  /// deinitialised: if `pause()` still holds it (or its shared work), nobody can resume it any
  /// more, so it is cancelled; its record is freed at its end, which may be at once.
  mutating func handleGone(_ index: Int, now: () -> SchedulerInstant) -> SchedulerEffects {
    var effects = Effects()
    operations[index].isHandleGone = true
    let target =
      operations[index].extrasBox != nil && operations[index].leader >= 0 ? operations[index].leader : index
    if operations[target].pauseHeld { cancelOne(index, &effects) }
    settle(now: now, &effects)
    return effects
  }

  // MARK: A whole queue

  /// Pauses every unfinished operation of `queue` (as `pause()` on each; running external work
  /// is left running), in slices of the lock (see `BulkWork`); the queue starts nothing
  /// meanwhile. Operations added later are not paused. O(n) in all, O(1) per hold.
  mutating func pauseAll(in queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects) {
    beginWalk(.pause, in: queue, &effects)
    settle(now: now, &effects)
  }

  /// Resumes every unfinished operation of `queue`, whichever way it was paused, in slices of
  /// the lock; the queue starts nothing until every one is resumed, so they start by priority.
  /// O(n) in all, O(1) per hold.
  mutating func resumeAll(in queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects) {
    beginWalk(.resume, in: queue, &effects)
    settle(now: now, &effects)
  }

  // MARK: Excess pausing

  /// Sets the limit and asks the executing operations beyond it to pause at their next
  /// checkpoint: the lowest priority first, and among equal priorities the most recently
  /// started first. Operations that cannot pause (external work) and those already asked to are
  /// not asked; a request is withdrawn when enough others free their slots first. O(s log s) in
  /// the s started bodies (executing or paused), whatever the backlog.
  mutating func setLimitPausingExcess(
    _ limit: Int, of queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    setLimit(limit, of: queue, now: now, &effects)
    var candidates: [Int] = []
    var excess = queues[queue].machine.executing - limit
    var index = queues[queue].firstStarted
    while index >= 0 {
      defer { index = operations[index].nextStarted }
      sliceWork += 1  // counted with the hold's work, for tests (see `largestSlice`)
      guard case .executing = operations[index].phase else { continue }
      if operations[index].pauseHeld || operations[index].excessPaused {
        excess -= 1
      } else {
        candidates.append(index)
      }
    }
    guard excess > 0 else { return }
    candidates.sort { left, right in
      let (a, b) = (operations[left], operations[right])
      return a.priority != b.priority ? a.priority < b.priority : a.startOrder > b.startOrder
    }
    for index in candidates.prefix(excess) {
      operations[index].excessPaused = true
      operations[index].phase.worker?.setPauseRequested(true, in: pauses)
    }
    queues[queue].hasExcessRequests = true
  }

  /// Withdraws the excess-pause requests that freed slots made unnecessary: those that would
  /// have been chosen last (the highest priority, the earliest started) first. Called when the
  /// queue's starts are decided while it has requests outstanding. O(s log s) in the s started
  /// bodies.
  mutating func withdrawUnneededExcessRequests(in queue: Int) {
    var requested: [Int] = []
    var needed = queues[queue].machine.executing - queues[queue].machine.limit
    var index = queues[queue].firstStarted
    while index >= 0 {
      defer { index = operations[index].nextStarted }
      sliceWork += 1  // counted with the hold's work, for tests (see `largestSlice`)
      guard case .executing = operations[index].phase else { continue }
      if operations[index].pauseHeld {
        needed -= 1
      } else if operations[index].excessPaused {
        requested.append(index)
      }
    }
    if requested.isEmpty {
      queues[queue].hasExcessRequests = false
      return
    }
    let surplus = requested.count - max(needed, 0)
    guard surplus > 0 else { return }
    requested.sort { left, right in
      let (a, b) = (operations[left], operations[right])
      return a.priority != b.priority ? a.priority > b.priority : a.startOrder < b.startOrder
    }
    for index in requested.prefix(surplus) {
      operations[index].excessPaused = false
      operations[index].phase.worker?.setPauseRequested(false, in: pauses)
    }
    if surplus == requested.count { queues[queue].hasExcessRequests = false }
  }
}

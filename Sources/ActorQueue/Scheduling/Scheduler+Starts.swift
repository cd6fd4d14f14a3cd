/// Deciding starts: which operation starts, when, and on which task.
extension Scheduler {
  // MARK: Deciding starts

  /// Marks `queue` as changed by the current event.
  mutating func touch(_ queue: Int) {
    guard !queues[queue].isTouched else { return }
    queues[queue].isTouched = true
    if lastTouched >= 0 { queues[lastTouched].nextTouched = queue } else { firstTouched = queue }
    lastTouched = queue
    if hasBulk { holdForBulk(queue) }
  }

  /// Decides the starts of every queue the current event changed: called once, at the end of
  /// each event. A queue that needs a worker gets one; an idle queue's new worker starts with
  /// the best ready operation claimed for it here, so an add→start on an idle queue takes the
  /// lock once on each side.
  mutating func settle(now: () -> SchedulerInstant, _ effects: inout Effects) {
    // Deadlines of operations just added (one already past ends its operation here).
    if hasTimeWork { settleTime(now: now, &effects) }
    if hasBulk { drainAndHoldQueues(&effects) }
    repeat {
      // Submitters waiting for the space an end freed are added before anything starts.
      if hasCapacityWork { serveWaitingSubmitters(now: now, &effects) }
      decideStarts(now: now, &effects)
      // Timeouts of bodies just started; operations found with an impossible cost end; the timer
      // task.
      if hasTimeWork { settleTime(now: now, &effects) }
    } while firstTouched >= 0 || hasCapacityWork || (needsArbitration && !arbitrationDeferred)
    // An end that freed the last record leaves every record free: the storage is judged. Tested
    // here, not in the callee, so that the common event makes no call.
    if freeOperations.count == operations.count { judgeStorageIfAllFree(now: now) }
    if sliceWork > 0 || hasBulk { endSlice(&effects) }
  }

  /// The starts of every queue the current event changed (part of `settle`).
  @inline(__always)
  private mutating func decideStarts(now: () -> SchedulerInstant, _ effects: inout Effects) {
    while firstTouched >= 0 || needsArbitration {
      guard firstTouched >= 0 else {
        _ = arbitrate(taker: nil, takerQueue: -1, now: now, &effects)
        if needsArbitration { break }  // deferred to the last slice of a call
        continue
      }
      let queue = takeFirstTouched()
      if queues[queue].isArbitrated {
        settleByArbitration(queue, now: now, &effects)
        continue
      }
      // The rare cases are out of line, so that the common path (an idle queue's start, above
      // all) is compact: with cold caches, what a start costs is the cache lines it touches.
      if queues[queue].hasExcessRequests || queues[queue].pausedInReady > 0 || queues[queue].hasExternalWork {
        startWithoutWorkers(queue, now: now, &effects)
      }
      // A queue that gates its starts on permits claims them in the event, as arbitration does:
      // an operation granted its permits is executing when the event ends.
      if startsEagerly || queues[queue].gatesPermits {
        startEagerly(queue, now: now, &effects)
        continue
      }
      if queues[queue].machine.readyCount > 0, queues[queue].machine.isLingering {
        effects.wakeLingerer = true
      }
      guard queues[queue].machine.needsWorker() else { continue }
      if queues[queue].machine.executing == 0 {
        queues[queue].linger.workArrived(at: now())
        let worker = newWorker(for: queue)
        let step = queues[queue].machine.claimForStartingWorker()
        let first = apply(step, worker: worker, queue: queue, now: now, &effects)
        if case .retire = first { continue }
        effects.spawn(
          Spawn(taskPriority: queues[queue].taskPriority, worker: worker, first: first))
      } else {
        effects.spawn(Spawn(taskPriority: queues[queue].taskPriority, worker: newWorker(for: queue)))
      }
    }
  }

  /// A stop of a manual clock's advance (`startsEagerly`), or a queue that gates its starts on
  /// permits: what may start in `queue` starts now, each on a new worker with its operation. A
  /// worker asked for, or a lingering one woken, would claim only when it runs, after the next
  /// stop may have made other operations ready; workers already counted as starting find nothing
  /// and retire.
  @inline(never)
  private mutating func startEagerly(_ queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects) {
    if queues[queue].machine.executing == 0, queues[queue].machine.readyCount > 0 {
      queues[queue].linger.workArrived(at: now())
    }
    while true {
      if queues[queue].gatesPermits { gatePermits(queue, now: now) }
      // Read first: the claim is a write to every queue's record, and a full queue claims nothing.
      guard queues[queue].machine.canStartNow, let index = queues[queue].machine.claimWithoutWorker() else {
        break
      }
      if operations[index].phase.isPausedInBody {
        grantSlot(toPaused: index, &effects)
      } else if operations[index].external != nil {
        startExternalInSlot(index, &effects)
      } else {
        let worker = newWorker(for: queue)
        let first = run(index, on: worker, queue: queue, &effects)
        effects.spawn(Spawn(taskPriority: queues[queue].taskPriority, worker: worker, first: first))
      }
    }
  }

  /// A queue with keys changed: its excess requests are recounted now, its starts decided as
  /// `settleArbitrated` says.
  @inline(never)
  private mutating func settleByArbitration(
    _ queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    if queues[queue].hasExcessRequests { withdrawUnneededExcessRequests(in: queue) }
    settleArbitrated(queue, now: now, &effects)
  }

  /// Takes the first queue off the list of those the current event changed.
  mutating func takeFirstTouched() -> Int {
    let queue = firstTouched
    firstTouched = queues[queue].untouch()
    if firstTouched < 0 { lastTouched = -1 }
    return queue
  }

  /// The starts of `queue` that need no worker: requests to pause the excess that are no longer
  /// needed are withdrawn, paused bodies given a slot continue on their own tasks, and external
  /// work is given its slot (started once the lock is released, on this thread: see
  /// `Engine.startExternal`).
  @inline(never)
  private mutating func startWithoutWorkers(
    _ queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    if queues[queue].hasExcessRequests { withdrawUnneededExcessRequests(in: queue) }
    let gates = queues[queue].gatesPermits
    // The gate is asked only once the head is known to be one claimed here: a gate that opens
    // has taken the head's permits for the claim that follows.
    // A paused body given a slot continues on the task it paused in: no worker needed.
    while queues[queue].pausedInReady > 0, let head = queues[queue].machine.peekReady(),
      operations[head].phase.isPausedInBody, !gates || gateOpened(queue, now: now),
      queues[queue].machine.canStartNow
    {
      _ = queues[queue].machine.claimWithoutWorker()
      grantSlot(toPaused: head, &effects)
    }
    // External work runs elsewhere and needs no worker.
    if queues[queue].hasExternalWork {
      while let head = queues[queue].machine.peekReady(), operations[head].external != nil,
        case .ready = operations[head].phase, !gates || gateOpened(queue, now: now),
        queues[queue].machine.canStartNow
      {
        _ = queues[queue].machine.claimWithoutWorker()
        startExternalInSlot(head, &effects)
      }
    }
  }

  /// `gatePermits`, then whether the gate is open.
  private mutating func gateOpened(_ queue: Int, now: () -> SchedulerInstant) -> Bool {
    gatePermits(queue, now: now)
    return !queues[queue].machine.throttled
  }

  // MARK: Claiming for a worker

  /// A worker that holds no operation claims the next one. If there is none and the queue is
  /// idle, it lingers when that pays (``LingerPolicy``) and no other worker lingers; otherwise
  /// it retires, and the queue notes when it went idle.
  mutating func claimOrIdle(
    _ worker: Worker, queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction {
    // The operation that just ended may have made space for a waiting submitter, whose operation
    // then competes for the slot it freed.
    if hasCapacityWork { serveWaitingSubmitters(now: now, &effects) }
    if queues[queue].isArbitrated {
      return claimByArbitration(worker, queue: queue, countedStarting: true, now: now, &effects)
    }
    if queues[queue].gatesPermits { gatePermits(queue, now: now) }
    let step = queues[queue].machine.claimForStartingWorker()
    if step.run == nil, queues[queue].machine.executing == 0 {
      let instant = now()
      if queues[queue].linger.lingerPays, lingeringWorkers == 0, queues[queue].machine.lingerIfIdle() {
        lingeringWorkers += 1
        return .linger(since: instant)
      }
      queues[queue].linger.wentIdle(at: instant)
    }
    return apply(step, worker: worker, queue: queue, now: now, &effects)
  }

  /// Carries out a step of the start rule: asks for the next worker if needed, and moves the
  /// claimed operation to `.executing`, or retires the worker.
  mutating func apply(
    _ step: QueueStartRule<Int>.WorkerStep, worker: Worker, queue: Int, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) -> WorkerAction {
    var step = step
    // A paused body given a slot continues on its own task: this worker claims again.
    while let index = step.run, operations[index].phase.isPausedInBody {
      grantSlot(toPaused: index, &effects)
      let spawnWorker = step.spawnWorker
      if queues[queue].gatesPermits { gatePermits(queue, now: now) }
      step = queues[queue].machine.claimNext()
      step.spawnWorker = step.spawnWorker || spawnWorker
    }
    if step.spawnWorker {
      effects.spawn(Spawn(taskPriority: queues[queue].taskPriority, worker: newWorker(for: queue)))
    }
    guard let index = step.run else {
      freeQueueIfDone(queue, &effects)
      return .retire
    }
    return run(index, on: worker, queue: queue, &effects)
  }

  /// `index`, just given a slot, starts on `worker`: external work is started (it runs elsewhere),
  /// a body is taken and run. Returns the worker's action.
  mutating func run(_ index: Int, on worker: Worker, queue: Int, _ effects: inout Effects) -> WorkerAction {
    if queues[queue].gatesPermits { claimedThroughGate(index, in: queue) }
    nextStart += 1
    if let external = operations[index].external {
      // Runs elsewhere: no worker holds it (cancel() calls its `cancel`).
      operations[index].startOrder = nextStart
      transition(index, to: .executing(.external), claimed: true, &effects)
      if operations[index].timeSlot >= 0 { noteTimedStart(index) }
      return .start(operation: index, id: operations[index].id, work: external)
    }
    // First in the queue's started bodies (see `linkStarted`), in the access that claims it.
    let next = queues[queue].firstStarted
    guard let body = operations[index].claimBody(startOrder: nextStart, nextStarted: next) else {
      preconditionFailure("Internal inconsistency: \(operations[index].id) was claimed twice")
    }
    if next >= 0 { operations[next].previousStarted = index }
    queues[queue].firstStarted = index
    transition(index, to: .executing(.worker(worker)), claimed: true, &effects)
    if operations[index].escalation != 0 { escalateWorker(of: index, worker, in: queue, &effects) }
    if operations[index].timeSlot >= 0 { return timedStart(index, body, on: worker) }
    if operations[index].retrySlot >= 0 { startAttempt(index, body, on: worker) }
    return .run(operation: index, id: operations[index].id, body: body)
  }

  // MARK: Starting without a worker

  /// A paused body was given a slot (``QueueStartRule/claimWithoutWorker()``, or claimed
  /// by a worker): it continues on the task it paused in.
  mutating func grantSlot(toPaused index: Int, _ effects: inout Effects) {
    let body: PausedBody
    switch operations[index].phase {
    case .paused(let paused), .resumed(let paused): body = paused
    case .pending, .ready, .executing, .detached, .following, .ended, .modifying:
      preconditionFailure(
        "Internal inconsistency: \(operations[index].id) was given a slot with no paused body")
    }
    nextStart += 1
    operations[index].startOrder = nextStart
    body.worker.setPauseRequested(false, in: pauses)
    transition(index, to: .executing(.worker(body.worker)), claimed: true, &effects)
    for waiter in body.waiters {
      effects.resumeCheckpoint(waiter.resume, cancelled: false)
    }
  }

  /// Moves the external work `index`, just given a slot without a worker, to `.executing` and
  /// records its start (after unlocking, on the thread of the event).
  mutating func startExternalInSlot(_ index: Int, _ effects: inout Effects) {
    guard let external = operations[index].external else {
      preconditionFailure("Internal inconsistency: \(operations[index].id) has no external work to start")
    }
    let queue = operations[index].queue
    if queues[queue].gatesPermits { claimedThroughGate(index, in: queue) }
    nextStart += 1
    operations[index].startOrder = nextStart
    transition(index, to: .executing(.external), claimed: true, &effects)
    if operations[index].timeSlot >= 0 { noteTimedStart(index) }
    effects.startExternal(index, id: operations[index].id, external)
  }

  // MARK: Becoming ready

  /// A pending, enqueued operation whose dependencies have all ended enters its queue's ready
  /// set. Whether it starts is decided at the end of the event (``settle(now:_:)``).
  mutating func makeReady(_ index: Int, _ effects: inout Effects) {
    if enterReadySet(index, &effects) { touch(operations[index].queue) }
  }

  /// ``makeReady(_:_:)`` without marking the queue changed: for arbitration, which decides the
  /// starts of what it puts back itself. Returns whether `index` entered the ready set.
  @inline(__always)
  mutating func enterReadySet(_ index: Int, _ effects: inout Effects) -> Bool {
    // Held by pause(), or waiting out a retry's backoff: stays pending.
    guard !operations[index].pauseHeld, !operations[index].timeMarks.contains(.inBackoff) else {
      return false
    }
    let queue = operations[index].queue
    let stamp = queues[queue].machine.insertReady(
      index, order: operations[index].order, priority: operations[index].priority)
    transition(index, to: .ready(stamp: stamp), &effects)
    return true
  }

  // MARK: The idle start

  /// The start of an idle queue, in one step: what a queue fed from time to time does on every
  /// `addOperation`, with cold caches. The outcome is the general path's (``enqueue(_:into:_:)``
  /// makes the operation ready, ``settle(now:_:)`` asks for a worker and claims the operation
  /// for it): the operation is enqueued and executing, and a new worker starts with it. Taken
  /// only when nothing else could happen in that event: the queue has nothing executing, nothing
  /// ready, no worker starting or lingering, no barrier, no subscriber, no pause to withdraw, and
  /// the operation is new (no dependency, no subscriber, no external work). Returns the worker
  /// to start; `nil`, changing nothing, when the general path is needed.
  ///
  /// Why a second path: the general one goes through about fifteen functions (the ready set, the
  /// start rule, the transitions and their notifications), each a few cache lines of code and
  /// data that a start after a quiet spell must fetch from memory (figures in the Performance
  /// article). Both paths are checked against the reference model by the random scripts, and the
  /// scheduler tests' harness submits through this one, as `addOperation` does.
  mutating func startOnIdle(_ handle: Handle, on queue: Int, now: () -> SchedulerInstant) -> Spawn? {
    let index = handle.recordIndex
    // What the record knows (the start rule decides the rest), field by field: a computed
    // property of the record, read through the array, copied the whole record on every add.
    guard queues[queue].barriers.isEmpty, queues[queue].subscribers.isEmpty, !queues[queue].hasExcessRequests,
      queues[queue].pausedInReady == 0, !queues[queue].hasLimiters, !queues[queue].isGroup,
      operations[index].startsAlone,
      queues[queue].machine.takeSlotOnIdle()
    else { return nil }
    nextSubmission += 1
    nextStart += 1
    let previous = queues[queue].append(index)
    if previous >= 0 { operations[previous].nextInQueue = index }
    queues[queue].linger.workArrived(at: now())
    let worker = newWorker(for: queue)
    let first = operations[index].startAlone(
      as: index, in: queue, order: nextSubmission, startOrder: nextStart, previous: previous, handle: handle)
    linkStarted(index, in: queue)
    if operations[index].isTagged { listTags(of: index) }
    transition(index, toStartAloneOn: worker)
    return Spawn(taskPriority: queues[queue].taskPriority, worker: worker, first: first)
  }

  /// A worker for `queue`, whose task will run on the queue's task executor, if it has one.
  func newWorker(for queue: Int) -> Worker {
    Worker(queue: queue, taskExecutor: queues[queue].taskExecutor)
  }
}

extension OperationRecord {
  /// Whether this operation, new, may start on an idle queue in one step
  /// (`Scheduler.startOnIdle`): nothing waits on it, it waits on nothing, and it has no time
  /// trait to arm.
  var startsAlone: Bool {
    guard case .pending = phase else { return false }
    return !wasEnqueued && external == nil && extrasBox == nil && timeSlot < 0 && subscribers.isEmpty
      && unfinishedDependencies == 0 && !pauseHeld
  }

  /// Enqueues this new operation on `queue` and claims its body, in one access to the record
  /// (`Scheduler.startOnIdle`, which moves it to `.executing`); returns the worker's first step.
  mutating func startAlone(
    as index: Int, in queue: Int, order: UInt64, startOrder: UInt64, previous: Int, handle: AnyQueueOperation
  ) -> WorkerAction {
    guard let body = body.take() else {
      preconditionFailure("Internal inconsistency: \(id) was claimed twice")
    }
    wasEnqueued = true
    self.queue = queue
    self.order = order
    self.startOrder = startOrder
    enqueuedHandle = handle
    previousInQueue = previous
    return .run(operation: index, id: id, body: body)
  }
}

/// Time: deadlines, execution timeouts and timed waits, as timers in the value.
///
/// Each clock has a set of timers (`TimerQueue`): the system clock's (`systemTimers`) fires from the process's
/// one timer task (`TimerTask`), which the value commands through its effects (armed for the
/// earliest live entry, replaced when an earlier one is armed, ended when none is left); a
/// manual clock's (`manualClocks`) fire when its instant, kept here, is advanced
/// (``advanceManualClock(_:to:now:_:)``). What fires is decided under the lock; waiters, handlers
/// and tasks to cancel are effects, as everywhere else. An operation's deadline is its entry and
/// a mark in its record (`timeMarks`); only an operation with a timeout, early traits or a timed
/// waiter has more, in a table of the value's own (`timeStates`, by the record's `timeSlot`,
/// changed in place). The others pay a test per event (`hasTimeWork`), per start (`timeSlot`)
/// and per end (`timeMarks`).
extension Scheduler {
  // MARK: Time state

  /// `index`'s time state, if it has any (a copy: for reads of several fields).
  func time(of index: Int) -> OperationTime? {
    let slot = operations[index].timeSlot
    return slot >= 0 ? timeStates[Int(slot)] : nil
  }

  /// Changes `index`'s time state in place, giving it one first if it has none.
  mutating func modifyTime<Result>(of index: Int, _ change: (inout OperationTime) -> Result) -> Result {
    if operations[index].timeSlot < 0 {
      operations[index].timeMarks.insert(.hasState)
      // On its queue's clock; a time state made before it is added takes its queue's then.
      var time = OperationTime()
      if operations[index].queue >= 0 { time.clock = queues[operations[index].queue].clock }
      if let slot = freeTimeStates.popLast() {
        operations[index].timeSlot = slot
        timeStates[Int(slot)] = time
      } else {
        timeStates.append(time)
        operations[index].timeSlot = Int32(timeStates.count - 1)
      }
    }
    return change(&timeStates[Int(operations[index].timeSlot)])
  }

  /// Gives `index`'s time state back (its end, or its handle's release before it was added).
  /// The state is reset when the slot is taken again; what it holds is plain values (its
  /// waiters were resumed and let go of first).
  mutating func releaseTimeSlot(of index: Int) {
    freeTimeStates.append(operations[index].timeSlot)
    operations[index].timeSlot = -1
    operations[index].timeMarks.remove(.hasState)
  }

  /// `index`'s armed deadline and execution timeout (nanoseconds of its clock), by a search of
  /// its clock's timers: O(timers), for tests and diagnostics.
  func armedTimers(of index: Int) -> (deadline: Int64?, timeout: Int64?) {
    let slot = Int(operations[index].timeSlot)
    let queue = operations[index].queue
    let clock = slot >= 0 ? timeStates[slot].clock : queue >= 0 ? queues[queue].clock : 0
    let timers = clock == 0 ? systemTimers : manualClocks[clock]?.timers ?? TimerQueue()
    let deadline = (timers.runEntries + timers.heapEntries).first {
      $0.action == .deadline && Int($0.index) == index && isLive($0)
    }
    return (deadline?.at, slot >= 0 ? timeStates[slot].armedTimeout : nil)
  }

  /// Whether `index`'s deadline or timeout passed while it ran.
  func isTimedOut(_ index: Int) -> Bool {
    operations[index].timeMarks.contains(.timedOut)
  }

  // MARK: Clocks

  /// A manual clock was made (`QueueClock.makeManual()`): its instant starts at zero.
  mutating func registerManualClock(_ clock: UInt64) {
    manualClocks[clock] = ClockTimers()
  }

  /// A manual clock's current instant (0 for one never registered).
  func manualNow(of clock: UInt64) -> Int64 { manualClocks[clock]?.now ?? 0 }

  /// The current instant of `clock`: the system's (read through `now`), or a manual one's.
  func instant(of clock: UInt64, now: () -> SchedulerInstant) -> Int64 {
    clock == 0 ? now().nanoseconds : manualNow(of: clock)
  }

  // MARK: Arming

  /// `index`, just enqueued in `queue` (or a caller's handle to coalesced work there), has time
  /// state (traits given before it was added): its deadline is armed.
  @inline(never)
  mutating func armDeadline(of index: Int, on queue: Int, now: () -> SchedulerInstant) {
    let slot = Int(operations[index].timeSlot)
    timeStates[slot].clock = queues[queue].clock
    if let policy = timeStates[slot].traits.retry { beginRetries(of: index, policy) }
    armDeadline(of: index, on: queue, timeStates[slot].traits, now: now)
  }

  /// Arms `index`'s deadline, if `traits` has one, on `queue`'s clock: `index` was just
  /// enqueued there (or is a caller's handle to coalesced work there). One already past ends it
  /// when the event settles (not in the middle of a batch's submission).
  mutating func armDeadline(
    of index: Int, on queue: Int, _ traits: TimeTraits, now: () -> SchedulerInstant
  ) {
    let inherited = queues[queue].isGroup ? groupRecords[queue]!.deadline : nil
    guard traits.hasDeadline || inherited != nil else { return }
    let clock = queues[queue].clock
    traits.checkClock(
      clock, operation: operations[index].name ?? operations[index].id.description, queue: queues[queue].name)
    var at = min(traits.deadline ?? .max, inherited ?? .max)
    var clockNow: Int64?
    if let after = traits.deadlineAfterSubmission {
      let current = instant(of: clock, now: now)
      clockNow = current
      at = min(at, SaturatingTime.adding(current, after))
    }
    if operations[index].retrySlot >= 0 { modifyRetryExtras(of: index) { $0.deadline = at } }
    if operations[index].timeSlot >= 0 { timeStates[Int(operations[index].timeSlot)].deadline = at }
    if at <= (clockNow ?? instant(of: clock, now: now)) {
      pendingTimes.append(PendingTime(index: index, id: operations[index].id, started: false))
      hasTimeWork = true
    } else {
      operations[index].timeMarks.insert(.deadlineArmed)
      arm(TimerEntry(at: at, index: index, id: operations[index].id, action: .deadline), on: clock)
    }
  }

  /// `index`'s body (or external work) just started and it may have an execution timeout:
  /// armed when the event settles, which knows the time.
  @inline(never)
  mutating func noteTimedStart(_ index: Int) {
    guard timeStates[Int(operations[index].timeSlot)].traits.timeout != nil else { return }
    pendingTimes.append(PendingTime(index: index, id: operations[index].id, started: true))
    hasTimeWork = true
  }

  /// Arms the execution timeouts of bodies the current event started, ends operations added with
  /// a deadline already past, and keeps the timer task in step with the system clock's earliest
  /// live timer. Part of `settle`.
  @inline(never)
  mutating func settleTime(now: () -> SchedulerInstant, _ effects: inout Effects) {
    hasTimeWork = false
    if !impossibleCosts.isEmpty { endImpossibleCosts(&effects) }
    if !pendingTimes.isEmpty {
      // Swapped out, and back once emptied, so that the next event reuses its storage.
      var pending: [PendingTime] = []
      swap(&pending, &pendingTimes)
      var systemNow: Int64?
      for entry in pending {
        guard operations[entry.index].isLive, operations[entry.index].id == entry.id,
          !operations[entry.index].phase.hasEnded
        else { continue }
        guard entry.started else {
          // Its deadline had passed when it was added.
          timeOut(entry.index, .deadline, &effects)
          continue
        }
        if operations[entry.index].retrySlot >= 0 { settleFirstStart(of: entry.index, now: now) }
        guard operations[entry.index].timeSlot >= 0 else { continue }
        let slot = Int(operations[entry.index].timeSlot)
        guard let timeout = timeStates[slot].traits.timeout, timeStates[slot].armedTimeout == nil else {
          continue
        }
        let clock = timeStates[slot].clock
        if clock == 0, systemNow == nil { systemNow = now().nanoseconds }
        // A manual clock between an advance's stops: from where the advance ends.
        let started = clock == 0 ? systemNow! : manualClocks[clock]?.advancingTo ?? manualNow(of: clock)
        let at = SaturatingTime.adding(started, timeout)
        timeStates[slot].armedTimeout = at
        arm(TimerEntry(at: at, index: entry.index, id: entry.id, action: .executionTimeout), on: clock)
      }
      pending.removeAll(keepingCapacity: true)
      if pendingTimes.isEmpty { swap(&pending, &pendingTimes) }
    }
    if systemTimersChanged { commandTimerTask(&effects) }
  }

  /// Adds a live entry to `clock`'s heap (a manual clock that was never registered has none: it
  /// would never fire).
  mutating func arm(_ entry: TimerEntry, on clock: UInt64) {
    if clock == 0 {
      systemTimers.insert(entry)
      systemTimers.live += 1
      // The task needs a new command only for an earlier instant than it sleeps until.
      if armedSystemTimer.map({ entry.at < $0 }) ?? true {
        systemTimersChanged = true
        hasTimeWork = true
      }
    } else if manualClocks[clock] != nil {
      manualClocks[clock]!.timers.insert(entry)
      manualClocks[clock]!.timers.live += 1
    }
  }

  /// One fewer live entry on `clock` (an operation ended, or a waiter was resumed, before it
  /// fired).
  mutating func unarm(on clock: UInt64) {
    if clock == 0 {
      systemTimers.live -= 1
      // The task needs a new command only once none is live; stale entries go in bulk.
      if systemTimers.live == 0 || systemTimers.needsCompaction {
        systemTimersChanged = true
        hasTimeWork = true
      }
    } else if manualClocks[clock] != nil {
      manualClocks[clock]!.timers.live -= 1
    }
  }

  /// Drops the stale entries at the front of `clock`'s run (an operation that ended in the
  /// order its timers were armed leaves its own there): each is dropped once, O(1).
  mutating func dropStaleFront(on clock: UInt64) {
    if clock == 0 {
      while let front = systemTimers.frontOfRun, !isLive(front) { systemTimers.dropFrontOfRun() }
    } else if manualClocks[clock] != nil {
      while let front = manualClocks[clock]!.timers.frontOfRun, !isLive(front) {
        manualClocks[clock]!.timers.dropFrontOfRun()
      }
    }
  }

  /// Whether `entry` still applies: its operation has not ended and still has it armed.
  func isLive(_ entry: TimerEntry) -> Bool {
    if entry.action == .permits { return isLivePermitTimer(entry) }
    let index = Int(entry.index)
    guard index < operations.count, operations[index].isLive else { return false }
    switch entry.action {
    case .deadline:
      // Armed once in an operation's life: its mark says whether the entry still applies.
      return operations[index].id.rawValue == entry.key
        && operations[index].timeMarks.contains(.deadlineArmed)
    case .executionTimeout:
      let slot = Int(operations[index].timeSlot)
      return operations[index].id.rawValue == entry.key && slot >= 0
        && timeStates[slot].armedTimeout == entry.at
    case .waitTimeout:
      let slot = Int(operations[index].timeSlot)
      return slot >= 0 && timeStates[slot].timedWaiters.contains { $0.token == entry.key }
    case .retry:
      // One backoff at a time: the mark says whether it still applies.
      return operations[index].id.rawValue == entry.key && operations[index].timeMarks.contains(.inBackoff)
    case .permits:
      return isLivePermitTimer(entry)
    }
  }

  /// Tells the timer task to sleep until the system clock's earliest timer, or to end when none
  /// is live. Stale entries are not dropped one by one as operations end (each drop is
  /// O(log n)): they go when they surface while firing, before the task is armed earlier, and in
  /// bulk once they outnumber the live ones; the task may wake once for a stale instant.
  private mutating func commandTimerTask(_ effects: inout Effects) {
    systemTimersChanged = false
    if systemTimers.needsCompaction { compactSystemTimers() }
    if systemTimers.live == 0 {
      if !systemTimers.isEmpty { systemTimers = TimerQueue() }  // only stale entries: let them go
      if armedSystemTimer != nil {
        armedSystemTimer = nil
        timerGeneration += 1
        if commandsTimerTask { effects.commandTimer(.disarm(generation: timerGeneration)) }
      }
      return
    }
    guard var first = systemTimers.first, armedSystemTimer.map({ first.at < $0 }) ?? true else { return }
    // About to arm earlier: not for a stale entry.
    while !isLive(first) {
      _ = systemTimers.popFirst()
      guard let next = systemTimers.first else { return }
      first = next
    }
    if armedSystemTimer.map({ first.at < $0 }) ?? true {
      armedSystemTimer = first.at
      timerGeneration += 1
      if commandsTimerTask { effects.commandTimer(.arm(at: first.at, generation: timerGeneration)) }
    }
  }

  /// Rebuilds the system clock's heap from its live entries (no closure over `self`, which
  /// would copy the whole value). O(n).
  private mutating func compactSystemTimers() {
    var run: [TimerEntry] = []
    var heap: [TimerEntry] = []
    for entry in systemTimers.runEntries where isLive(entry) { run.append(entry) }
    for entry in systemTimers.heapEntries where isLive(entry) { heap.append(entry) }
    assert(
      run.count + heap.count == systemTimers.live,
      "Internal inconsistency: the system timers' live count is off")
    systemTimers = TimerQueue(run: run, heap: heap)
  }

  // MARK: Firing

  /// The timer task woke: every system timer due at `now` fires, in instant order.
  mutating func timersFired(now: () -> SchedulerInstant, _ effects: inout Effects) {
    armedSystemTimer = nil
    fireDue(on: 0, through: now().nanoseconds, &effects)
    systemTimersChanged = true
    hasTimeWork = true
    settle(now: now, &effects)
  }

  /// A manual clock moves to `target` (nanoseconds since it was made): the timers due by then
  /// fire in instant order, each with the clock at its instant; then the clock reads `target`,
  /// and what those ends made ready starts. Returns whether the clock stopped short of `target`
  /// (the caller calls again, once it has performed this event's effects): it stops at each
  /// instant a queue's head waits for permits until, so that they are granted then, as the
  /// system clock's timers would (`Scheduler+RateLimits.swift`).
  @discardableResult
  mutating func advanceManualClock(
    _ clock: UInt64, to target: Int64, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> Bool {
    guard let current = manualClocks[clock]?.now else { return false }
    guard target >= current else {
      fatalError(
        "ActorQueue: a manual clock cannot go back (it is at \(current) ns, asked for \(target) ns); "
          + "advance each manual clock from one task at a time, to instants after its now")
    }
    var stop = target
    // A permit timer at or before the clock's instant is one a deferred arbitration has not
    // re-armed yet: never a stop, so that every call moves the clock.
    if !limitedQueues.isEmpty, let permits = earliestPermitTimer(on: clock), permits > current {
      stop = min(stop, permits)
    }
    // Until the last stop, and through the slices of each, starts are claimed in their event.
    startsEagerly = stop < target
    manualClocks[clock]?.advancingTo = stop < target ? target : nil
    fireDue(on: clock, through: stop, &effects)
    manualClocks[clock]?.now = stop
    settle(now: now, &effects)
    return stop < target
  }

  /// The earliest entry of `clock`'s heap, live or stale.
  private func firstTimer(of clock: UInt64) -> TimerEntry? {
    clock == 0 ? systemTimers.first : manualClocks[clock]?.timers.first
  }

  /// Fires `clock`'s live timers due at or before `instant`; those at `SaturatingTime.never`
  /// never fire (a manual clock moved that far leaves them armed). A timer's ends are done
  /// before the next timer fires, as the order of the two decides what the second does (an op
  /// whose dependent a first deadline failed): on a manual clock, at once; the system clock's
  /// task stops there and fires the rest when it is woken again, once the caller's slices are done.
  private mutating func fireDue(on clock: UInt64, through instant: Int64, _ effects: inout Effects) {
    while let first = firstTimer(of: clock), first.at <= instant, first.at != SaturatingTime.never {
      let live = isLive(first)
      if clock == 0 {
        _ = systemTimers.popFirst()
        if live { systemTimers.live -= 1 }
      } else {
        _ = manualClocks[clock]!.timers.popFirst()
        if live {
          manualClocks[clock]!.timers.live -= 1
          manualClocks[clock]!.now = max(manualClocks[clock]!.now, first.at)
        }
      }
      guard live else { continue }
      fire(first, &effects)
      guard hasBulk, !bulk.isDone, let next = firstTimer(of: clock), next.at <= instant else { continue }
      if clock == 0 { return }  // the timer task is re-armed for the rest: see `timersFired`
      finishReleasesAndEnds(&effects)
    }
  }

  private mutating func fire(_ entry: TimerEntry, _ effects: inout Effects) {
    let index = Int(entry.index)
    switch entry.action {
    case .deadline:
      operations[index].timeMarks.remove(.deadlineArmed)
      timeOut(index, .deadline, &effects)
    case .executionTimeout:
      modifyTime(of: index) { $0.armedTimeout = nil }
      timeOut(index, .executionTimeout, &effects)
    case .waitTimeout:
      let waiter = modifyTime(of: index) { time in
        time.timedWaiters.firstIndex { $0.token == entry.key }.map { time.timedWaiters.remove(at: $0) }
      }
      if let waiter { effects.complete { waiter.continuation.resume(returning: false) } }
    case .retry:
      backoffEnded(index, &effects)
    case .permits:
      permitTimerFired(entry)
    }
  }

  /// `index`'s deadline or execution timeout passed. Not started: it ends `.failed` at once
  /// (a legacy operation is cancelled and started so that it can finish, and ends `.failed` when
  /// it has). Started: its task is cancelled, as `cancel()` does, and it ends `.failed` when its
  /// body returns, unless it returns a value. Nothing happens if it was cancelled first.
  mutating func timeOut(_ index: Int, _ kind: OperationTimeoutError.Kind, _ effects: inout Effects) {
    // An operation waiting out a retry's backoff had started.
    let started =
      !operations[index].phase.hasNotStarted
      || (operations[index].retrySlot >= 0 && retryStates[Int(operations[index].retrySlot)].attempt > 0)
    let error = OperationTimeoutError(
      kind: kind, operationID: operations[index].id, operationName: operations[index].name,
      hadStarted: started)
    if operations[index].leader >= 0 {
      // A caller's handle to coalesced work: only this handle ends.
      if case .following = operations[index].phase { endFollower(index, as: .failed, error: error, &effects) }
      return
    }
    guard !operations[index].cancelRequested, !isTimedOut(index) else { return }
    let queue = operations[index].queue
    if queue >= 0, !queues[queue].subscribers.isEmpty {
      emit(
        .detail(
          id: operations[index].id, name: operations[index].name,
          detail: kind == .deadline ? .deadlineExpired : .timedOut),
        in: queue, &effects)
    }
    switch operations[index].phase {
    case .pending, .ready:
      if startsWhenCancelled(index), queue >= 0 {
        markTimedOut(index, kind, started: started)
        cancelWaiting(index, &effects)
      } else {
        terminate(index, as: .failed, error: error, &effects)
      }
    // Started: its task is cancelled as `cancel()` would, but `isCancelled` stays as it was.
    // (Where the toolchain has SE-0526, the task's cancellation would carry `.deadlineExpired`.)
    case .executing(.worker(let worker)):
      markTimedOut(index, kind, started: started)
      cancelTask(of: index, worker, &effects)
    case .paused(let body), .resumed(let body):
      markTimedOut(index, kind, started: started)
      cancelPaused(index, &effects)
      cancelTask(of: index, body.worker, &effects)
    case .executing(.external):
      markTimedOut(index, kind, started: started)
      if let external = operations[index].external { effects.runExternalCancel(external) }
    case .detached, .following, .ended:
      return
    case .modifying:
      preconditionFailure("Internal inconsistency: \(operations[index].id) timed out while its phase changes")
    }
  }

  /// A limit passed for `index` before it ended: it ends `.failed` with a timeout error.
  private mutating func markTimedOut(_ index: Int, _ kind: OperationTimeoutError.Kind, started: Bool) {
    operations[index].timeMarks.insert(.timedOut)
    if kind == .executionTimeout { operations[index].timeMarks.insert(.byExecutionTimeout) }
    if started { operations[index].timeMarks.insert(.timedOutAfterStart) }
  }

  // MARK: The end

  /// `index` ended with time marks: its armed timers go stale (its own entry leaves the front of
  /// its clock's run at once). Called before it leaves `queue` (-1: none), whose record a
  /// released queue frees then.
  @inline(never)
  mutating func endTimers(of index: Int, queue: Int, _ effects: inout Effects) {
    let marks = operations[index].timeMarks
    operations[index].timeMarks = marks.intersection(.hasState)
    let slot = Int(operations[index].timeSlot)
    if marks.contains(.retries) { endRetries(of: index, &effects) }
    if marks.contains(.inBackoff) {
      unarm(on: queues[queue].clock)
      dropStaleFront(on: queues[queue].clock)
    }
    if marks.contains(.deadlineArmed) {
      // Armed when it was enqueued: on its queue's clock, or a time state's (a caller's handle
      // to coalesced work is in no queue).
      let clock = slot >= 0 ? timeStates[slot].clock : queues[queue].clock
      unarm(on: clock)
      dropStaleFront(on: clock)
    }
    if slot >= 0, timeStates[slot].armedTimeout != nil {
      timeStates[slot].armedTimeout = nil  // stale now, so that its entry can leave the run
      unarm(on: timeStates[slot].clock)
      dropStaleFront(on: timeStates[slot].clock)
    }
  }

  /// `index` ended with a time state: it is given back, and its timed waiters return `true`
  /// (after its completion handlers, as its other waiters).
  @inline(never)
  mutating func endTimedWaiters(of index: Int, _ effects: inout Effects) {
    let slot = Int(operations[index].timeSlot)
    let waiters = timeStates[slot].timedWaiters
    timeStates[slot].timedWaiters = []
    releaseConditions(of: index, into: &effects.garbage)
    releaseTimeSlot(of: index)
    for waiter in waiters {
      unarm(on: waiter.clock)
      effects.complete { waiter.continuation.resume(returning: true) }
    }
  }

  /// The error an operation whose deadline or timeout passed while it ran ends with, if it did.
  @inline(never)
  func timeoutError(of index: Int) -> OperationTimeoutError? {
    let marks = operations[index].timeMarks
    guard marks.contains(.timedOut) else { return nil }
    return OperationTimeoutError(
      kind: marks.contains(.byExecutionTimeout) ? .executionTimeout : .deadline,
      operationID: operations[index].id,
      operationName: operations[index].name, hadStarted: marks.contains(.timedOutAfterStart))
  }

  // MARK: Timed waits

  /// A caller waits for `index` to end for at most `timeout` on its queue's clock (the system
  /// clock while it is in no queue). Returns `false`, registering nothing, if it has ended;
  /// otherwise `continuation` is resumed with `true` at its end or `false` when the time is up.
  mutating func addTimedWaiter(
    _ continuation: CheckedContinuation<Bool, Never>, to index: Int, timeout: Duration,
    now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> Bool {
    guard !operations[index].phase.hasEnded else { return false }
    let queue = operations[index].queue
    let clock = queue >= 0 ? queues[queue].clock : (time(of: index)?.clock ?? 0)
    nextWaiterToken += 1
    let token = nextWaiterToken
    let at = SaturatingTime.adding(instant(of: clock, now: now), timeout.wholeNanoseconds)
    modifyTime(of: index) {
      $0.timedWaiters.append(TimedWaiter(token: token, clock: clock, continuation: continuation))
    }
    arm(TimerEntry(at: at, index: index, waiter: token), on: clock)
    hasTimeWork = true
    settle(now: now, &effects)
    return true
  }
}

/// Time work left to the end of the current event (`settleTime`).
struct PendingTime: Sendable {
  let index: Int
  let id: OperationID
  /// The body started: arm its execution timeout. Otherwise it was added with a deadline already
  /// past: it ends.
  let started: Bool
}

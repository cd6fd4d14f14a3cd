/// Time: deadlines, execution timeouts and timed waits, as timers in the value.
///
/// Each clock has a heap of timers (`clocks`): the system clock's (key 0) fires from the process's
/// one timer task (`TimerTask`), which the value commands through its effects (armed for the
/// earliest live entry, replaced when an earlier one is armed, ended when none is left); a
/// manual clock's fire when its instant, kept here, is advanced (``advanceManualClock(_:to:now:_:)``).
/// What fires is decided under the lock; waiters, handlers and tasks to cancel are effects, as
/// everywhere else. Only operations with a time trait (or a timed waiter) carry any of this, in
/// their extras; the others pay one test per event (`hasTimeWork`).
extension Scheduler {
  // MARK: Clocks

  /// A manual clock was made (`QueueClock.makeManual()`): its instant starts at zero.
  mutating func registerManualClock(_ clock: UInt64) {
    clocks[clock] = ClockTimers()
  }

  /// A manual clock's current instant (0 for one never registered).
  func manualNow(of clock: UInt64) -> Int64 { clocks[clock]?.now ?? 0 }

  /// The current instant of `clock`: the system's (read once through `now`), or a manual one's.
  private func instant(of clock: UInt64, now: () -> SchedulerInstant) -> Int64 {
    clock == 0 ? now().nanoseconds : manualNow(of: clock)
  }

  // MARK: Arming

  /// `index`, just enqueued in `queue` (or a caller's handle to coalesced work there), has time
  /// traits: its deadline is armed when the event settles.
  mutating func noteTimedSubmission(_ index: Int, on queue: Int) {
    let clock = queues[queue].clock
    if let requested = operations[index].extras?.time?.requestedDeadline, requested.clock.id != clock {
      fatalError(
        "ActorQueue: \(operations[index].name ?? operations[index].id.description) has a deadline of the "
          + "\(requested.clock) clock, but its queue \(queues[queue].name.map { "\"\($0)\"" } ?? "") runs on the "
          + "\(QueueClock(id: clock)) clock; make the deadline with that queue's deadline(in:)")
    }
    operations[index].extras!.time!.clock = clock
    pendingTimes.append(PendingTime(index: index, id: operations[index].id, started: false))
    hasTimeWork = true
  }

  /// `index`'s body (or external work) just started and it has an execution timeout: armed when
  /// the event settles.
  mutating func noteTimedStart(_ index: Int) {
    guard operations[index].extras?.time?.timeout != nil else { return }
    pendingTimes.append(PendingTime(index: index, id: operations[index].id, started: true))
    hasTimeWork = true
  }

  /// Arms what the current event noted, and keeps the timer task in step with the system
  /// clock's earliest live timer. Part of `settle`: a deadline already past ends its operation
  /// here.
  mutating func settleTime(now: () -> SchedulerInstant, _ effects: inout Effects) {
    hasTimeWork = false
    if !pendingTimes.isEmpty {
      let pending = pendingTimes
      pendingTimes = []
      var systemNow: Int64?
      for entry in pending {
        guard operations[entry.index].isLive, operations[entry.index].id == entry.id,
          !operations[entry.index].phase.hasEnded, let time = operations[entry.index].extras?.time
        else { continue }
        let clockNow: Int64
        if time.clock == 0 {
          if systemNow == nil { systemNow = now().nanoseconds }
          clockNow = systemNow!
        } else {
          clockNow = manualNow(of: time.clock)
        }
        if entry.started {
          guard let timeout = time.timeout, time.armedTimeout == nil else { continue }
          let at = clockNow &+ timeout
          operations[entry.index].extras!.time!.armedTimeout = at
          arm(
            TimerEntry(at: at, sequence: 0, index: entry.index, id: entry.id, action: .executionTimeout),
            on: time.clock)
        } else {
          var at: Int64?
          if let requested = time.requestedDeadline { at = requested.nanoseconds }
          if let after = time.deadlineAfterSubmission {
            at = min(at ?? .max, clockNow &+ after.wholeNanoseconds)
          }
          guard let at else { continue }
          if at <= clockNow {
            timeOut(entry.index, .deadline, &effects)
          } else {
            operations[entry.index].extras!.time!.armedDeadline = at
            arm(
              TimerEntry(at: at, sequence: 0, index: entry.index, id: entry.id, action: .deadline),
              on: time.clock)
          }
        }
      }
    }
    if systemTimersChanged { commandTimerTask(&effects) }
  }

  /// Adds a live entry to `clock`'s heap.
  private mutating func arm(_ entry: TimerEntry, on clock: UInt64) {
    var entry = entry
    nextTimerSequence += 1
    entry.sequence = nextTimerSequence
    clocks[clock, default: ClockTimers()].heap.insert(entry)
    clocks[clock]!.heap.live += 1
    if clock == 0 { systemTimersChanged = true }
  }

  /// One fewer live entry on `clock` (an operation ended, or a waiter was resumed, before it fired).
  private mutating func unarm(on clock: UInt64) {
    clocks[clock]?.heap.live -= 1
    if clock == 0 {
      systemTimersChanged = true
      hasTimeWork = true
    }
  }

  /// Whether `entry` still applies: its operation has not ended and still has it armed.
  func isLive(_ entry: TimerEntry) -> Bool {
    guard entry.index < operations.count, operations[entry.index].isLive,
      operations[entry.index].id == entry.id,
      operations[entry.index].extrasBox != nil, let time = operations[entry.index].extras?.time
    else { return false }
    switch entry.action {
    case .deadline: return time.armedDeadline == entry.at
    case .executionTimeout: return time.armedTimeout == entry.at
    case .waitTimeout: return time.timedWaiters.contains { $0.token == entry.token }
    }
  }

  /// Tells the timer task to sleep until the system clock's earliest live timer, or to end when
  /// none is left; drops stale entries first.
  private mutating func commandTimerTask(_ effects: inout Effects) {
    systemTimersChanged = false
    guard var timers = clocks.removeValue(forKey: 0) else { return }
    while let first = timers.heap.first, !isLive(first) { _ = timers.heap.popFirst() }
    if timers.heap.needsCompaction { timers.heap.compact(keeping: { isLive($0) }) }
    if timers.heap.live == 0 {
      assert(timers.heap.isEmpty || timers.heap.entries.allSatisfy { !isLive($0) })
      if armedSystemTimer != nil {
        armedSystemTimer = nil
        timerGeneration += 1
        effects.commandTimer(.disarm(generation: timerGeneration))
      }
      return  // an empty heap keeps no storage
    }
    if let first = timers.heap.first, armedSystemTimer.map({ first.at < $0 }) ?? true {
      armedSystemTimer = first.at
      timerGeneration += 1
      effects.commandTimer(.arm(at: first.at, generation: timerGeneration))
    }
    clocks[0] = timers
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
  /// and what those ends made ready starts.
  mutating func advanceManualClock(
    _ clock: UInt64, to target: Int64, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    guard let current = clocks[clock]?.now else { return }
    precondition(
      target >= current,
      "ActorQueue: a manual clock cannot go back (it is at \(current) ns, asked for \(target) ns)")
    fireDue(on: clock, through: target, &effects)
    clocks[clock]?.now = target
    settle(now: now, &effects)
  }

  /// Fires `clock`'s live timers due at or before `instant`.
  private mutating func fireDue(on clock: UInt64, through instant: Int64, _ effects: inout Effects) {
    while let first = clocks[clock]?.heap.first, first.at <= instant {
      _ = clocks[clock]!.heap.popFirst()
      guard isLive(first) else { continue }
      clocks[clock]!.heap.live -= 1
      if clock != 0 { clocks[clock]!.now = max(clocks[clock]!.now, first.at) }
      fire(first, &effects)
    }
  }

  private mutating func fire(_ entry: TimerEntry, _ effects: inout Effects) {
    let index = entry.index
    switch entry.action {
    case .deadline:
      operations[index].extras!.time!.armedDeadline = nil
      timeOut(index, .deadline, &effects)
    case .executionTimeout:
      operations[index].extras!.time!.armedTimeout = nil
      timeOut(index, .executionTimeout, &effects)
    case .waitTimeout:
      guard
        let position = operations[index].extras!.time!.timedWaiters.firstIndex(where: {
          $0.token == entry.token
        })
      else { return }
      let waiter = operations[index].extras!.time!.timedWaiters.remove(at: position)
      effects.complete { waiter.continuation.resume(returning: false) }
    }
  }

  /// `index`'s deadline or execution timeout passed. Not started: it ends `.failed` at once
  /// (a legacy operation is cancelled and started so that it can finish, and ends `.failed` when
  /// it has). Started: its task is cancelled, as `cancel()` does, and it ends `.failed` when its
  /// body returns, unless it returns a value. Nothing happens if it was cancelled first.
  mutating func timeOut(_ index: Int, _ kind: OperationTimeoutError.Kind, _ effects: inout Effects) {
    let started = !operations[index].phase.hasNotStarted
    let error = OperationTimeoutError(
      kind: kind, operationID: operations[index].id, operationName: operations[index].name,
      hadStarted: started)
    if operations[index].leader >= 0 {
      // A caller's handle to coalesced work: only this handle ends.
      if case .following = operations[index].phase { endFollower(index, as: .failed, error: error, &effects) }
      return
    }
    guard !operations[index].cancelRequested, operations[index].extras?.time?.timedOut == nil else { return }
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
        operations[index].extras!.time!.timedOut = error
        cancelWaiting(index, &effects)
      } else {
        terminate(index, as: .failed, error: error, &effects)
      }
    // Started: its task is cancelled as `cancel()` would, but `isCancelled` stays as it was.
    case .executing(.worker(let worker)):
      operations[index].extras!.time!.timedOut = error
      cancelTask(of: index, worker, &effects)
    case .paused(let body), .resumed(let body):
      operations[index].extras!.time!.timedOut = error
      cancelPaused(index, &effects)
      cancelTask(of: index, body.worker, &effects)
    case .executing(.external):
      operations[index].extras!.time!.timedOut = error
      if let external = operations[index].external { effects.runExternalCancel(external) }
    case .detached, .following, .ended:
      return
    case .modifying:
      preconditionFailure("Internal inconsistency: \(operations[index].id) timed out while its phase changes")
    }
  }

  // MARK: The end

  /// `index` ended with time state: its armed timers go stale, and its timed waiters return
  /// `true` (after its completion handlers, as its other waiters).
  @inline(never)
  mutating func endTime(of index: Int, _ effects: inout Effects) {
    guard var time = operations[index].extras?.time else { return }
    if time.armedDeadline != nil { unarm(on: time.clock) }
    if time.armedTimeout != nil { unarm(on: time.clock) }
    time.armedDeadline = nil
    time.armedTimeout = nil
    let waiters = time.timedWaiters
    time.timedWaiters = []
    operations[index].extras!.time = time
    for waiter in waiters {
      unarm(on: waiter.clock)
      effects.complete { waiter.continuation.resume(returning: true) }
    }
  }

  /// The error an operation whose deadline or timeout passed while it ran ends with, if it did.
  func timeoutError(of index: Int) -> OperationTimeoutError? {
    guard operations[index].extrasBox != nil else { return nil }
    return operations[index].extras?.time?.timedOut
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
    let clock = queue >= 0 ? queues[queue].clock : (operations[index].extras?.time?.clock ?? 0)
    nextWaiterToken += 1
    let token = nextWaiterToken
    let at = instant(of: clock, now: now) &+ timeout.wholeNanoseconds
    if operations[index].extras == nil { operations[index].extras = OperationExtras() }
    if operations[index].extras!.time == nil { operations[index].extras!.time = OperationTime() }
    operations[index].extras!.time!.timedWaiters.append(
      TimedWaiter(token: token, clock: clock, continuation: continuation))
    arm(
      TimerEntry(
        at: at, sequence: 0, index: index, id: operations[index].id, action: .waitTimeout, token: token),
      on: clock)
    hasTimeWork = true
    settle(now: now, &effects)
    return true
  }
}

/// A time trait to arm when the current event settles.
struct PendingTime: Sendable {
  let index: Int
  let id: OperationID
  /// The body started (arm its execution timeout); otherwise it was submitted (its deadline).
  let started: Bool
}

/// A retried operation's state beyond its record, in `Scheduler.retryStates` (its record's
/// `retrySlot`): 24 bytes, made when it is added, kept until its record is freed so that the
/// handle's `attemptCount` stays readable; its policy (the caller's closures) goes at its end.
/// What only a custom policy or a deadline needs is in `Scheduler.retryExtras`.
struct RetryState: Sendable {
  /// `nil` once the operation ended.
  var policy: RetryPolicy?
  /// The last delay waited, for decorrelated backoff (nanoseconds).
  var previousDelay: Int64 = 0
  /// Attempts started.
  var attempt: Int32 = 0
  /// It has an entry in `Scheduler.retryExtras`.
  var hasExtras = false
}

/// A retried operation's state that only a custom policy (its context) or a deadline needs.
struct RetryExtras: Sendable {
  /// The operation's deadline, on the queue's clock (`nil`: none; `SaturatingTime.never`: one
  /// that never comes).
  var deadline: Int64?
  /// The instant the first attempt started, on the queue's clock (`.min` until it is settled).
  var firstStart: Int64 = .min
  /// A custom policy's earlier errors, oldest first, at most `keptErrors`.
  var errors: [any Error] = []

  static let keptErrors = 8

  /// Whether an attempt that starts at `at` starts before the deadline: always without one, or
  /// with one that never comes (even a backoff too long to represent, which never ends either).
  func startsBeforeDeadline(_ at: Int64) -> Bool {
    guard let deadline, deadline != SaturatingTime.never else { return true }
    return at < deadline
  }
}

/// What follows a failed attempt that may be retried.
enum RetryStep {
  /// The worker asks the policy, outside the lock (it runs the caller's code).
  case ask(PendingRetry)
  /// Decided in the step that ended the attempt: run again after `delay` nanoseconds.
  case again(error: any Error, delay: Int64)
}

/// The generator of jitter the scheduler draws itself (SplitMix64): seeded once from the
/// system's, then a few instructions per draw and no system call under the lock. Jitter needs
/// spread, not secrecy.
struct JitterRandom: RandomNumberGenerator, Sendable {
  private var state = UInt64.random(in: .min ... .max)

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// A failed attempt whose policy the worker asks, outside the lock, before it reports the
/// decision (``Scheduler/retryDecided(_:delay:worker:queue:now:_:)``). The operation keeps its
/// slot meanwhile: a cancellation or a deadline in between is seen by the report.
final class PendingRetry: Sendable {
  let index: Int
  let id: OperationID
  /// The attempt's outcome, the operation's if the decision is to stop.
  let outcome: OutcomeBox
  let policy: RetryPolicy
  let context: RetryContext
  let previousDelay: Int64

  init(
    index: Int, id: OperationID, outcome: OutcomeBox, policy: RetryPolicy, context: RetryContext,
    previousDelay: Int64
  ) {
    self.index = index
    self.id = id
    self.outcome = outcome
    self.policy = policy
    self.context = context
    self.previousDelay = previousDelay
  }

  /// The policy's answer, in nanoseconds (`nil`: stop). Runs the user's code: never under the lock.
  func decide() -> Int64? {
    policy.delay(after: context, previousDelay: previousDelay)
  }
}

extension Scheduler {
  // MARK: The state

  /// Gives `index` a retry state, when it is added to its queue (before its deadline is armed,
  /// which records the instant here).
  mutating func beginRetries(of index: Int, _ policy: RetryPolicy) {
    guard operations[index].external == nil else {
      let name = operations[index].name ?? operations[index].id.description
      fatalError(
        "ActorQueue: \(name) is legacy work (an Operation or other externally completed work), which cannot run "
          + "twice: .retry cannot apply to it; retry inside the work, or add a body that makes new work per attempt"
      )
    }
    guard operations[index].retrySlot < 0, operations[index].body != nil else { return }
    takeRetrySlot(for: index, RetryState(policy: policy))
    operations[index].timeMarks.insert(.retries)
    if policy.keepsErrors { modifyRetryExtras(of: index) { _ in } }
  }

  /// Changes the extras of `index`'s retry state, made at first use.
  mutating func modifyRetryExtras<Result>(of index: Int, _ change: (inout RetryExtras) -> Result) -> Result {
    let slot = operations[index].retrySlot
    retryStates[Int(slot)].hasExtras = true
    return change(&retryExtras[slot, default: RetryExtras()])
  }

  /// The extras of `index`'s retry state (defaults when it has none).
  func retryExtras(of index: Int) -> RetryExtras {
    let slot = operations[index].retrySlot
    guard retryStates[Int(slot)].hasExtras else { return RetryExtras() }
    return retryExtras[slot] ?? RetryExtras()
  }

  private mutating func takeRetrySlot(for index: Int, _ state: RetryState) {
    if let slot = freeRetryStates.popLast() {
      operations[index].retrySlot = slot
      retryStates[Int(slot)] = state
    } else {
      retryStates.append(state)
      operations[index].retrySlot = Int32(retryStates.count - 1)
    }
  }

  /// A caller's handle to coalesced work ends: it keeps the work's attempt count, readable after
  /// the work's record is gone (a state with no policy, only for work that started).
  mutating func keepAttempts(ofFollower follower: Int, leader: Int) {
    let count = attemptCount(of: leader)
    guard count > 0, operations[follower].retrySlot < 0 else { return }
    takeRetrySlot(for: follower, RetryState(policy: nil, attempt: Int32(count)))
  }

  /// At its end: what the user owns leaves the state, released after unlocking.
  @inline(never)
  mutating func endRetries(of index: Int, _ effects: inout Effects) {
    let slot = operations[index].retrySlot
    if let policy = retryStates[Int(slot)].policy.take() { effects.garbage.releaseLater(policy) }
    if retryStates[Int(slot)].hasExtras, let extras = retryExtras.removeValue(forKey: slot) {
      retryStates[Int(slot)].hasExtras = false
      if !extras.errors.isEmpty { effects.garbage.releaseLater(extras.errors) }
    }
  }

  /// When its record is freed.
  mutating func freeRetrySlot(of index: Int) {
    let slot = operations[index].retrySlot
    if retryStates[Int(slot)].hasExtras { retryExtras[slot] = nil }  // an ended state's holds no errors
    retryStates[Int(slot)] = RetryState()
    freeRetryStates.append(slot)
    operations[index].retrySlot = -1
  }

  /// Bodies started by `index` (0 before its first; 1 once started, without a retry). A claim
  /// whose conditions ended or deferred the operation started no body (its `startOrder` is 0).
  func attemptCount(of index: Int) -> Int {
    let slot = Int(operations[index].retrySlot)
    if slot >= 0 { return Int(retryStates[slot].attempt) }
    if operations[index].leader >= 0 {
      return operations[index].phase.hasEnded ? 0 : attemptCount(of: operations[index].leader)
    }
    // A claimed body still in its record waits for its conditions' answer.
    return operations[index].startOrder > 0 && operations[index].body == nil ? 1 : 0
  }

  /// The instant of `index`'s armed backoff, if it waits one out (for tests: O(timers)).
  func armedBackoff(of index: Int) -> Int64? {
    guard operations[index].timeMarks.contains(.inBackoff) else { return nil }
    let clock = retryClock(of: index)
    let timers = clock == 0 ? systemTimers : manualClocks[clock]?.timers ?? TimerQueue()
    return (timers.runEntries + timers.heapEntries).first {
      $0.action == .retry && Int($0.index) == index && isLive($0)
    }?.at
  }

  /// The clock `index`'s attempts count on: its queue's.
  private func retryClock(of index: Int) -> UInt64 {
    let queue = operations[index].queue
    return queue >= 0 ? queues[queue].clock : 0
  }

  // MARK: An attempt

  /// `worker` claimed `index`, which has a retry: counts the attempt, keeps the body for the next
  /// one (released at the operation's end), and lists the worker where
  /// ``ActorQueue/currentAttempt`` finds it until the attempt ends.
  @inline(never)
  mutating func startAttempt(_ index: Int, _ body: OperationBody, on worker: Worker) {
    let slot = Int(operations[index].retrySlot)
    retryStates[slot].attempt += 1
    operations[index].body = body
    attempts.add(worker, attempt: RetryAttempt(number: Int(retryStates[slot].attempt)))
    if retryStates[slot].hasExtras, retryStates[slot].policy?.keepsErrors == true,
      retryExtras(of: index).firstStart == .min
    {
      pendingTimes.append(PendingTime(index: index, id: operations[index].id, started: true))
      hasTimeWork = true
    }
  }

  /// An attempt of `index`, which has a retry, ended on `worker` with `outcome`: the worker is no
  /// longer listed (before anything of the retry state is let go of), and what follows is asked
  /// of the policy, by the worker (``WorkerAction/decideRetry(_:)``) or here (slot-free
  /// re-entry). `nil`: the operation ends with `outcome`.
  @inline(never)
  mutating func attemptEnded(
    _ index: Int, worker: Worker, queue: Int, outcome: OutcomeBox, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) -> WorkerAction? {
    attempts.remove(worker)
    switch retryStep(index, worker: worker, outcome: outcome, now: now) {
    case .ask(let pending):
      return .decideRetry(pending)
    case .again(let error, let delay):
      return reenter(
        index, worker: worker, queue: queue, error: error, attempt: attemptCount(of: index), delay: delay,
        now: now, &effects)
    case nil:
      return nil
    }
  }

  /// Records the first attempt's start instant (settled with the event that claimed it).
  mutating func settleFirstStart(of index: Int, now: () -> SchedulerInstant) {
    guard retryExtras(of: index).firstStart == .min else { return }
    let start = instant(of: retryClock(of: index), now: now)
    modifyRetryExtras(of: index) { $0.firstStart = start }
  }

  /// The attempt `index` ran on `worker` failed with `outcome`: what follows, if it may be
  /// retried and attempts are left. Never for a cancellation (`cancel()`, a `CancellationError`
  /// the body threw of itself) or a passed deadline; an attempt past its execution timeout may be
  /// retried, whatever it threw, and the policy sees ``OperationTimeoutError``. A policy that
  /// runs nothing of the caller's is decided here; another is asked by the worker, outside the
  /// lock.
  @inline(never)
  mutating func retryStep(
    _ index: Int, worker: Worker, outcome: OutcomeBox, now: () -> SchedulerInstant
  ) -> RetryStep? {
    guard !outcome.holdsNoBox, !operations[index].cancelRequested,
      case .executing(.worker(let runner)) = operations[index].phase, runner === worker,
      case .failure(let thrown) = outcome.value
    else { return nil }
    let slot = Int(operations[index].retrySlot)
    guard let policy = retryStates[slot].policy, Int(retryStates[slot].attempt) < policy.maxAttempts,
      !isUnreachable(queue: operations[index].queue)
    else { return nil }
    let error: any Error
    if operations[index].timeMarks.contains(.timedOut) {
      // Its execution timeout cancelled its task: whatever it threw (a `CancellationError` too)
      // is that timeout, which may be retried; a passed deadline may not.
      guard operations[index].timeMarks.contains(.byExecutionTimeout), let timeout = timeoutError(of: index)
      else {
        return nil
      }
      error = timeout
    } else {
      // The metatype, not `is`: a dynamic cast is a runtime call on every retried attempt.
      guard type(of: thrown) != CancellationError.self else { return nil }
      error = thrown
    }
    if policy.decidesAlone {
      let delay = policy.delay(
        afterAttempt: Int(retryStates[slot].attempt), previousDelay: retryStates[slot].previousDelay,
        random: &jitterRandom)
      return .again(error: error, delay: delay)
    }
    let extras = retryExtras(of: index)
    let clockNow = instant(of: retryClock(of: index), now: now)
    let context = RetryContext(
      attempt: Int(retryStates[slot].attempt), error: error, previousErrors: extras.errors,
      elapsed: .nanoseconds(
        extras.firstStart == .min ? 0 : SaturatingTime.subtracting(clockNow, extras.firstStart)),
      timeUntilDeadline: extras.deadline.map { .nanoseconds(SaturatingTime.subtracting($0, clockNow)) })
    return .ask(
      PendingRetry(
        index: index, id: operations[index].id, outcome: outcome, policy: policy, context: context,
        previousDelay: retryStates[slot].previousDelay))
  }

  /// The worker asked the policy of `pending`'s operation: `delay` nanoseconds until its next
  /// attempt, or `nil` to stop. The operation ends with the attempt's outcome if the policy
  /// stopped or it was cancelled, its deadline passed or its queue became unreachable meanwhile;
  /// otherwise it runs again (``reenter(_:worker:queue:error:attempt:delay:now:_:)``).
  mutating func retryDecided(
    _ pending: PendingRetry, delay: Int64?, worker: Worker, queue: Int, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) -> WorkerAction {
    let index = pending.index
    guard operations[index].id == pending.id, case .executing(.worker(let runner)) = operations[index].phase,
      runner === worker
    else {
      preconditionFailure("Internal inconsistency: a worker decided a retry of an operation it did not run")
    }
    let marks = operations[index].timeMarks
    if let delay, !operations[index].cancelRequested, !isUnreachable(queue: queue),
      !marks.contains(.timedOut) || marks.contains(.byExecutionTimeout),
      let action = reenter(
        index, worker: worker, queue: queue, error: pending.context.error, attempt: pending.context.attempt,
        delay: delay, now: now, &effects)
    {
      return action
    }
    return endAttempt(
      index, worker: worker, queue: queue, outcome: pending.outcome, yieldAfter: false, now: now, &effects)
  }

  /// Slot-free re-entry: the attempt of `index` that `worker` ran failed with `error` and the
  /// operation runs again after `delay` nanoseconds. It returns to `.pending` holding no slot and
  /// no task, and becomes ready again, with its original submission order, now (no delay) or
  /// when its backoff's timer fires. The worker claims the next operation, or retires if its task
  /// was cancelled (an attempt that timed out): it never runs the next attempt on a cancelled
  /// task. `nil`, changing nothing, if the next attempt could not start before the deadline.
  mutating func reenter(
    _ index: Int, worker: Worker, queue: Int, error: any Error, attempt: Int, delay: Int64,
    now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction? {
    let slot = Int(operations[index].retrySlot)
    let clock = queues[queue].clock
    let delay = max(0, delay)
    // The clock is read only when something needs the instant.
    let extras = retryStates[slot].hasExtras ? retryExtras(of: index) : nil
    let needsInstant = delay > 0 || extras?.deadline != nil || !queues[queue].subscribers.isEmpty
    let clockNow = needsInstant ? instant(of: clock, now: now) : 0
    let at = SaturatingTime.adding(clockNow, delay)
    guard extras?.startsBeforeDeadline(at) ?? true else { return nil }
    retryStates[slot].previousDelay = delay
    if retryStates[slot].policy?.keepsErrors == true {
      let dropped = modifyRetryExtras(of: index) { extras -> (any Error)? in
        extras.errors.append(error)
        return extras.errors.count > RetryExtras.keptErrors ? extras.errors.removeFirst() : nil
      }
      if let dropped { effects.garbage.releaseLater(error: dropped) }
    }
    return returnToPending(
      index, worker: worker, queue: queue, delay: delay, at: at,
      detail: { .retryScheduled(attempt: attempt, at: $0) }, now: now, &effects)
  }

  /// Slot-free re-entry, for a retry and a condition that answered "not yet": `index`, executing
  /// on `worker`, gives back its slot, its place among the started bodies, a pause request and
  /// its keys, returns to `.pending`, and becomes ready now (`delay` 0) or when its timer at `at`
  /// (of its queue's clock) fires. The worker claims the next operation, or retires if its task
  /// was cancelled. `detail`: the event its queue's subscribers get, given the instant.
  @inline(__always)
  mutating func returnToPending(
    _ index: Int, worker: Worker, queue: Int, delay: Int64, at: Int64,
    detail: (QueueDeadline) -> OperationDetail, now: () -> SchedulerInstant, _ effects: inout Effects
  ) -> WorkerAction {
    let clock = queues[queue].clock
    queues[queue].machine.operationEnded()
    let taskCancelled = unlinkStarted(index, in: queue, worker: worker)
    worker.setPauseRequested(false, in: pauses)
    operations[index].excessPaused = false
    if queues[queue].hasExcessRequests { touch(queue) }
    endAttemptTime(of: index)
    transition(index, to: .pending, &effects)
    // Its keys too: the next attempt takes them again with its slot.
    if operations[index].timeMarks.contains(.exclusive) { releaseLocks(of: index) }
    if !queues[queue].subscribers.isEmpty {
      let next = QueueDeadline(clock: QueueClock(id: clock), nanoseconds: at)
      emit(
        .detail(id: operations[index].id, name: operations[index].name, detail: detail(next)), in: queue,
        &effects)
    }
    if delay == 0 {
      makeReady(index, &effects)
    } else {
      operations[index].timeMarks.insert(.inBackoff)
      arm(TimerEntry(at: at, index: index, id: operations[index].id, action: .retry), on: clock)
      hasTimeWork = true
    }
    let action: WorkerAction
    if taskCancelled {
      queues[queue].machine.workerRetired()
      touch(queue)
      action = .retire
    } else {
      action = claimOrIdle(worker, queue: queue, now: now, &effects)
    }
    settle(now: now, &effects)
    return action
  }

  /// Whether `queue` was released while suspended: nobody can resume it, so nothing in it gets
  /// a slot again, and a retry would wait forever (the attempt's failure ends the operation).
  func isUnreachable(queue: Int) -> Bool {
    queues[queue].isReleased && queues[queue].machine.isSuspended
  }

  /// An attempt ended without ending the operation: its timeout's entry goes stale, and a limit
  /// that passed during it (its execution timeout) no longer applies to the next.
  private mutating func endAttemptTime(of index: Int) {
    operations[index].timeMarks.subtract([.timedOut, .byExecutionTimeout, .timedOutAfterStart])
    let slot = Int(operations[index].timeSlot)
    guard slot >= 0, timeStates[slot].armedTimeout != nil else { return }
    timeStates[slot].armedTimeout = nil
    unarm(on: timeStates[slot].clock)
    dropStaleFront(on: timeStates[slot].clock)
  }

  /// Its backoff's timer fired: it competes for a slot again, unless paused (then `resume()`
  /// makes it ready) or waiting for a dependency added meanwhile.
  mutating func backoffEnded(_ index: Int, _ effects: inout Effects) {
    operations[index].timeMarks.remove(.inBackoff)
    guard case .pending = operations[index].phase, operations[index].unfinishedDependencies == 0 else {
      return
    }
    makeReady(index, &effects)
  }
}

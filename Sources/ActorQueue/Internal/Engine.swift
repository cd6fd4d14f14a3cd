/// The scheduler's lock and the state it guards.
///
/// One lock guards the scheduling state of every queue and operation in the process: the
/// fields of `QueueCore`, `Worker` and `AnyQueueOperation` marked "guarded by Engine.lock".
/// One lock, rather than one per queue, because a dependency may join operations of any two
/// queues: releasing a dependent, cancelling across queues, checking a new edge for a cycle
/// and placing a barrier must each see and change the whole graph atomically, and a lock
/// hierarchy over queues would have no order to follow. Critical sections are short
/// (constant work per transition, plus the edges it releases) and run no user code, so the
/// lock is held briefly (a few hundred nanoseconds at most per transition). Measured on two
/// cores: one worker runs 2,000,000 trivial operations at 0.5–0.8 µs each (body, claim and
/// finish); the bench's independent scenarios run at 1.0–1.5 µs per
/// operation with the submitting task on the same two cores.
///
/// Nested locking: only `EventChannel`'s own leaf lock is ever taken inside this one (a
/// worker's handle lock is taken outside it).
enum Engine {
  struct State {
    /// Submission order: one counter for all queues (orders among ready operations).
    var nextSubmission: UInt64 = 0
    /// The global order of events.
    var nextEventSequence: UInt64 = 0
    /// Workers lingering on an idle queue (see ``LingerPolicy``): at most one in the process,
    /// so lingering never keeps more than one thread of the pool busy.
    var lingeringWorkers = 0
  }

  static let lock = LockedValue(State())

  /// The error of every operation cancelled before its body returned: one boxed instance,
  /// so cancelling 100,000 waiting operations allocates no error box per operation.
  static let cancellation: any Error = CancellationError()

  /// Runs `body` under the lock, then performs the effects it decided on.
  @inline(__always)
  static func locked<T: Sendable>(
    _ body: (inout State, inout Effects) -> T
  ) -> T {
    var effects = Effects()
    let result = lock.withLock { state in body(&state, &effects) }
    effects.perform()
    return result
  }

  /// Runs a `body` that may refuse the change under the lock, then performs its effects.
  @inline(__always)
  static func lockedThrowing<Result: Sendable>(
    _ body: (inout State, inout Effects) throws(ActorQueueError) -> Result
  ) throws(ActorQueueError) -> Result {
    var effects = Effects()
    let outcome: Swift.Result<Result, ActorQueueError> = lock.withLock { state in
      do throws(ActorQueueError) {
        return .success(try body(&state, &effects))
      } catch {
        return .failure(error)
      }
    }
    effects.perform()
    return try outcome.get()
  }
}

/// One worker task: runs the operations its queue hands it, one after another.
///
/// `@unchecked Sendable`: `cancelRequested` is read and written only while holding
/// `Engine.lock`; the task handle lives behind the worker's own small lock, so that attaching
/// it right after the task is created never contends with the engine's lock, which the new
/// task itself takes at once (measured: that contention cost an idle queue a second thread
/// wake-up per operation).
final class Worker: @unchecked Sendable {
  /// The operation this worker runs was cancelled: the task is (or is about to be) cancelled,
  /// so the worker must not run another operation in it.
  @exclusivity(unchecked) var cancelRequested = false  // guarded by Engine.lock

  private struct Handle {
    var task: Task<Void, Never>?
    var cancelPending = false
    var retired = false
  }

  private let handle = LockedValue(Handle())

  /// Records the task right after it was created; cancels it if that was asked for meanwhile.
  func attach(_ task: Task<Void, Never>) {
    let cancel = handle.withLock { handle in
      guard !handle.retired else { return false }
      handle.task = task
      return handle.cancelPending
    }
    if cancel { task.cancel() }
  }

  /// Cancels the task (an effect: outside the engine's lock), now or as soon as it is attached.
  func cancelTask() {
    let task = handle.withLock { handle in
      handle.cancelPending = true
      return handle.task
    }
    task?.cancel()
  }

  /// Drops the task handle when the worker ends, breaking the worker ↔ task cycle.
  func retire() {
    handle.withLock { handle in
      handle.task = nil
      handle.retired = true
    }
  }
}

/// What a worker does after a step.
enum WorkerAction: Sendable {
  case run(AnyQueueOperation, @Sendable () async throws -> any Sendable)
  /// Start the work of an externally completed operation, then claim the next.
  case start(AnyQueueOperation, @Sendable (@escaping @Sendable (Outcome) -> Void) -> Void)
  case yieldThenContinue
  /// The queue went idle at this instant: poll for work, yielding in between, for at most
  /// `LingerPolicy.window`.
  case linger(since: ContinuousClock.Instant)
  case retire
}

extension Engine {
  // MARK: Workers

  /// Starts a worker task for `queue` (an effect: called outside the lock).
  static func spawnWorker(_ worker: Worker, for queue: QueueCore, first: WorkerAction?) {
    let task = Task.detached(priority: queue.taskPriority) {
      await runWorker(worker, for: queue, first: first)
    }
    worker.attach(task)
  }

  private static func runWorker(_ worker: Worker, for queue: QueueCore, first: WorkerAction?) async {
    var action = first ?? workerStarted(worker, for: queue)
    var streak: UInt = 0
    while true {
      switch action {
      case .run(let operation, let body):
        let outcome: Outcome
        do {
          outcome = .success(try await body())
        } catch {
          outcome = .failure(error)
        }
        streak &+= 1
        // Every 4,096 operations in a row, give the thread away once: a queue of short
        // operations must not monopolise a thread of the cooperative pool.
        action = operationEnded(
          operation, with: outcome, in: queue, worker: worker, yieldAfter: streak % 4096 == 0)
      case .start(let operation, let start):
        start { outcome in externalEnded(operation, with: outcome) }
        action = claimNext(worker, for: queue)
      case .yieldThenContinue:
        await Task.yield()
        action = workerStarted(worker, for: queue)
      case .linger(let start):
        // Polls without the lock: an operation made ready on this queue sets the flag.
        await Task.yield()
        if queue.lingererWake.load(ordering: .acquiring) || start.duration(to: .now) >= LingerPolicy.window {
          action = lingerEnded(worker, for: queue, since: start)
        }
      case .retire:
        worker.retire()
        return
      }
    }
  }

  /// After starting an externally completed operation (whose slot stays taken), the worker
  /// claims the next operation, or retires.
  private static func claimNext(_ worker: Worker, for queue: QueueCore) -> WorkerAction {
    locked { state, effects in
      if worker.cancelRequested { return .retire }
      return apply(queue.machine.claimNext(), worker: worker, queue: queue, &state, &effects)
    }
  }

  /// Stores the outcome of an operation whose work ran, releases its work, and returns the
  /// terminal state it implies: `CancellationError` cancels (and marks it cancelled), another
  /// error fails, a value finishes. Under the lock.
  private static func record(_ outcome: Outcome, of operation: AnyQueueOperation) -> OperationState {
    operation.outcome = outcome
    operation.body = nil
    operation.externalStart = nil
    operation.externalCancel = nil
    switch outcome {
    case .success:
      return .finished
    case .failure(is CancellationError):
      operation.cancelRequested = true
      return .cancelled
    case .failure:
      return .failed
    }
  }

  /// The work of an externally completed operation ended (any thread; later calls ignored).
  static func externalEnded(_ operation: AnyQueueOperation, with outcome: Outcome) {
    locked { state, effects in
      guard operation._state == .executing, operation.worker == nil, let queue = operation.queue else {
        return
      }
      let terminal = record(outcome, of: operation)
      if queue.machine.externalOperationEnded() { effects.spawnWorker(for: queue) }
      terminate(operation, as: terminal, &state, &effects)
    }
  }

  /// A worker must be started for `queue` (the machine counted it as starting): it is created
  /// with the next operation claimed for it here, under the lock, so that the add→start path
  /// of an idle queue takes the lock once on each side and the new task starts with the body.
  static func spawnClaimingWorker(for queue: QueueCore, _ state: inout State, _ effects: inout Effects) {
    let worker = Worker()
    let first = apply(queue.machine.workerStarted(), worker: worker, queue: queue, &state, &effects)
    if case .retire = first { return }
    effects.spawnWorker(worker, for: queue, first: first)
  }

  private static func workerStarted(_ worker: Worker, for queue: QueueCore) -> WorkerAction {
    locked { state, effects in claimOrIdle(worker, for: queue, &state, &effects) }
  }

  /// A worker that holds no operation claims the next one. If there is none and the queue is
  /// idle, it lingers when that pays (``LingerPolicy``) and no other worker lingers; otherwise
  /// it retires, and the queue notes when it went idle. Under the lock.
  private static func claimOrIdle(
    _ worker: Worker, for queue: QueueCore, _ state: inout State, _ effects: inout Effects
  ) -> WorkerAction {
    let step = queue.machine.workerStarted()
    if step.run == nil, queue.machine.executing == 0 {
      let now = ContinuousClock.now
      if queue.linger.lingerPays, state.lingeringWorkers == 0, queue.machine.lingerIfIdle() {
        state.lingeringWorkers += 1
        return .linger(since: now)
      }
      queue.linger.wentIdle(at: now)
    }
    return apply(step, worker: worker, queue: queue, &state, &effects)
  }

  /// A lingering worker was woken (an operation was made ready) or its time is up: it claims,
  /// lingers on (the operation that woke it is gone already), or retires.
  private static func lingerEnded(
    _ worker: Worker, for queue: QueueCore, since start: ContinuousClock.Instant
  ) -> WorkerAction {
    let spell = start.duration(to: .now)
    return locked { state, effects in
      queue.lingererWake.store(false, ordering: .relaxed)
      state.lingeringWorkers -= 1
      let step = queue.machine.workerStarted()
      guard step.run == nil else {
        queue.linger.observe(idleSpell: spell)
        return apply(step, worker: worker, queue: queue, &state, &effects)
      }
      if spell < LingerPolicy.window, queue.machine.lingerIfIdle() {
        state.lingeringWorkers += 1
        return .linger(since: start)
      }
      if spell >= LingerPolicy.window {
        queue.linger.observe(idleSpell: spell)
      } else if queue.machine.executing == 0 {
        queue.linger.wentIdle(at: start)
      }
      return apply(step, worker: worker, queue: queue, &state, &effects)
    }
  }

  /// The body of `operation` ended with `outcome`. Returns what the worker does next.
  static func operationEnded(
    _ operation: AnyQueueOperation, with outcome: Outcome, in queue: QueueCore, worker: Worker,
    yieldAfter: Bool
  ) -> WorkerAction {
    locked { state, effects in
      let terminal = record(outcome, of: operation)
      operation.worker = nil
      queue.machine.operationEnded()
      terminate(operation, as: terminal, &state, &effects)
      if worker.cancelRequested {
        if queue.machine.workerRetired() { effects.spawnWorker(for: queue) }
        return .retire
      }
      if yieldAfter { return .yieldThenContinue }
      return claimOrIdle(worker, for: queue, &state, &effects)
    }
  }

  private static func apply(
    _ step: SchedulerStateMachine<AnyQueueOperation>.WorkerStep, worker: Worker, queue: QueueCore,
    _ state: inout State, _ effects: inout Effects
  ) -> WorkerAction {
    if step.spawnWorker { effects.spawnWorker(for: queue) }
    guard let operation = step.run else { return .retire }
    operation.readyStamp = nil
    if let start = operation.externalStart {
      // Runs elsewhere: no worker holds it (cancel() calls its `externalCancel`).
      transition(operation, to: .executing, &state, &effects)
      return .start(operation, start)
    }
    guard let body = operation.body else {
      preconditionFailure("Internal inconsistency: \(operation.id) was claimed twice")
    }
    operation.worker = worker
    transition(operation, to: .executing, &state, &effects)
    return .run(operation, body)
  }
}

import Synchronization

/// The thin layer around the scheduler value: the lock it lives in, the worker tasks, and the
/// effects performed after each event.
///
/// One lock guards the scheduling state of every queue and operation in the process (the
/// ``Scheduler`` value), rather than one per queue, because a dependency may join operations of
/// any two queues: releasing a dependent, cancelling across queues, checking a new edge for a
/// cycle and placing a barrier must each see and change the whole graph atomically, and a lock
/// hierarchy over queues would have no order to follow. Critical sections are short and run no
/// user code: constant work per transition, and a call whose work grows with a queue or a
/// fan-out (cancelling, pausing or resuming every operation, a queue's release, an end that
/// releases many dependents) does at most `Scheduler.sliceLimit` units per hold, taking the lock
/// again for the rest (`continueBulk`, `BulkWork`), so no call stalls every other queue.
///
/// Nested locking: only leaf locks are ever taken inside this one, `EventChannel`'s own, the lists
/// of workers asked to pause and running a retried attempt (`WorkerDirectory`), and a progress
/// cell's (`ProgressCell`: its shares, its final value, its waiting streams, whose continuations
/// it resumes, running nothing of the user's); a worker's handle lock is taken outside it.
enum Engine {
  static let scheduler = LockedValue(Scheduler(pauses: pauses, attempts: attempts, commandsTimerTask: true))
  /// The workers of the process's queues asked to pause (see `WorkerDirectory`).
  static let pauses = WorkerDirectory()
  /// The workers of the process's queues running an attempt of a retried operation.
  static let attempts = WorkerDirectory()

  /// Set when an operation is made ready on a queue whose worker lingers (at most one worker in
  /// the process lingers); the lingering worker polls it without the lock, and takes the lock
  /// only once it is set or its time is up. A hint only: the worker decides under the lock.
  static let lingererWake = Atomic<Bool>(false)

  /// The clock every event reads "now" from; the scheduler value itself only takes instants.
  static func now() -> SchedulerInstant { .now() }

  /// Runs an event under the lock, then performs the effects it recorded.
  @inline(__always)
  static func run<Result>(_ event: (inout Scheduler, inout SchedulerEffects) -> Result) -> Result {
    var effects = SchedulerEffects()
    let result = scheduler.withLock { event(&$0, &effects) }
    effects.perform()
    return result
  }

  /// Runs an event that may refuse the change, then performs the effects it recorded.
  @inline(__always)
  static func runThrowing(
    _ event: (inout Scheduler, inout SchedulerEffects) throws(ActorQueueError) -> Void
  ) throws(ActorQueueError) {
    var effects = SchedulerEffects()
    let refusal: ActorQueueError? = scheduler.withLock { scheduler in
      do throws(ActorQueueError) {
        try event(&scheduler, &effects)
        return nil
      } catch {
        return error
      }
    }
    effects.perform()
    if let refusal { throw refusal }
  }

  /// Releases the handles that released operations let go of while a chain of them is being
  /// released, batch by batch, until none is left. Each release may add more (the next links),
  /// but never recurses: see `Scheduler.releaseOperation`.
  static func drainReleaseBacklog() {
    while true {
      let batch = scheduler.withLock { $0.takeReleaseBacklog() }
      if batch.isEmpty { return }
    }
  }

  /// Does the work a call left beyond its first hold of the lock, one slice per hold, performing
  /// each slice's effects before the next (see `BulkWork`): the call returns once all is done,
  /// and other callers take the lock between slices.
  @inline(never)
  static func continueBulk(_ first: BulkWork) {
    var work: BulkWork? = first
    while let next = work.take() {
      yieldThread()
      var effects = SchedulerEffects()
      scheduler.withLock { $0.continueBulk(next, now: now, &effects) }
      work = effects.takeBulk()
      effects.perform()
    }
  }

  /// Reads the scheduler under the lock; the body cannot change it. The body must not return
  /// anything user-owned whose last reference it could drop.
  @inline(__always)
  static func read<Result>(_ body: (borrowing Scheduler) -> Result) -> Result {
    scheduler.withLock { body($0) }
  }

  /// Changes the scheduler under the lock with a call that records no effect and decides no
  /// start (a new queue, a waiter or subscriber registered, a priority changed): an event that
  /// does either goes through ``run(_:)``, which performs its effects after unlocking.
  @inline(__always)
  static func mutate<Result>(_ body: (inout Scheduler) -> Result) -> Result {
    scheduler.withLock { body(&$0) }
  }
}

/// The address of the calling task's runtime object (0 outside a task): its identity, exact and
/// stable while it runs. `UnsafeCurrentTask` is a reference to that object and nothing else (its
/// `==` compares the references), but it exposes no identity except `hashValue`, whose hashing
/// touches code an idle queue's start otherwise never fetches; the address is read instead.
/// `unsafeBitCast` checks that the sizes agree, so a future layout with more fields traps
/// instead of comparing the wrong bits.
@inline(__always)
func currentTaskAddress() -> Int {
  withUnsafeCurrentTask { task in task.map { unsafeBitCast($0, to: Int.self) } ?? 0 }
}

/// The operation whose body a task runs: what a checkpoint needs to find its record.
struct CheckpointContext: Sendable {
  let worker: Worker
  let index: Int
  let id: OperationID
}

/// One worker task's handle: the task, so that `cancel()` can cancel it, and the step it starts
/// with.
///
/// Its own small lock (not the scheduler's): attaching the task right after it was created
/// never contends with the scheduler's lock, which the new task itself takes at once (that
/// contention would cost an idle queue a second thread wake-up per operation). An inline spin
/// lock, not a mutex of its own: a worker is made on every start of an idle queue, and a
/// `LockedValue` costs an allocation and a mutex initialisation there. `Synchronization.Mutex` would be inline too, but its contended hand-over is
/// invisible to ThreadSanitizer on Linux (see `LockedValue`), and this lock does contend: the
/// new task takes its first step while the thread that created it attaches the task handle.
final class Worker: Sendable {
  private struct Handle {
    var task: Task<Void, any Error>?
    var cancelPending = false
    /// A priority to escalate the task to once it is attached (`TaskPriority.rawValue`; 0: none).
    var escalationPending: UInt8 = 0
    var retired = false
    /// The first step, until the task takes it.
    var first: WorkerAction?
  }

  private let handleLock = SpinLock()
  /// `nonisolated(unsafe)`, and safe: every access goes through `withHandle`, which holds
  /// `handleLock` (taken with acquiring, released with releasing ordering), so accesses from
  /// different threads never overlap and each sees the one before it. Nothing user-owned is
  /// released inside (`first` is taken out, not dropped; a task handle is not user code).
  private nonisolated(unsafe) var handleState = Handle()

  private func withHandle<Result>(_ body: (inout Handle) -> Result) -> Result {
    handleLock.lock()
    defer { handleLock.unlock() }
    return body(&handleState)
  }
  /// The operation this worker runs was asked to pause: its checkpoints take the slow path.
  /// Written under the scheduler's lock; read without it by checkpoints (a hint: the slow path
  /// decides under the lock).
  private let pauseRequested = Atomic<Bool>(false)

  /// The queue this worker serves.
  let queue: Int
  /// The queue's task executor preference, held for the worker's life: its task runs there.
  let taskExecutor: (any TaskExecutor)?

  init(queue: Int, taskExecutor: (any TaskExecutor)? = nil) {
    self.queue = queue
    self.taskExecutor = taskExecutor
  }

  /// The priority its task was escalated to for the operation it runs (`TaskPriority.rawValue`;
  /// 0: none): it retires after that operation. Written under the scheduler's lock, before the
  /// worker's task is created if it is new (which is then created at this priority, so its first
  /// body cannot start before the escalation).
  private let escalation = Atomic<UInt8>(0)

  /// See `escalation`.
  var isEscalated: Bool { escalation.load(ordering: .relaxed) != 0 }
  var escalatedPriority: UInt8 { escalation.load(ordering: .relaxed) }

  /// Marks the worker to retire after its operation (its task is being escalated to `priority`).
  func markEscalated(to priority: UInt8) {
    if priority > escalation.load(ordering: .relaxed) { escalation.store(priority, ordering: .relaxed) }
  }

  /// Whether a checkpoint of the operation this worker runs must take the slow path.
  var isPauseRequested: Bool { pauseRequested.load(ordering: .relaxed) }

  /// Set and cleared under the scheduler's lock. A worker whose flag is set is listed in
  /// `directory` (its scheduler's `pauses`), where its body's checkpoints find it.
  func setPauseRequested(_ requested: Bool, in directory: WorkerDirectory) {
    guard pauseRequested.load(ordering: .relaxed) != requested else { return }
    pauseRequested.store(requested, ordering: .relaxed)
    if requested {
      directory.add(self)
    } else {
      directory.remove(self)
    }
  }

  /// The address of the task recorded for this worker, 0 until known (a checkpoint finds its
  /// worker by it; for tests: it must be the address its task sees, whoever recorded it).
  var recordedTaskAddress: Int { task.load(ordering: .relaxed) }

  /// The worker's task, as its address (``currentTaskAddress()``): a checkpoint pauses an operation only
  /// from the task that runs its body.
  private let task = Atomic<Int>(0)
  /// The record and identifier of the operation whose body the task runs; -1 and 0 between
  /// operations. Written and read by the worker's own task only (its body's checkpoints).
  private let runningIndex = Atomic<Int>(-1)
  private let runningID = Atomic<UInt64>(0)

  /// Records the calling task as this worker's: done by the task itself only when it runs before
  /// its creator attached it (see ``takeFirst()``).
  private func bindToCurrentTask() {
    task.store(currentTaskAddress(), ordering: .relaxed)
  }

  /// The task starts running the body of `index`.
  func enter(_ index: Int, id: OperationID) {
    runningIndex.store(index, ordering: .relaxed)
    runningID.store(id.rawValue, ordering: .relaxed)
  }

  /// The body ended.
  func leave() {
    runningIndex.store(-1, ordering: .relaxed)
  }

  /// Whether the worker's task has run (taken its first step): until then what it was given
  /// waits for a thread of the pool. For the test kit's `settle()`, which waits longer for that.
  var hasBegun: Bool { began.load(ordering: .relaxed) }
  private let began = Atomic<Bool>(false)

  /// The worker's task runs (its first step is taken now).
  func noteBegun() { began.store(true, ordering: .relaxed) }

  /// The operation whose body this worker's task runs, if any. Called from that task (a
  /// checkpoint found this worker by the calling task's address).
  func runningContext() -> CheckpointContext? {
    let index = runningIndex.load(ordering: .relaxed)
    guard index >= 0 else { return nil }
    return CheckpointContext(
      worker: self, index: index, id: OperationID(rawValue: runningID.load(ordering: .relaxed)))
  }

  /// Gives the worker its first step (before its task exists).
  func setFirst(_ step: consuming WorkerAction) {
    var step = Optional(step)
    withHandle { handle in handle.first = step.take() }
  }

  /// Takes the first step, so the task does not keep it (and the body it holds) alive until the
  /// worker retires; called by the worker's task before anything else, so it also makes sure the
  /// worker knows its task's address before any body runs (a checkpoint finds its worker by it).
  /// The creator records the address when it attaches the task (``attach(_:)``), nearly always
  /// before the task runs: the new task usually waits for the creating thread to block, on the
  /// same core. Only a task that ran before that reads its own address here.
  ///
  /// Why not always read it here: the task's address comes from the runtime's thread-local
  /// current task, a lookup that is a noticeable part of an idle queue's start with cold caches
  /// (the Performance article has the figure).
  func takeFirst() -> WorkerAction? {
    let (first, attached) = withHandle { handle in (handle.first.take(), handle.task != nil) }
    if !attached { bindToCurrentTask() }
    noteBegun()
    return first
  }

  /// Records the task right after it was created, and its address (``currentTaskAddress()``
  /// inside it: a `Task` and an `UnsafeCurrentTask` are each a reference to the same runtime
  /// object, and nothing else); cancels it if that was asked for meanwhile.
  func attach(_ task: Task<Void, any Error>) {
    let (cancel, escalation) = withHandle { handle -> (Bool, UInt8) in
      guard !handle.retired else { return (false, 0) }
      handle.task = task
      self.task.store(unsafeBitCast(task, to: Int.self), ordering: .relaxed)
      return (handle.cancelPending, handle.escalationPending)
    }
    if cancel { task.cancel() }
    if escalation != 0 { Self.escalate(task, to: escalation) }
  }

  /// Raises the task's priority to `priority` (`TaskPriority.rawValue`; an effect: outside the
  /// scheduler's lock), now or as soon as it is attached. The runtime never lowers it.
  func escalate(to priority: UInt8) {
    let task = withHandle { handle -> Task<Void, any Error>? in
      if handle.task == nil { handle.escalationPending = max(handle.escalationPending, priority) }
      return handle.task
    }
    if let task { Self.escalate(task, to: priority) }
  }

  private static func escalate(_ task: Task<Void, any Error>, to priority: UInt8) {
    // The runtime's escalation API is new on Apple's platforms; on Linux the toolchain has it.
    if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
      task.escalatePriority(to: TaskPriority(rawValue: priority))
    }
  }

  /// Cancels the task (an effect: outside the scheduler's lock), now or as soon as it is
  /// attached.
  func cancelTask() {
    let task = withHandle { handle in
      handle.cancelPending = true
      return handle.task
    }
    task?.cancel()
  }

  /// Drops the task handle when the worker ends, breaking the worker ↔ task cycle.
  func retire() {
    withHandle { handle in
      handle.task = nil
      handle.retired = true
    }
  }
}

extension Engine {
  // MARK: Workers

  /// Starts a worker task (an effect: called outside the lock).
  ///
  /// The task's closure captures the worker and nothing else (its queue is a field of the
  /// worker), and the first step is moved into the worker, not copied: each copy of a
  /// `WorkerAction` was an outlined copy of its payload and a generic metadata lookup. Both count
  /// on an idle queue, whose every start comes here with cold caches (see
  /// `SchedulerEffects.firstSpawn`). (Passing the method `worker.run` instead of a closure would
  /// allocate two contexts, not one.)
  ///
  /// The task is created throwing although its closure never throws: a non-throwing task's
  /// closure reaches the runtime through two reabstraction thunks (to a throwing closure with an
  /// indirect result), which cost an allocation here and two extra frames on the worker before
  /// its first body ran; a throwing closure is passed as it is.
  static func start(_ spawn: consuming Spawn) {
    let worker = spawn.worker
    if let first = spawn.first.take() { worker.setFirst(first) }
    // A worker escalated for its first operation is created at that priority.
    let escalated = worker.escalatedPriority
    let priority = (escalated > (spawn.taskPriority ?? 0) ? escalated : spawn.taskPriority).map {
      TaskPriority(rawValue: $0)
    }
    let task: Task<Void, any Error>
    if let executor = worker.taskExecutor {
      task = Task.detached(executorPreference: executor, priority: priority) { () async throws -> Void in
        await runWorker(worker)
      }
    } else {
      // Not `detached(executorPreference: nil, …)`: its `sending` closure costs a start more.
      task = Task.detached(priority: priority) { () async throws -> Void in
        await runWorker(worker)
      }
    }
    worker.attach(task)
  }

  /// The worker task's loop. Every step that takes the lock is a synchronous function kept out
  /// of line (`askForWork(_:)` and the three after it), so that its effects value, its
  /// closures and its scratch live on the thread's stack for the length of the critical section,
  /// not in this function's async frame for the task's whole life: inlined here, the four steps
  /// made that frame 1,712 bytes, more than the task allocator's first slab holds, so every
  /// worker task allocated two slabs more with `malloc` before its first body ran (three in all,
  /// against one for a bare task), and each step's closures were task allocations too.
  ///
  /// The first step is taken here, from the worker, and moved into `action` by a `switch` on the
  /// taken value, not passed in as a parameter: binding a parameter with `if let` copies it, and
  /// the parameter then kept the first body alive until the worker retired (the lifetime tests
  /// caught it).
  private static func runWorker(_ worker: Worker) async {
    var action: WorkerAction
    switch worker.takeFirst() {
    case .some(let first): action = first
    case .none: action = askForWork(worker)
    }
    var streak: UInt = 0
    while true {
      switch consume action {
      case .run(let operation, let id, let body):
        // The body (and what it captures) is released before the end is reported, so whoever
        // sees the operation ended also sees its body gone.
        worker.enter(operation, id: id)
        let outcome = await execute(consume body)
        worker.leave()
        streak &+= 1
        // Every 4,096 operations in a row, give the thread away once: a queue of short
        // operations must not monopolise a thread of the cooperative pool.
        action = operationEnded(operation, worker: worker, outcome: outcome, yieldAfter: streak % 4096 == 0)
      case .runTimed(let operation, let id, let body):
        bodyStarting(operation, worker: worker, id: id)
        action = .run(operation: operation, id: id, body: body)
      case .evaluate(let operation, let id, let conditions, let handle):
        action = await evaluate(conditions, of: operation, id: id, handle: handle, on: worker)
      case .decideRetry(let pending):
        let delay = pending.decide()
        action = retryDecided(worker, pending, delay: delay)
      case .start(let operation, let id, let work):
        startExternal(ExternalStartEffect(index: operation, id: id, work: work))
        action = claimNext(worker)
      case .yieldThenContinue:
        await Task.yield()
        action = askForWork(worker)
      case .linger(let since):
        // Polls without the lock: an operation made ready on this queue sets the flag.
        await Task.yield()
        if lingererWake.load(ordering: .acquiring)
          || SchedulerInstant.now().nanoseconds &- since.nanoseconds >= LingerPolicy.windowNanoseconds
        {
          lingererWake.store(false, ordering: .relaxed)
          action = lingerEnded(worker, since: since)
        } else {
          action = .linger(since: since)
        }
      case .retire:
        worker.retire()
        return
      }
    }
  }

  // MARK: The worker's steps under the lock (see `runWorker`)

  @inline(never)
  private static func askForWork(_ worker: Worker) -> WorkerAction {
    run { $0.workerAsksForWork(worker, queue: worker.queue, now: now, &$1) }
  }

  @inline(never)
  private static func operationEnded(
    _ operation: Int, worker: Worker, outcome: OutcomeBox, yieldAfter: Bool
  ) -> WorkerAction {
    run {
      $0.operationEnded(
        operation, worker: worker, queue: worker.queue, outcome: outcome, yieldAfter: yieldAfter, now: now,
        &$1)
    }
  }

  @inline(never)
  private static func bodyStarting(_ operation: Int, worker: Worker, id: OperationID) {
    run { $0.bodyStarting(operation, id: id, worker: worker, now: now, &$1) }
  }

  /// Evaluates an operation's conditions on its worker's task (`ActorQueue.current` is its
  /// queue), then reports the answer.
  @inline(never)
  private static func evaluate(
    _ conditions: [any OperationCondition], of operation: Int, id: OperationID, handle: AnyQueueOperation?,
    on worker: Worker
  ) async -> WorkerAction {
    let answer: ConditionAnswer?
    if let handle {
      // The worker is not entered: a checkpoint in a condition pauses nothing (only a body pauses).
      answer = await ConditionAnswer.evaluate(conditions, for: handle)
    } else {
      answer = ConditionAnswer(name: conditions.first?.name ?? "", result: .skip)
    }
    return run {
      $0.conditionsAnswered(
        operation, id: id, worker: worker, queue: worker.queue, answer: answer, now: now, &$1)
    }
  }

  @inline(never)
  private static func retryDecided(_ worker: Worker, _ pending: PendingRetry, delay: Int64?) -> WorkerAction {
    run { $0.retryDecided(pending, delay: delay, worker: worker, queue: worker.queue, now: now, &$1) }
  }

  @inline(never)
  private static func claimNext(_ worker: Worker) -> WorkerAction {
    run { $0.claimNext(worker, queue: worker.queue, now: now, &$1) }
  }

  @inline(never)
  private static func lingerEnded(_ worker: Worker, since: SchedulerInstant) -> WorkerAction {
    run { $0.lingerEnded(worker, queue: worker.queue, since: since, now: now, &$1) }
  }

  /// Runs `body` and releases it before returning its outcome.
  private static func execute(_ body: consuming OperationBody) async -> OutcomeBox {
    switch consume body {
    case .void(let body):
      await body()
      return .void
    case .boxing(let body):
      do {
        return try await body()
      } catch {
        return OutcomeBox(.failure(error))
      }
    }
  }

  // MARK: Checkpoints

  /// The operation whose body the calling task runs, if a checkpoint there must take the slow
  /// path (a pause is asked for, or it is paused). Only the body's own task (the worker's)
  /// qualifies: a child task or an unstructured task that a body created may run beside it or
  /// outlive it, so it cannot give the operation's slot back. Cost: one atomic load while no
  /// operation in the process is asked to pause (see `WorkerDirectory`).
  static func checkpointContext() -> CheckpointContext? {
    pauses.workerOfCurrentTask()?.runningContext()
  }

  /// Tells apart the tasks suspended at checkpoints.
  private static let pauseTokens = Atomic<UInt64>(0)

  /// Whether the operation of `context` is asked to pause (or is paused). Exact: under the lock.
  static func isPauseRequested(_ context: CheckpointContext) -> Bool {
    guard context.worker.isPauseRequested else { return false }
    return read { $0.isPauseRequested(context.index, id: context.id) }
  }

  /// The slow path of a checkpoint: pauses the operation of `context` if that was asked for,
  /// and returns once it has a slot again. Throws `CancellationError` if the operation, or the
  /// calling task, is cancelled before or while it waits.
  static func pauseAtCheckpoint(_ context: CheckpointContext) async throws {
    let token = pauseTokens.add(1, ordering: .relaxed).newValue
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        // The task's cancellation is read under the lock: a cancellation after it finds the
        // waiter registered (its handler takes the lock), one before it is seen here.
        let decision = run { scheduler, effects in
          if Task.isCancelled { return Scheduler.CheckpointDecision.cancelled }
          return scheduler.checkpoint(
            context.index, id: context.id, token: token,
            resume: { cancelled in
              if cancelled {
                continuation.resume(throwing: CancellationError())
              } else {
                continuation.resume()
              }
            }, now: now, &effects)
        }
        switch decision {
        case .proceed: continuation.resume()
        case .cancelled: continuation.resume(throwing: CancellationError())
        case .suspended: break
        }
      }
    } onCancel: {
      run { $0.checkpointCancelled(context.index, id: context.id, token: token, &$1) }
    }
  }

  /// The external work of operation `id`, record `index`, ended (any thread; later calls
  /// ignored).
  static func externalEnded(_ index: Int, id: OperationID, with outcome: Outcome) {
    let outcome = OutcomeBox(outcome)
    run { $0.externalEnded(index, id: id, outcome: outcome, now: now, &$1) }
  }

  /// Starts external work, on the calling thread, after the lock is released: `first`, then
  /// `rest`. Work whose start reports its end at once may free a slot that the next external
  /// work takes, started from inside that report: such nested starts are queued and run by the
  /// outermost call on this thread, in order, so a long line of them cannot exhaust the stack.
  static func startExternal(_ first: ExternalStartEffect, then rest: [ExternalStartEffect]? = nil) {
    ExternalStartTrampoline.forThisThread.run(first, then: rest) { next in
      next.work.start { outcome in externalEnded(next.index, id: next.id, with: outcome) }
    }
  }
}

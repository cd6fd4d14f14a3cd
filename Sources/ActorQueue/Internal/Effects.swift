/// A worker task to start.
struct Spawn: Sendable {
  /// `TaskPriority.rawValue`: a fixed-layout field (see `QueueRecord.taskPriority`).
  let taskPriority: UInt8?
  let worker: Worker
  /// The queue the worker serves.
  var queue: Int { worker.queue }
  /// Its first step, decided under the lock (an operation claimed for it), or `nil`: it claims
  /// when it runs.
  var first: WorkerAction? = nil
}

/// User-owned values the scheduler let go of, released once the lock is released: the last
/// reference to a handle, a body or an outcome may run user code (a `deinit`), which may call
/// back into the scheduler.
///
/// An operation's end lets go of its handle and its outcome: those two have slots of their own;
/// everything else is kept out of line (`more`), so that releasing the common garbage costs two
/// releases and a test, not one release per kind of value.
struct Garbage: Sendable {
  private struct More: Sendable {
    var handles: [Handle]?
    var body: OperationBody?
    /// Cancelling many waiting operations lets go of as many bodies: a list of their own, so
    /// that none is boxed.
    var bodies: [OperationBody]?
    var external: (any ExternalWork)?
    var error: (any Error)?
    var values: [any Sendable]?
  }

  private var handle: Handle?
  private var outcome: OutcomeBox?
  private var more: More?

  var hasHandles: Bool { handle != nil }

  /// Nothing to release.
  var isEmpty: Bool { handle == nil && outcome == nil && more == nil }

  mutating func releaseLater(handle: Handle) {
    if self.handle == nil {
      self.handle = handle
    } else {
      if more == nil { more = More() }
      more!.handles.append(handle)
    }
  }

  mutating func releaseLater(outcome: OutcomeBox) {
    if self.outcome == nil {
      self.outcome = outcome
    } else {
      releaseLater(outcome as any Sendable)
    }
  }

  mutating func releaseLater(body: OperationBody) {
    if more == nil { more = More() }
    if more!.body == nil {
      more!.body = body
    } else {
      more!.bodies.append(body)
    }
  }

  mutating func releaseLater(external: any ExternalWork) {
    if more == nil { more = More() }
    if more!.external == nil {
      more!.external = external
    } else {
      more!.values.append(external)
    }
  }

  mutating func releaseLater(error: any Error) {
    if more == nil { more = More() }
    if more!.error == nil {
      more!.error = error
    } else {
      more!.values.append(error)
    }
  }

  mutating func releaseLater(_ value: any Sendable) {
    if more == nil { more = More() }
    more!.values.append(value)
  }

  /// Takes the handles kept, leaving the other values.
  mutating func takeHandles() -> [Handle] {
    guard let first = handle.take() else { return [] }
    guard more != nil, let rest = more!.handles.take() else { return [first] }
    return [first] + rest
  }
}

/// What an event decided to do once the scheduler's lock is released.
///
/// The scheduler decides under the lock and acts outside it: starting worker tasks, resuming
/// waiters and event consumers, running completion handlers, cancelling tasks (which runs the
/// body's cancellation handlers), starting or cancelling external work, and releasing what the
/// user gave us are effects, and none of them may happen while the lock is held. Most events
/// record few: the lists live out of line in one optional (`lists`), so an empty
/// `SchedulerEffects` costs no allocation, and creating and destroying one costs a few tests,
/// not a release per list. `Engine` performs them (`perform()`); tests read them.
struct SchedulerEffects: Sendable {
  private struct Lists: Sendable {
    /// Workers to start after the first (``SchedulerEffects/firstSpawn``): rare, an event
    /// that frees or raises several slots at once.
    var spawns: [Spawn]?
    var resumptions: [@Sendable () -> Void]?
    var completions: [@Sendable () -> Void]?
    var waiters: [CheckedContinuation<Void, Never>]?
    var cancellations: [Worker]?
    var externalCancels: [any ExternalWork]?
    /// Most events start at most one piece of external work: no list for it.
    var externalStart: ExternalStartEffect?
    var externalStarts: [ExternalStartEffect]?
    /// The external work of operations that ended: told so (`ended()`), then released.
    var endedExternal: (any ExternalWork)?
    var moreEndedExternal: [any ExternalWork]?
    /// The call's work beyond this hold of the lock: its next slices (see `BulkWork`). Boxed,
    /// one word: rare, and every event creates and moves its effects.
    var bulk: BulkWorkBox?
  }

  /// A `BulkWork` out of line.
  enum BulkWorkBox: Sendable {
    indirect case work(BulkWork)

    var work: BulkWork {
      switch self {
      case .work(let work): work
      }
    }
  }

  private var lists: Lists?
  /// The first worker to start, kept inline: an idle queue's start records this and nothing
  /// else. As a list it cost that start an array (an allocation on the submitting thread, whose
  /// allocator cache is empty since workers free on theirs, and a free on another) and the
  /// list's generic code.
  private var firstSpawn: Spawn?
  /// An operation was made ready on a queue whose worker lingers: wake it.
  var wakeLingerer = false
  var garbage = Garbage()

  /// Nothing recorded: performing these effects would do nothing.
  var isEmpty: Bool { lists == nil && firstSpawn == nil && !wakeLingerer && garbage.isEmpty }

  /// Worker tasks to start, in the order recorded.
  var spawns: [Spawn]? {
    guard let firstSpawn else { return nil }
    return [firstSpawn] + (lists?.spawns ?? [])
  }
  /// Event consumers and checkpoints to resume.
  var resumptions: [@Sendable () -> Void]? { lists?.resumptions }
  /// Worker tasks to cancel.
  var cancellations: [Worker]? { lists?.cancellations }

  /// The lists, created on first use.
  private var recorded: Lists {
    get { lists ?? Lists() }
    _modify {
      if lists == nil { lists = Lists() }
      yield &lists!
    }
  }

  /// Start a worker task.
  mutating func spawn(_ spawn: consuming Spawn) {
    if case .none = firstSpawn {
      firstSpawn = consume spawn
    } else {
      recorded.spawns.append(spawn)
    }
  }

  /// Hand `element` to an event consumer waiting for it.
  mutating func resume<Element: Sendable>(
    _ consumer: CheckedContinuation<Element?, Never>, returning element: Element?
  ) {
    recorded.resumptions.append { consumer.resume(returning: element) }
  }

  /// Run an operation's completion handlers.
  mutating func complete(_ handlers: @escaping @Sendable () -> Void) {
    recorded.completions.append(handlers)
  }

  /// Wake tasks waiting for operations to end.
  mutating func wake(_ continuations: [CheckedContinuation<Void, Never>]) {
    if recorded.waiters == nil {
      recorded.waiters = continuations
    } else {
      recorded.waiters!.append(contentsOf: continuations)
    }
  }

  /// Let a submitter waiting for capacity go on: its operation was added, or (`false`) its task
  /// was cancelled first.
  mutating func resumeSubmitter(_ continuation: CheckedContinuation<Bool, Never>, added: Bool) {
    recorded.resumptions.append { continuation.resume(returning: added) }
  }

  /// Let a task suspended at a checkpoint go on, or throw `CancellationError`.
  mutating func resumeCheckpoint(_ resume: @escaping @Sendable (_ cancelled: Bool) -> Void, cancelled: Bool) {
    recorded.resumptions.append { resume(cancelled) }
  }

  /// Cancel a worker task (its operation's body sees `Task.isCancelled`).
  mutating func cancel(_ worker: Worker) {
    recorded.cancellations.append(worker)
  }

  /// Cancel the external work of an operation while it runs.
  mutating func runExternalCancel(_ work: any ExternalWork) {
    recorded.externalCancels.append(work)
  }

  /// Tell the external work of an operation that ended so, then release it.
  mutating func externalEnded(_ work: any ExternalWork) {
    if recorded.endedExternal == nil {
      recorded.endedExternal = work
    } else {
      recorded.moreEndedExternal.append(work)
    }
  }

  /// Tell the timer task to sleep until another instant, or to end.
  /// A closure among the resumptions, not a field of its own: every event moves these lists, and
  /// a field costs each of them a copy more; the task ignores a command older than one it has.
  mutating func commandTimer(_ command: TimerCommand) {
    recorded.resumptions.append { TimerTask.perform(command) }
  }

  /// Leave `work` to the caller's next slices, once these effects are performed.
  mutating func addBulk(_ work: consuming BulkWork) {
    guard var merged = recorded.bulk?.work else {
      recorded.bulk = .work(work)
      return
    }
    merged.merge(work)
    recorded.bulk = .work(merged)
  }

  /// The work left to the caller's next slices (for tests).
  var bulk: BulkWork? { lists?.bulk?.work }

  /// Takes the work left to the caller's next slices, which it then does itself (the harness of
  /// the scheduler's tests).
  mutating func takeBulk() -> BulkWork? {
    guard lists != nil else { return nil }
    return lists!.bulk.take()?.work
  }

  /// Start the external work of `index`: in the slot it was just given, or, cancelled while
  /// waiting, outside any slot. Its end is reported by record and identifier (a report after
  /// the record was reused finds another identifier and is ignored), so the work holds no
  /// reference to the handle.
  mutating func startExternal(_ index: Int, id: OperationID, _ work: any ExternalWork) {
    let start = ExternalStartEffect(index: index, id: id, work: work)
    if recorded.externalStart == nil {
      recorded.externalStart = start
    } else {
      recorded.externalStarts.append(start)
    }
  }

  /// Performs everything, in this order: workers are started first so the queue keeps moving
  /// while user code runs; then what the scheduler let go of is released (a handle's `deinit`
  /// takes the scheduler's lock: done now, before any waiter is woken, it does not contend with
  /// the woken task's next call); events are delivered before completion handlers, and
  /// completion handlers run before waiters wake, so a task that awaited an operation finds its
  /// handlers already run.
  mutating func perform() {
    if wakeLingerer { Engine.lingererWake.store(true, ordering: .releasing) }
    // Most events (an operation added to a busy queue; one ended and the next claimed) record
    // no list: what they let go of is released with `self`, which the caller drops right after
    // this returns, before anything else happens on this thread: moving the lists out and
    // resetting the garbage would cost every event. A tag test, since `take()` would copy the
    // whole slot out.
    if case .some = firstSpawn { startWorkers() }
    if case .none = lists { return }
    let lists = lists.take()
    garbage = Garbage()
    guard let lists else { return }
    if let resumptions = lists.resumptions { for resumption in resumptions { resumption() } }
    if let work = lists.endedExternal {
      work.ended()
      if let more = lists.moreEndedExternal { for work in more { work.ended() } }
    }
    if let completions = lists.completions { for completion in completions { completion() } }
    if let waiters = lists.waiters { for waiter in waiters { waiter.resume() } }
    if let cancellations = lists.cancellations { for worker in cancellations { worker.cancelTask() } }
    if let externalCancels = lists.externalCancels { for work in externalCancels { work.cancel() } }
    if let first = lists.externalStart { Engine.startExternal(first, then: lists.externalStarts) }
    if let bulk = lists.bulk { Engine.continueBulk(bulk.work) }
  }
}

extension SchedulerEffects {
  /// Starts the workers recorded, in order: out of line, since most events start none.
  @inline(never)
  private mutating func startWorkers() {
    guard let spawn = firstSpawn.take() else { return }
    Engine.start(spawn)
    if let spawns = lists?.spawns { for spawn in spawns { Engine.start(spawn) } }
  }
}

/// External work to start once the lock is released.
struct ExternalStartEffect: Sendable {
  let index: Int
  let id: OperationID
  let work: any ExternalWork
}

extension Optional {
  /// Appends to the list, creating it on first use.
  mutating func append<Element>(_ element: Element) where Wrapped == [Element] {
    if self == nil {
      self = [element]
    } else {
      self!.append(element)
    }
  }
}

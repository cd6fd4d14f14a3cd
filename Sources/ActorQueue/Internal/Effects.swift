/// A worker task to start.
struct Spawn: Sendable {
  typealias Handle = AnyQueueOperation

  let queue: Int
  let taskPriority: TaskPriority?
  let worker: Worker
  /// Its first step, decided under the lock (an operation claimed for it), or `nil`: it claims
  /// when it runs.
  var first: WorkerAction? = nil
}

/// User-owned values the scheduler let go of, released once the lock is released: the last
/// reference to a handle, a body or an outcome may run user code (a `deinit`), which may call
/// back into the scheduler.
struct Garbage: Sendable {
  typealias Handle = AnyQueueOperation

  /// Most events let go of one handle (an ended operation leaving its queue): no allocation.
  private var handle: Handle?
  private var handles: [Handle]?
  /// Every operation that ends has an outcome to release with its record: no allocation.
  private var outcome: OutcomeBox?
  private var body: OperationBody?
  /// Cancelling many waiting operations lets go of as many bodies: a list of their own, so that
  /// none is boxed.
  private var bodies: [OperationBody]?
  private var external: ExternalWork?
  private var error: (any Error)?
  private var values: [any Sendable]?

  var hasHandles: Bool { handle != nil }

  mutating func keep(handle: Handle) {
    if self.handle == nil {
      self.handle = handle
    } else {
      handles.append(handle)
    }
  }

  mutating func keep(outcome: OutcomeBox) { Self.keep(outcome, in: &self.outcome, else: &values) }
  mutating func keep(body: @escaping OperationBody) {
    if self.body == nil {
      self.body = body
    } else {
      bodies.append(body)
    }
  }
  mutating func keep(external: ExternalWork) { Self.keep(external, in: &self.external, else: &values) }
  mutating func keep(error: any Error) { Self.keep(error, in: &self.error, else: &values) }

  /// Keeps `value` in its own slot if that is free (no allocation), in the overflow list if not.
  private static func keep<Value: Sendable>(
    _ value: Value, in slot: inout Value?, else overflow: inout [any Sendable]?
  ) {
    if slot == nil {
      slot = value
    } else {
      overflow.append(value)
    }
  }

  mutating func keep(_ value: any Sendable) {
    values.append(value)
  }

  /// Takes the handles kept, leaving the other values.
  mutating func takeHandles() -> [Handle] {
    guard let first = handle.take() else { return [] }
    return [first] + (handles.take() ?? [])
  }
}

/// What an event decided to do once the scheduler's lock is released.
///
/// The scheduler decides under the lock and acts outside it: starting worker tasks, resuming
/// waiters and event consumers, running completion handlers, cancelling tasks (which runs the
/// body's cancellation handlers), starting or cancelling external work, and releasing what the
/// user gave us are effects, and none of them may happen while the lock is held. Most events
/// record few: the lists are optional, so an empty `SchedulerEffects` costs no allocation and no
/// reference counting. `Engine` performs them (`perform()`); tests read them.
struct SchedulerEffects: Sendable {
  typealias Handle = AnyQueueOperation

  private(set) var spawns: [Spawn]?
  private(set) var resumptions: [@Sendable () -> Void]?
  private(set) var completions: [@Sendable () -> Void]?
  private(set) var waiters: [CheckedContinuation<Void, Never>]?
  private(set) var cancellations: [Worker]?
  private(set) var externalCancels: [@Sendable () -> Void]?
  private(set) var externalStarts: [(Handle, ExternalStart)]?
  /// An operation was made ready on a queue whose worker lingers: wake it.
  var wakeLingerer = false
  var garbage = Garbage()

  /// Start a worker task.
  mutating func spawn(_ spawn: Spawn) {
    spawns.append(spawn)
  }

  /// Hand `element` to an event consumer waiting for it.
  mutating func resume<Element: Sendable>(
    _ consumer: CheckedContinuation<Element?, Never>, returning element: Element?
  ) {
    resumptions.append { consumer.resume(returning: element) }
  }

  /// Run an operation's completion handlers.
  mutating func complete(_ handlers: @escaping @Sendable () -> Void) {
    completions.append(handlers)
  }

  /// Wake tasks waiting for operations to end.
  mutating func wake(_ continuations: [CheckedContinuation<Void, Never>]) {
    if waiters == nil {
      waiters = continuations
    } else {
      waiters!.append(contentsOf: continuations)
    }
  }

  /// Let a task suspended at a checkpoint go on, or throw `CancellationError`.
  mutating func resumeCheckpoint(_ resume: @escaping @Sendable (_ cancelled: Bool) -> Void, cancelled: Bool) {
    resumptions.append { resume(cancelled) }
  }

  /// Cancel a worker task (its operation's body sees `Task.isCancelled`).
  mutating func cancel(_ worker: Worker) {
    cancellations.append(worker)
  }

  /// Cancel the external work of an operation while it runs.
  mutating func runExternalCancel(_ cancel: @escaping @Sendable () -> Void) {
    externalCancels.append(cancel)
  }

  /// Start the external work of an operation cancelled while waiting, outside any slot.
  mutating func startExternal(_ handle: Handle, _ start: @escaping ExternalStart) {
    externalStarts.append((handle, start))
  }
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

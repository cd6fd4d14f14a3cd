import ActorQueue
public import Foundation

/// A Foundation `Operation` that runs an `async` closure: the way to put new async code into
/// an existing `OperationQueue` (or behind a legacy dependency) while migrating.
///
/// ```swift
/// let upload = AsyncBlockOperation { try await api.upload(file) }
/// legacyQueue.addOperation(upload)      // an OperationQueue; dependencies work as usual
/// ```
///
/// It is asynchronous in Foundation's sense (`isAsynchronous` is `true`): `start()` launches a
/// `Task` and returns, so the closure never blocks one of the queue's threads, and the
/// operation finishes when the task ends — however it ends, by construction exactly once, with
/// the state notifications Foundation needs. `cancel()` also cancels that task
/// (`Task.isCancelled` becomes `true` inside the closure); an operation cancelled before it
/// starts never runs its closure, as in Foundation. An error the closure throws is kept in
/// ``error``; the operation finishes either way (Foundation has no failed state).
///
/// The task is detached, at a priority derived from `qualityOfService`
/// (`.userInteractive`/`.userInitiated`: `.high`, `.utility`: `.utility`, `.background`:
/// `.background`, `.default`: the runtime's default). Cost: one task per run, plus an
/// `Operation`.
///
/// `@unchecked Sendable`: `Operation` is `Sendable` and this subclass adds only `let`s and
/// state behind locks (`LockedValue`).
public final class AsyncBlockOperation: Operation, @unchecked Sendable {
  private enum State {
    case initial
    case executing(Task<Void, Never>?)
    case finished
  }

  private let state = LockedValue(State.initial)
  /// Released when the run ends, so captures do not outlive it.
  private let body: LockedValue<(@Sendable () async throws -> Void)?>
  private let failure = LockedValue<(any Error)?>(nil)

  /// An operation that runs `body` once when started (by an `OperationQueue` or `start()`).
  public init(_ body: @escaping @Sendable () async throws -> Void) {
    self.body = LockedValue(body)
    super.init()
  }

  /// The error the closure threw, if it threw; `nil` before it ends and when it returned.
  public var error: (any Error)? { failure.withLock { $0 } }

  /// `true`: `start()` returns at once and the operation finishes when its task ends.
  public override var isAsynchronous: Bool { true }

  /// Whether the task is running.
  public override var isExecuting: Bool {
    state.withLock { if case .executing = $0 { true } else { false } }
  }

  /// Whether the task has ended (or the operation was cancelled before it started).
  public override var isFinished: Bool {
    state.withLock { if case .finished = $0 { true } else { false } }
  }

  /// Launches the task; if the operation was cancelled already, finishes at once instead.
  public override func start() {
    let begins = state.withLock { state in
      guard case .initial = state else { return false }
      state = .executing(nil)
      return true
    }
    guard begins else { return }  // started twice: Foundation's start() would trap; ignored
    if isCancelled { return finish() }
    willChangeValue(forKey: "isExecuting")
    didChangeValue(forKey: "isExecuting")

    let body = self.body.withLock { $0 }
    let task = Task.detached(priority: Self.taskPriority(for: qualityOfService)) {
      do {
        try await body?()
      } catch {
        self.failure.withLock { $0 = error }
      }
      self.finish()
    }
    let stored = state.withLock { state in
      guard case .executing = state else { return false }
      state = .executing(task)
      return true
    }
    // cancel() sets isCancelled before it looks for the task; here the task is stored before
    // isCancelled is read: whichever comes second cancels the task.
    if stored, isCancelled { task.cancel() }
  }

  /// Marks the operation cancelled (Foundation's `cancel()`) and cancels its running task.
  public override func cancel() {
    super.cancel()
    let task: Task<Void, Never>? = state.withLock { state in
      if case .executing(let task) = state { return task }
      return nil
    }
    task?.cancel()
  }

  private func finish() {
    let wasExecuting = state.withLock { state in
      defer { state = .finished }
      if case .executing = state { return true }
      return false
    }
    body.withLock { $0 = nil }
    willChangeValue(forKey: "isExecuting")
    willChangeValue(forKey: "isFinished")
    if wasExecuting { didChangeValue(forKey: "isExecuting") }
    didChangeValue(forKey: "isFinished")
  }

  private static func taskPriority(for quality: QualityOfService) -> TaskPriority? {
    switch quality {
    case .userInteractive, .userInitiated: .high
    case .utility: .utility
    case .background: .background
    case .default: nil
    @unknown default: nil
    }
  }
}

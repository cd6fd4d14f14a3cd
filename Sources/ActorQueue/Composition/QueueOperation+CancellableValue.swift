extension QueueOperation {
  /// The body's value, awaited so that cancelling the awaiting task counts: the one exception
  /// to "waiting follows `Task.value`" (cancelling a task that awaits ``value`` does not end the
  /// wait, nor touch the operation).
  ///
  /// The operation belongs to the tasks awaiting it this way. When such a task is cancelled,
  /// its wait ends at once with `CancellationError`, whatever the operation does next; once
  /// every task awaiting it this way has been cancelled, the operation is cancelled too (as if
  /// by ``AnyQueueOperation/cancel()``), as coalesced work is cancelled once its last caller's
  /// handle goes. Tasks awaiting ``value`` or ``result`` never count, and never keep it going.
  ///
  /// ```swift
  /// .task { image = try? await thumbnail.cancellableValue }  // the view went away: cancelled
  /// ```
  ///
  /// - Throws: as ``value`` (also ``ActorQueueError/awaitsItself`` from its own body); and
  ///   `CancellationError` at once when the awaiting task is cancelled.
  ///
  /// Cost: a completion handler and a small box per wait, kept until the operation ends; an
  /// entry in a process-wide table (behind a lock of its own) while tasks wait this way.
  public var cancellableValue: Success {
    get async throws {
      if outcome != nil { return try await value }  // ended: at once
      let task = currentTaskAddress()
      if let refused = Engine.read({ [recordIndex] in $0.selfWait(for: recordIndex, fromTask: task) }) {
        throw refused
      }
      let wait = CancellableWait<Success>()
      CancellableWaits.join(id)
      return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
          if wait.set(continuation) {
            onCompletion { result in
              wait.resume(with: result)
              if wait.leave() { _ = CancellableWaits.leave(self.id, cancelled: false) }
            }
          }
        }
      } onCancel: {
        wait.resume(with: .failure(CancellationError()))
        if wait.leave(), CancellableWaits.leave(id, cancelled: true) { cancel() }
      }
    }
  }
}

/// One task's wait in ``QueueOperation/cancellableValue``: resumed once, by the operation's end
/// or the task's cancellation, whichever comes first; it leaves the operation's count once.
private final class CancellableWait<Success: Sendable>: Sendable {
  private struct State {
    var continuation: CheckedContinuation<Success, any Error>?
    /// Resumed before the continuation arrived (cancelled at once).
    var early: Result<Success, any Error>?
    var resumed = false
    var left = false
  }

  private let state = LockedValue(State())

  /// Stores the continuation; `false` if the wait ended already (then it has been resumed).
  func set(_ continuation: CheckedContinuation<Success, any Error>) -> Bool {
    let early: Result<Success, any Error>? = state.withLock { state in
      if let early = state.early { return early }
      state.continuation = continuation
      return nil
    }
    guard let early else { return true }
    continuation.resume(with: early)
    return false
  }

  /// Ends the wait with `result`, if it has not ended.
  func resume(with result: Result<Success, any Error>) {
    let continuation: CheckedContinuation<Success, any Error>? = state.withLock { state in
      guard !state.resumed else { return nil }
      state.resumed = true
      guard let continuation = state.continuation.take() else {
        state.early = result
        return nil
      }
      return continuation
    }
    continuation?.resume(with: result)
  }

  /// Whether this is the first call: the wait leaves the operation's count once.
  func leave() -> Bool {
    state.withLock { state in
      defer { state.left = true }
      return !state.left
    }
  }
}

/// How many tasks await each operation through ``QueueOperation/cancellableValue``, process-wide:
/// only operations awaited that way have an entry.
enum CancellableWaits {
  private static let counts = LockedValue<[OperationID: Int]>([:])

  /// Tasks awaiting `id` this way now (for tests).
  static func count(of id: OperationID) -> Int { counts.withLock { $0[id] ?? 0 } }

  static func join(_ id: OperationID) {
    counts.withLock { $0[id, default: 0] += 1 }
  }

  /// One wait left; returns whether it was the last and it left because its task was cancelled:
  /// then the operation must be cancelled.
  static func leave(_ id: OperationID, cancelled: Bool) -> Bool {
    counts.withLock { counts in
      let left = (counts[id] ?? 1) - 1
      counts[id] = left > 0 ? left : nil
      return left == 0 && cancelled
    }
  }
}

public import ActorQueue
public import Foundation
import Synchronization

extension AnyQueueOperation {
  /// A Foundation `Operation` that finishes when this operation ends (in any terminal state),
  /// so legacy operations can depend on new async work.
  ///
  /// ```swift
  /// let token = actorQueue.addOperation { try await auth.refresh() }
  /// let marker = token.asFoundationOperation()
  /// legacyFetch.addDependency(marker)
  /// legacyQueue.addOperations([marker, legacyFetch], waitUntilFinished: false)
  /// ```
  ///
  /// Add the returned operation to an `OperationQueue`, like any `Operation` a legacy one
  /// depends on: Foundation finishes an operation only when it is started. It is not ready
  /// (`isReady` is `false`) until this operation has ended, so it takes no slot of that queue
  /// while it waits; it then finishes at once. Cancelling it (its `cancel()`, or
  /// `cancelAllOperations()` on its queue) cancels this operation too; it still finishes only
  /// after this operation has ended (a waiting one ends at once when cancelled).
  ///
  /// Each call returns a new `Operation` (an `Operation` runs once). Cost: an `Operation` and
  /// one task that waits for this operation to end.
  public func asFoundationOperation() -> Operation {
    QueueOperationMarker(for: self)
  }
}

/// The `Operation` returned by ``AnyQueueOperation/asFoundationOperation()``.
///
/// `@unchecked Sendable`: `Operation` is `Sendable`; the added state is a `let` and a `Mutex`.
final class QueueOperationMarker: Operation, @unchecked Sendable {
  private let target: AnyQueueOperation
  private let targetEnded = Mutex(false)

  init(for target: AnyQueueOperation) {
    self.target = target
    super.init()
    name = "\(target.name ?? "queue operation") (\(target.id))"
    if target.isFinished {
      targetEnded.withLock { $0 = true }
    } else {
      Task { [self] in
        await target.waitUntilFinished()
        targetEnded.withLock { $0 = true }
        willChangeValue(forKey: "isReady")
        didChangeValue(forKey: "isReady")
      }
    }
  }

  /// Ready once the queue operation has ended (and Foundation's own conditions hold).
  override var isReady: Bool {
    targetEnded.withLock { $0 } && super.isReady
  }

  /// Foundation's `cancel()`, and the queue operation's.
  override func cancel() {
    super.cancel()
    target.cancel()
  }
}

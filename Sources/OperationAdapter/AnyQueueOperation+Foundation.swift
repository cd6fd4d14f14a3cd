public import ActorQueue
public import Foundation

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
/// `@unchecked Sendable`: `Operation` is `Sendable`; the added state is a `let` and a `LockedValue`.
final class QueueOperationMarker: Operation, @unchecked Sendable {
  private let target: AnyQueueOperation
  private let targetEnded = LockedValue(false)

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

extension AnyQueueOperation {
  /// A Foundation `Progress` that follows this operation's `progress`: its
  /// `fractionCompleted` is the operation's fraction (to a millionth: `totalUnitCount` is
  /// 1,000,000), indeterminate while the operation's total is, and complete once it finished.
  /// Cancelling the `Progress` cancels the operation; an operation that ends cancelled cancels it.
  ///
  /// ```swift
  /// let upload = queue.addOperation(name: "upload") { progress in
  ///   progress.setTotal(parts.count)
  ///   for part in parts { try await send(part); progress.complete() }
  /// }
  /// progressView.observedProgress = upload.foundationProgress   // UIProgressView, NSProgressIndicator
  /// ```
  ///
  /// Each access returns a new `Progress`, updated by one task that follows
  /// `progressUpdates` until the operation ends (KVO notifications come from
  /// that task's thread, as they do from any `Progress` updated off the main thread). Add it as a
  /// child of a parent `Progress` with `addChild(_:withPendingUnitCount:)` to roll it up there.
  public var foundationProgress: Progress {
    let progress = Progress(totalUnitCount: Self.foundationScale)
    progress.isCancellable = true
    progress.cancellationHandler = { [weak self] in self?.cancel() }
    Self.apply(self.progress, to: progress, cancelled: state == .cancelled)
    let updates = progressUpdates
    Task { [weak self] in
      for await update in updates {
        Self.apply(update, to: progress, cancelled: update.isFinished && self?.state == .cancelled)
      }
    }
    return progress
  }

  /// The units of a bridged `Progress`: fractions to a millionth.
  private static let foundationScale: Int64 = 1_000_000

  private static func apply(_ update: OperationProgress, to progress: Progress, cancelled: Bool) {
    if cancelled, !progress.isCancelled { progress.cancel() }
    let indeterminate = update.total == nil && !update.isFinished && update.fraction == 0
    progress.totalUnitCount = indeterminate ? -1 : foundationScale
    progress.completedUnitCount =
      indeterminate ? 0 : Int64((update.fraction * Double(foundationScale)).rounded())
  }
}

/// Work that runs elsewhere (a thread, a callback API) and reports its end, for an operation
/// made with ``QueueOperation/init(name:priority:external:)`` (package-internal: the
/// OperationAdapter's legacy operations conform). The scheduler calls each method once the lock
/// is released.
///
/// A protocol rather than a bundle of closures: the adapter's object that runs a legacy
/// operation is its external work as it is, so an operation costs no closure allocations.
package protocol ExternalWork: AnyObject, Sendable {
  /// With `true`, an operation cancelled while waiting in a queue is not ended at once: its work
  /// is started outside the slot accounting (Foundation's rule, which the OperationAdapter
  /// follows), and it ends when the work reports its end.
  var startsWhenCancelled: Bool { get }
  /// Starts the work, which reports its end through `complete` (from any thread; later calls
  /// are ignored). Must return promptly.
  func start(_ complete: @escaping @Sendable (Result<any Sendable, any Error>) -> Void)
  /// The operation was cancelled while its work runs (on the cancelling thread).
  func cancel()
  /// The operation has ended, however it ended (before its completion handlers run).
  func ended()
}

/// External work given as closures.
final class ClosureExternalWork: ExternalWork {
  let startsWhenCancelled: Bool
  private let startWork: @Sendable (_ complete: @escaping @Sendable (Outcome) -> Void) -> Void
  private let cancelWork: @Sendable () -> Void

  init(
    start: @escaping @Sendable (_ complete: @escaping @Sendable (Outcome) -> Void) -> Void,
    cancel: @escaping @Sendable () -> Void, startsWhenCancelled: Bool
  ) {
    self.startWork = start
    self.cancelWork = cancel
    self.startsWhenCancelled = startsWhenCancelled
  }

  func start(_ complete: @escaping @Sendable (Outcome) -> Void) { startWork(complete) }
  func cancel() { cancelWork() }
  func ended() {}
}

import ActorQueue
import Dispatch
import Foundation
import Synchronization

/// Foundation's side of the adapter: the queues that start legacy operations and report that
/// they finished, and the record of the legacy operations the adapter holds.
enum LegacyRuntime {
  /// Starts every legacy operation the adapter runs, on the threads Foundation provides (a
  /// blocking `main()` never blocks a Swift cooperative thread). Unlimited: the ``ActorQueue``
  /// wrapping an operation has decided already that it may run; this queue only starts it
  /// the way `OperationQueue` does (`start()` on one of its threads, `isReady` honoured).
  static let operations: OperationQueue = {
    let queue = OperationQueue()
    queue.name = "OperationAdapter.legacy"
    return queue
  }()

  /// Runs the sentinels that learn when an operation finished. Their dispatch queue is serial
  /// and so targets an overcommitting root queue: a sentinel gets a thread even while blocking
  /// `main()`s occupy every thread of `operations`. A sentinel only resumes a continuation.
  static let sentinels: OperationQueue = {
    let queue = OperationQueue()
    queue.name = "OperationAdapter.sentinels"
    queue.underlyingQueue = sentinelDispatchQueue
    return queue
  }()

  /// Kept here: Foundation holds `underlyingQueue` without retaining it.
  private static let sentinelDispatchQueue = DispatchQueue(label: "OperationAdapter.sentinels")

  /// Runs the gates that keep a wrapped operation `.pending` (holding no slot of its own queue)
  /// until its Foundation dependencies have finished.
  static let gates = ActorQueue(name: "OperationAdapter.legacyDependencies")

  /// The legacy operations wrapped by a handle and not finished yet.
  private static let wrapped = Mutex<Set<ObjectIdentifier>>([])

  /// Calls `body` once each of `operations` has finished, as Foundation sees it.
  ///
  /// A sentinel `BlockOperation` depends on them: Foundation releases a dependent through its
  /// own record of the dependency's end — the `didChangeValue(forKey: "isFinished")` that the
  /// operation sends (on Linux that notification is the only way a state change reaches the
  /// queue) — not through `completionBlock`, which a subclass may override or reassign.
  static func whenFinished(_ operations: [Operation], _ body: @escaping @Sendable () -> Void) {
    let sentinel = BlockOperation(block: body)
    for operation in operations { sentinel.addDependency(operation) }
    sentinels.addOperation(sentinel)
  }

  /// Records that `operation` is wrapped; `false` if it already was.
  static func register(_ operation: Operation) -> Bool {
    wrapped.withLock { $0.insert(ObjectIdentifier(operation)).inserted }
  }

  static func unregister(_ identifier: ObjectIdentifier) {
    _ = wrapped.withLock { $0.remove(identifier) }
  }

  /// The misuse that makes `operation` impossible to run now, if any.
  static func misuse(of operation: Operation) -> OperationAdapterError? {
    if operation.isFinished { return .alreadyFinished }
    if operation.isExecuting { return .alreadyExecuting }
    return nil
  }
}

extension Duration {
  /// The duration as a `DispatchTimeInterval`, or `nil` if it is too long to matter
  /// (more than about 292 years).
  var dispatchInterval: DispatchTimeInterval? {
    let (seconds, attoseconds) = components
    guard seconds < Int64.max / 1_000_000_000 else { return nil }
    let nanoseconds = max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    return .nanoseconds(Int(nanoseconds))
  }
}

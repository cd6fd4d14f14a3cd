import ActorQueue
import Dispatch
import Foundation
import Synchronization

/// Foundation's side of the adapter: how legacy operations are started, how their end is
/// learned, and the record of the legacy operations the adapter holds.
enum LegacyRuntime {
  /// Runs the gates that keep a wrapped operation `.pending` (holding no slot of its own queue)
  /// until its Foundation dependencies have finished.
  static let gates = ActorQueue(name: "OperationAdapter.legacyDependencies")

  /// The legacy operations wrapped by a handle and not finished yet, in shards: one lock for
  /// all was contended between the submitting thread and the finishing ones (8% of the time).
  private static let wrapped: [WrappedShard] = (0..<16).map { _ in WrappedShard() }

  private final class WrappedShard: Sendable {
    let identifiers = LockedValue<Set<ObjectIdentifier>>([])
  }

  private static func shard(_ identifier: ObjectIdentifier) -> WrappedShard {
    wrapped[identifier.hashValue & 15]
  }

  // MARK: Starting

  /// Starts `operation` as an `OperationQueue` would, on a thread that is not one of the Swift
  /// cooperative pool's.
  ///
  /// Why not a shared `OperationQueue`: on Linux its threads come from Dispatch's global
  /// concurrent pool, which the Swift cooperative executor shares; two blocking `main()`s on a
  /// two-core machine stall every Swift task for about a second, eight for six (measured). The
  /// adapter's own threads (``LegacyThreads``) overcommit instead, so a blocking `main()`
  /// blocks only its thread.
  ///
  /// A ready operation gets `start()` called directly, as Foundation documents for running an
  /// operation yourself. One that is not ready (a dependency added after it was wrapped, or an
  /// overridden `isReady`) goes to a one-off `OperationQueue` running on a serial dispatch queue
  /// of its own (an overcommitting thread), which starts it when Foundation says it is ready.
  ///
  /// `finished` is called once the operation has finished, as Foundation sees it. Most
  /// operations (any synchronous `main()`) have finished when `start()` returns: that is checked
  /// first, on the thread that started it, and only an operation still unfinished then gets a
  /// sentinel (``whenFinished(_:_:)``), which costs an `Operation` of its own. (Attaching it
  /// after `start()` misses nothing: Foundation fires a dependent at once for a dependency that
  /// finished before it was added.)
  static func start(_ operation: Operation, finished: @escaping @Sendable () -> Void) {
    if operation.isReady {
      LegacyThreads.shared.run {
        operation.start()
        if FinishDetection.foundationIsCorelibs, operation.isFinished {
          // What corelibs' OperationQueue does after start() returns: an operation that became
          // finished without sending the notification is recorded as finished (idempotent).
          operation.didChangeValue(forKey: "isFinished")
        }
        if operation.isFinished {
          finished()
        } else {
          whenFinished([operation], finished)
        }
      }
    } else {
      let thread = DispatchQueue(
        label: "OperationAdapter.legacy", qos: operation.qualityOfService.dispatchQoS)
      let queue = OperationQueue()
      queue.name = "OperationAdapter.legacy (waiting until ready)"
      queue.underlyingQueue = thread
      whenFinished([operation]) {
        // Foundation holds `underlyingQueue` unretained: keep it until the operation finished.
        withExtendedLifetime((queue, thread)) {}
        finished()
      }
      queue.addOperation(operation)
    }
  }

  // MARK: Learning that operations finished

  /// Calls `body` once each of `operations` has finished, as Foundation sees it.
  ///
  /// Foundation's own dependency mechanism tells: a sentinel operation depends on them, and
  /// Foundation releases a dependent when a dependency sends `didChangeValue(forKey:
  /// "isFinished")` with `isFinished` true (on Linux that notification is the only way a state
  /// change reaches Foundation). A subclass cannot break this by overriding or reassigning
  /// `completionBlock`, and a second notification is ignored by Foundation.
  static func whenFinished(_ operations: [Operation], _ body: @escaping @Sendable () -> Void) {
    switch FinishDetection.current {
    case .sentinelQueue:
      // A queue per sentinel: corelibs' OperationQueue walks every waiting operation each time
      // one becomes ready, so one queue shared by thousands of sentinels costs O(n²).
      let queue = OperationQueue()
      queue.name = "OperationAdapter.sentinel"
      queue.underlyingQueue = sentinelThreads
      // The block keeps its queue alive; the queue lets go of the block once it has run.
      let sentinel = BlockOperation {
        withExtendedLifetime(queue) {}
        body()
      }
      for operation in operations { sentinel.addDependency(operation) }
      queue.addOperation(sentinel)
    case .readinessProbe:
      FinishSentinel(waitingFor: operations, then: body)
    }
  }

  /// Where sentinels' blocks run: each calls `body`, which only records the end.
  private static let sentinelThreads = DispatchQueue(
    label: "OperationAdapter.sentinels", attributes: .concurrent)

  // MARK: The record of wrapped operations

  /// Records that `operation` is wrapped; `false` if it already was.
  static func register(_ operation: Operation) -> Bool {
    let identifier = ObjectIdentifier(operation)
    return shard(identifier).identifiers.withLock { $0.insert(identifier).inserted }
  }

  static func unregister(_ identifier: ObjectIdentifier) {
    _ = shard(identifier).identifiers.withLock { $0.remove(identifier) }
  }

  /// The misuse that makes `operation` impossible to run now, if any.
  static func misuse(of operation: Operation) -> OperationAdapterError? {
    if operation.isFinished { return .alreadyFinished }
    if operation.isExecuting { return .alreadyExecuting }
    return nil
  }
}

/// A dependent that is never enqueued and fires when its dependencies have finished
/// (``FinishDetection/readinessProbe``, corelibs-foundation only).
///
/// Cheaper than a queue per sentinel on Linux. It relies on how corelibs-foundation releases a
/// dependent: when a dependency finishes (and when a dependency is added), it lowers the
/// dependent's count of unfinished dependencies and then reads the dependent's `isReady` to
/// record its readiness. The override fires there. The adapter's tests run through both paths.
///
/// Foundation holds dependents unretained, so the sentinel keeps itself alive until it fires.
///
/// `@unchecked Sendable`: `Operation` is `Sendable`; the added state is behind locks
/// (`LockedValue`) and an `Atomic`.
private final class FinishSentinel: Operation, @unchecked Sendable {
  private let action: LockedValue<(@Sendable () -> Void)?>
  private let armed = Atomic(false)
  private let keepAlive = LockedValue<FinishSentinel?>(nil)

  @discardableResult
  init(waitingFor operations: [Operation], then action: @escaping @Sendable () -> Void) {
    self.action = LockedValue(action)
    super.init()
    keepAlive.withLock { $0 = self }
    for operation in operations { addDependency(operation) }
    // Armed only now, so that a dependency found finished while the others are still being
    // added does not fire early; a dependency that finished in between is caught just below.
    armed.store(true, ordering: .releasing)
    _ = isReady
  }

  override var isReady: Bool {
    let ready = super.isReady
    if ready, armed.load(ordering: .acquiring) { fire() }
    return ready
  }

  private func fire() {
    let action = self.action.withLock { action in
      defer { action = nil }
      return action
    }
    guard let action else { return }
    action()
    keepAlive.withLock { $0 = nil }
  }
}

extension QualityOfService {
  /// The dispatch QoS Foundation uses for this quality of service.
  var dispatchQoS: DispatchQoS {
    switch self {
    case .userInteractive: .userInteractive
    case .userInitiated: .userInitiated
    case .utility: .utility
    case .background: .background
    case .default: .default
    @unknown default: .default
    }
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

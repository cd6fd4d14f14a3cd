import Foundation

/// An asynchronous `Operation` as OperationQueue users write one: `start()` marks it executing
/// and launches its work elsewhere (a timer, a callback), which calls `finish()`; the state and
/// its KVO notifications are written by hand. Subclasses override `work()`.
///
/// `@unchecked Sendable`: `executing` and `finished` are read and written only under `lock`; the
/// KVO notifications Operation needs are sent outside it. Subclasses add only immutable state.
class AsynchronousOperation: Operation, @unchecked Sendable {
  private let lock = NSLock()
  private var executing = false
  private var finished = false

  override var isAsynchronous: Bool { true }
  override var isExecuting: Bool { lock.withLock { executing } }
  override var isFinished: Bool { lock.withLock { finished } }

  override func start() {
    willChangeValue(forKey: "isExecuting")
    lock.withLock { executing = true }
    didChangeValue(forKey: "isExecuting")
    work()
  }

  /// Launches the work, which calls ``finish()`` once, from any thread.
  func work() {}

  /// Moves from executing to finished.
  func finish() {
    willChangeValue(forKey: "isExecuting")
    willChangeValue(forKey: "isFinished")
    lock.withLock {
      executing = false
      finished = true
    }
    didChangeValue(forKey: "isFinished")
    didChangeValue(forKey: "isExecuting")
  }
}

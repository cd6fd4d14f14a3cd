// A copy of Tests/ActorQueueTests/Support (test targets cannot share sources).
import Foundation

/// Runs blocking Foundation code (`waitUntilFinished`, `waitUntilAllOperationsAreFinished`)
/// on a thread of its own and resumes the caller when it returns, so tests can drive
/// `OperationQueue` side by side with ActorQueue without blocking the cooperative pool.
func onBlockingThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    let thread = Thread { continuation.resume(returning: work()) }
    thread.start()
  }
}

extension OperationQueue {
  /// `waitUntilAllOperationsAreFinished()` without blocking the caller's thread.
  func allFinished() async {
    await onBlockingThread { self.waitUntilAllOperationsAreFinished() }
  }
}

extension Operation {
  /// `waitUntilFinished()` without blocking the caller's thread.
  func finished() async {
    await onBlockingThread { self.waitUntilFinished() }
  }
}

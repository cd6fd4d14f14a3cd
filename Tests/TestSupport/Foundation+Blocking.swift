import Foundation

/// Runs blocking Foundation code (`waitUntilFinished`, `waitUntilAllOperationsAreFinished`)
/// on a thread of its own and resumes the caller when it returns, so tests can drive
/// `OperationQueue` side by side with ActorQueue without blocking the cooperative pool.
package func onBlockingThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    let thread = Thread { continuation.resume(returning: work()) }
    thread.start()
  }
}

extension OperationQueue {
  /// `waitUntilAllOperationsAreFinished()` without blocking the caller's thread.
  package func allFinished() async {
    await onBlockingThread { self.waitUntilAllOperationsAreFinished() }
  }
}

extension Operation {
  /// `waitUntilFinished()` without blocking the caller's thread.
  package func finished() async {
    await onBlockingThread { self.waitUntilFinished() }
  }
}

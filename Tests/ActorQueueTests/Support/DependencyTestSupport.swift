import ActorQueue
import Dispatch
import TestSupport

/// An error a test body throws on purpose; `code` tells one thrower from another.
struct TestError: Error, Equatable {
  let code: Int
}

/// A gate a *synchronous* `Operation` body can block on (Foundation's bodies cannot `await`).
///
/// `wait()` blocks the calling thread until `open()`; opening twice is harmless. Used only in
/// OperationQueue bodies, which run on Foundation's own threads, never on the cooperative pool.
final class BlockingGate: Sendable {
  private let semaphore = DispatchSemaphore(value: 0)
  private let opened = LockedValue(false)

  init() {}

  func open() {
    let first = opened.withLock { opened in
      defer { opened = true }
      return !opened
    }
    // One signal per waiter is enough: each waiter re-signals after it wakes (see `wait`).
    if first { semaphore.signal() }
  }

  func wait() {
    semaphore.wait()
    semaphore.signal()  // let the next waiter through too: the gate stays open
  }
}

/// Records that a body ran, to assert that it never did.
final class RunFlag: Sendable {
  private let count = LockedValue(0)

  init() {}

  func mark() { count.withLock { $0 += 1 } }

  var didRun: Bool { count.withLock { $0 > 0 } }
  var runs: Int { count.withLock { $0 } }
}

extension AnyQueueOperation {
  /// Every state the operation goes through from now until it ends (its current state first).
  func collectStates() -> Task<[OperationState], Never> {
    let stream = events
    return Task {
      var states: [OperationState] = []
      for await state in stream { states.append(state) }
      return states
    }
  }
}

/// The `DependencyFailedError` a result failed with, if it is one.
func dependencyFailure<T>(_ result: Result<T, any Error>) -> DependencyFailedError? {
  guard case .failure(let error) = result else { return nil }
  return error as? DependencyFailedError
}

/// Releases a failed chain's operations from its end, so that each release frees one link.
///
/// Works around a core bug (see `DependencyReleaseTests`): each step of a failed chain ends with a
/// `DependencyFailedError` wrapping the error of the step before, so the last step's error holds
/// the errors of the whole chain, and releasing it last recurses once per step (about 20,000
/// steps overflow a cooperative-pool thread's stack in a debug build, fewer under the thread
/// sanitizer). Released from the end, each error is freed while the one it wraps is still held
/// by its own step. A long failed chain in a test is released this way so that the bug fails its
/// own test instead of crashing the whole test run.
func releaseFromTheEnd<Element>(_ operations: inout [Element]) {
  while !operations.isEmpty { _ = operations.removeLast() }
}

import Dispatch
import Foundation
import Synchronization

/// The bench's one clock: monotonic, nanosecond resolution.
typealias Instant = ContinuousClock.Instant

@inline(__always) func now() -> Instant { ContinuousClock.now }

extension Duration {
  /// This duration in seconds, as a `Double`.
  var seconds: Double {
    let (whole, attoseconds) = components
    return Double(whole) + Double(attoseconds) * 1e-18
  }
}

/// The CPU time this process has used so far (every thread, user and system), in seconds.
func processCPUSeconds() -> Double {
  var time = timespec()
  guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time) == 0 else { return .nan }
  return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
}

/// Seconds from `start` until now.
@inline(__always) func secondsSince(_ start: Instant) -> Double { (now() - start).seconds }

/// A value handed from one thread to another under a lock.
final class Box<Value: Sendable>: Sendable {
  private let value: Mutex<Value>
  init(_ value: Value) { self.value = Mutex(value) }
  func set(_ newValue: Value) { value.withLock { $0 = newValue } }
  func get() -> Value { value.withLock { $0 } }
}

/// A count of executed op bodies, so every scenario proves its work really ran.
final class Counter: Sendable {
  private let value = Atomic<Int>(0)
  @inline(__always) func increment() { value.add(1, ordering: .relaxed) }
  /// One more inside a section (ordered with what it guards); returns how many are inside now.
  @inline(__always) func enter() -> Int { value.add(1, ordering: .acquiringAndReleasing).newValue }
  @inline(__always) func leave() { value.subtract(1, ordering: .acquiringAndReleasing) }
  var count: Int { value.load(ordering: .acquiring) }
}

/// Runs `body` in a detached task and blocks this (non-pool) thread until it returns.
///
/// The bench's driver is the main thread, outside Swift's cooperative pool, so that
/// OperationQueue's blocking waits can be used as its users use them; async systems are
/// driven from a task on the pool and bridged back here. Times are taken inside `body`, so
/// the bridge itself is not measured.
func blocking<Result: Sendable>(_ body: @escaping @Sendable () async -> Result) -> Result {
  let result = Box<Result?>(nil)
  let done = DispatchSemaphore(value: 0)
  Task.detached {
    result.set(await body())
    done.signal()
  }
  done.wait(for: "the task running the measured code", atMost: Bounds.trial)
  guard let value = result.get() else {
    preconditionFailure("Internal inconsistency: no result from the task")
  }
  return value
}

/// Checks that a scenario did its work; a bench that measures nothing must fail loudly.
func verify(_ condition: Bool, _ message: @autoclosure () -> String) {
  precondition(condition, "bench: scenario check failed: \(message())")
}

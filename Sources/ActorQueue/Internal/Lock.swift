#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Android)
  import Android
#else
  #error("ActorQueue needs pthread mutexes on this platform")
#endif

/// A value guarded by a `pthread_mutex_t`: the lock behind the scheduler and the event channels.
///
/// Why not `Synchronization.Mutex`: on Linux its contended path hands the lock over through a
/// priority-inheritance futex in code compiled outside this module, which ThreadSanitizer
/// cannot see, so every contended handover is reported as a race (checked with Swift 6.3.1:
/// four threads appending under one `Mutex` give four reports; under this lock, none). The
/// suite runs under ThreadSanitizer in CI, and a checker that cries wolf hides real races.
/// `pthread_mutex_t` is intercepted by ThreadSanitizer, exists on every platform Swift runs
/// on, and costs the same when uncontended (one atomic exchange to lock, one to unlock).
///
/// Shared with the package's other modules and tests (`package` access), which have the same
/// need under ThreadSanitizer.
///
/// `@unchecked Sendable`: `value` is only reached through `withLock`, which holds the mutex;
/// the mutex lives in its own allocation, so its address is stable, as pthreads require.
package final class LockedValue<Value>: @unchecked Sendable {
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  /// Only reached under the mutex, so the runtime's exclusivity checks would only cost.
  @exclusivity(unchecked) private var value: Value

  package init(_ value: Value) {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    let status = pthread_mutex_init(mutex, nil)
    precondition(status == 0, "pthread_mutex_init failed: \(status)")
    self.value = value
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deinitialize(count: 1)
    mutex.deallocate()
  }

  /// Runs `body` with the value while holding the lock. `body` must not take this lock again.
  @inline(__always)
  package func withLock<Result, Failure: Error>(
    _ body: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}

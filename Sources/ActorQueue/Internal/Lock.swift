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
/// The value and the mutex live in allocations of their own, reached through `let` pointers:
/// their addresses are stable, as pthreads require, and an access to the value is not a class
/// property access, so it needs no dynamic exclusivity check (the mutex is what makes the
/// accesses exclusive).
package final class LockedValue<Value> {
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private let value: UnsafeMutablePointer<Value>

  package init(_ value: Value) {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    #if canImport(Glibc)
      // glibc's adaptive mutex spins briefly before it sleeps: the critical sections here are
      // short, so a contended lock is usually free again within the spin, and a futex sleep
      // would cost a thread wake-up (microseconds) for a wait of nanoseconds. Darwin's and
      // the other platforms' default mutexes are left as they are.
      var attributes = pthread_mutexattr_t()
      pthread_mutexattr_init(&attributes)
      pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
      let status = pthread_mutex_init(mutex, &attributes)
      pthread_mutexattr_destroy(&attributes)
    #else
      let status = pthread_mutex_init(mutex, nil)
    #endif
    precondition(status == 0, "pthread_mutex_init failed: \(status)")
    self.value = .allocate(capacity: 1)
    self.value.initialize(to: value)
  }

  deinit {
    value.deinitialize(count: 1)
    value.deallocate()
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
    return try body(&value.pointee)
  }
}

/// `@unchecked Sendable` only for a `Sendable` value (as NIO's locked box): the value is only
/// reached through `withLock`, which holds the mutex, so handing the box to another thread
/// hands over the value under mutual exclusion, which is sound only when the value itself may
/// cross threads.
extension LockedValue: @unchecked Sendable where Value: Sendable {}

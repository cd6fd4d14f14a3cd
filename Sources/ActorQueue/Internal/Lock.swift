import Synchronization

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

/// Offers the calling thread's core to another runnable thread, if one waits for it: between
/// the slices of a long call, so that on a machine with few cores the callers it lets take the
/// lock also get a core to run on.
@inline(__always)
func yieldThread() {
  sched_yield()
}

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
/// The value and the mutex live in one allocation (a `ManagedBuffer`: the value as its header,
/// the mutex as its one element, as NIO's lock storage does): their addresses are stable, as
/// pthreads require, creating one costs a single allocation, and an access to the value is not
/// a class property access, so it needs no dynamic exclusivity check (the mutex is what makes
/// the accesses exclusive).
package struct LockedValue<Value> {
  private let storage: LockStorage<Value>

  package init(_ value: Value) {
    storage = LockStorage.make(value)
  }

  /// Runs `body` with the value while holding the lock. `body` must not take this lock again.
  @inline(__always)
  package func withLock<Result, Failure: Error>(
    _ body: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    try storage.withLock(body)
  }
}

/// `@unchecked Sendable` only for a `Sendable` value (as NIO's locked box): the value is only
/// reached through `withLock`, which holds the mutex, so handing the box to another thread
/// hands over the value under mutual exclusion, which is sound only when the value itself may
/// cross threads. (Unchecked because its storage is a `ManagedBuffer`, which the standard
/// library does not mark `Sendable`.)
extension LockedValue: @unchecked Sendable where Value: Sendable {}

/// The storage of a ``LockedValue``: the value as the header, the mutex as the one element.
final class LockStorage<Value>: ManagedBuffer<Value, pthread_mutex_t> {
  static func make(_ value: Value) -> LockStorage<Value> {
    let buffer = create(minimumCapacity: 1) { _ in value }
    let storage = unsafeDowncast(buffer, to: LockStorage<Value>.self)
    storage.withUnsafeMutablePointerToElements { mutex in
      mutex.initialize(to: pthread_mutex_t())
      #if canImport(Glibc)
        // glibc's adaptive mutex spins briefly before it sleeps: the critical sections here
        // are short, so a contended lock is usually free again within the spin, and a futex
        // sleep would cost a thread wake-up (microseconds) for a wait of nanoseconds. Darwin's
        // and the other platforms' default mutexes are left as they are.
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        let status = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
      #else
        let status = pthread_mutex_init(mutex, nil)
      #endif
      // The system refused (out of memory): stop with its status, in every build configuration.
      if status != 0 { fatalError("ActorQueue: pthread_mutex_init failed: \(status)") }
    }
    return storage
  }

  deinit {
    withUnsafeMutablePointerToElements { mutex in
      pthread_mutex_destroy(mutex)
      mutex.deinitialize(count: 1)
    }
  }

  @inline(__always)
  func withLock<Result, Failure: Error>(
    _ body: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    let (value, mutex) = withUnsafeMutablePointers { ($0, $1) }
    pthread_mutex_lock(mutex)
    defer {
      pthread_mutex_unlock(mutex)
      withExtendedLifetime(self) {}
    }
    return try body(&value.pointee)
  }
}

/// A lock for critical sections of a few instructions that rarely contend, kept inline in its
/// owner: no allocation and no system call to create it (a worker's handle, made on every start
/// of an idle queue). A waiter spins, giving its thread away after a while in case the holder was
/// preempted. ThreadSanitizer sees its acquire and release orderings, so it checks what it
/// guards like any lock's.
struct SpinLock: ~Copyable, Sendable {
  private let held = Atomic<Bool>(false)

  init() {}

  @inline(__always)
  func lock() {
    var spins = 0
    while !held.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
      spins += 1
      if spins >= 64 {
        sched_yield()
        spins = 0
      }
    }
  }

  @inline(__always)
  func unlock() {
    held.store(false, ordering: .releasing)
  }
}

import Foundation
import Synchronization

/// The threads legacy operations start on: Foundation `Thread`s of the adapter's own, never the
/// Swift cooperative pool's, and never Dispatch's global pool (which on Linux is the same pool).
///
/// Sized like an overcommitting dispatch queue, not like a fixed pool:
/// - As many threads as cores serve a stream of short operations; a busy thread takes the next
///   piece of work without sleeping, so there is no thread wake-up per operation. (One serial
///   dispatch queue per operation cost a wake-up, often a new thread, each time: 2.5–3x
///   OperationQueue's cost per operation; 64 threads on two cores cost as much in contention.)
/// - When work waits while every thread is busy, a monitor thread of the adapter's checks every
///   ``stallInterval``: if no thread finished anything meanwhile, they are taken to be blocked
///   (a `main()` waiting on a semaphore) and one more thread is added, and so on, up to
///   ``maximumThreads``. So blocked legacy operations never hold up the others for long, and
///   never a Swift task. (The monitor is a thread of its own, not a timer on a dispatch queue:
///   on Linux those share the cooperative pool, whose saturation must not delay it.)
/// - A thread that finds nothing to do first watches for new work for ``spinWindow``, yielding
///   its core between looks (one such thread at a time), and only then sleeps: work that arrives
///   in a stream needs no wake-up (a futex call on the submitting thread and a thread wake-up,
///   each operation, when it slept at once: the adapter's cost per operation varied between
///   about 1x and 1.7x OperationQueue's from run to run).
/// - A thread that finds nothing to do for ``idleLifetime`` ends (down to none).
///
/// `@unchecked Sendable`: every mutable field is read and written only while `condition` is
/// locked, except `submitted`, an atomic.
final class LegacyThreads: @unchecked Sendable {
  static let shared = LegacyThreads()

  /// Threads started without waiting for a stall: one per core.
  static let baseThreads = max(2, ProcessInfo.processInfo.activeProcessorCount)
  /// At most this many legacy operations run (or block) at once; more wait for a thread.
  static let maximumThreads = 256
  /// How long waiting work must see no progress before another thread is added.
  static let stallInterval: TimeInterval = 0.002
  /// How long an idle thread waits for work before it ends.
  static let idleLifetime: TimeInterval = 5
  /// How long a thread that ran out of work watches for more before it sleeps.
  static let spinWindow: Duration = .microseconds(50)

  private let condition = NSCondition()
  private var pending: [@Sendable () -> Void] = []
  private var head = 0
  private var threads = 0
  private var idle = 0
  /// Pieces of work finished, to tell a stall from progress.
  private var finished = 0
  /// Pieces of work submitted: what a thread watching for work polls, without the lock.
  private let submitted = Atomic<Int>(0)
  /// Whether a thread is watching for work (``spinWindow``).
  private var spinning = false
  /// Whether the monitor thread is watching for a stall (it exists once armed the first time).
  private var monitoring = false
  private var monitorStarted = false
  /// Wakes the monitor when work starts waiting (a lock of its own, which the monitor sleeps on).
  private let monitorWake = NSCondition()

  private init() {}

  /// Runs `work` on one of the adapter's threads.
  func run(_ work: @escaping @Sendable () -> Void) {
    condition.lock()
    pending.append(work)
    submitted.add(1, ordering: .releasing)
    let waiting = pending.count - head
    // A thread watching for work takes the first piece: only more than that needs another.
    let watched = spinning ? 1 : 0
    let spawn = waiting > idle + watched && threads < Self.baseThreads
    if spawn {
      threads += 1
    } else if idle > 0, waiting > watched {
      condition.signal()
    }
    let wakeMonitor = !spawn && idle == 0 && !monitoring
    let startMonitor = wakeMonitor && !monitorStarted
    if wakeMonitor { monitoring = true }
    if startMonitor { monitorStarted = true }
    condition.unlock()
    if spawn { startThread() }
    if startMonitor {
      let monitor = Thread { [self] in watchForStalls() }
      monitor.name = "OperationAdapter.legacy.monitor"
      monitor.start()
    } else if wakeMonitor {
      monitorWake.lock()
      monitorWake.signal()
      monitorWake.unlock()
    }
  }

  private func startThread() {
    let thread = Thread { [self] in serve() }
    thread.name = "OperationAdapter.legacy"
    thread.start()
  }

  /// The monitor: while work waits, every ``stallInterval`` with no work finished adds a
  /// thread; when nothing waits, it sleeps until ``run(_:)`` wakes it.
  private func watchForStalls() {
    while true {
      condition.lock()
      let before = finished
      condition.unlock()
      Thread.sleep(forTimeInterval: Self.stallInterval)
      condition.lock()
      let waiting = pending.count - head > idle
      let stalled = waiting && finished == before && threads < Self.maximumThreads
      if stalled { threads += 1 }
      if !waiting { monitoring = false }
      condition.unlock()
      if stalled { startThread() }
      if !waiting {
        monitorWake.lock()
        while !isMonitoring { monitorWake.wait() }
        monitorWake.unlock()
      }
    }
  }

  private var isMonitoring: Bool {
    condition.lock()
    defer { condition.unlock() }
    return monitoring
  }

  private func serve() {
    condition.lock()
    while true {
      if head < pending.count {
        let work = pending[head]
        head += 1
        if head == pending.count {
          pending.removeAll(keepingCapacity: true)
          head = 0
        } else if head >= 1024 && head * 2 >= pending.count {
          pending.removeFirst(head)
          head = 0
        }
        condition.unlock()
        work()
        condition.lock()
        finished &+= 1
        continue
      }
      if !spinning {
        // Watch for work a little before sleeping (one thread at a time): `run` then needs
        // no signal. Work submitted meanwhile is in `pending`, checked again under the lock.
        spinning = true
        let seen = submitted.load(ordering: .acquiring)
        condition.unlock()
        let deadline = ContinuousClock.now + Self.spinWindow
        while submitted.load(ordering: .acquiring) == seen, ContinuousClock.now < deadline {
          sched_yield()
        }
        condition.lock()
        spinning = false
        if head < pending.count { continue }
      }
      idle += 1
      let signalled = condition.wait(until: Date(timeIntervalSinceNow: Self.idleLifetime))
      idle -= 1
      if !signalled && head == pending.count {
        threads -= 1
        condition.unlock()
        return
      }
    }
  }
}

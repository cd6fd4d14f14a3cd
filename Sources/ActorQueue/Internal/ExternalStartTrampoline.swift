#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Android)
  import Android
#endif

/// Runs the starts of external work on one thread without nesting (see
/// `Engine.startExternal`): a start that reports its end at once frees a slot, and the work
/// that takes it is queued here and started by the outermost call, not from inside the report.
///
/// One per thread, made on first use and released when the thread ends; confined to its
/// thread (reachable only through that thread's key), so it is not `Sendable` and needs no
/// lock.
final class ExternalStartTrampoline {
  private var queued: [ExternalStartEffect] = []
  private var position = 0
  private var isRunning = false

  /// Starts `first`, then `rest`, then whatever they queue; or, if this thread is already
  /// starting external work, queues them behind it.
  func run(
    _ first: ExternalStartEffect, then rest: [ExternalStartEffect]?, start: (ExternalStartEffect) -> Void
  ) {
    if isRunning {
      queued.append(first)
      if let rest { queued.append(contentsOf: rest) }
      return
    }
    isRunning = true
    defer {
      isRunning = false
      queued.removeAll(keepingCapacity: true)
      position = 0
    }
    if let rest { queued.append(contentsOf: rest) }
    start(first)
    while position < queued.count {
      let next = queued[position]
      position += 1
      start(next)
    }
  }

  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    // The thread's trampoline is retained by its key and released when the thread ends.
    let status = pthread_key_create(&key) {
      Unmanaged<ExternalStartTrampoline>.fromOpaque(($0 as UnsafeMutableRawPointer?)!).release()
    }
    // The system refused (no keys left): stop with its status, in every build configuration.
    if status != 0 { fatalError("ActorQueue: pthread_key_create failed: \(status)") }
    return key
  }()

  /// The calling thread's trampoline.
  static var forThisThread: ExternalStartTrampoline {
    if let existing = pthread_getspecific(key) {
      return Unmanaged<ExternalStartTrampoline>.fromOpaque(existing).takeUnretainedValue()
    }
    let made = ExternalStartTrampoline()
    pthread_setspecific(key, Unmanaged.passRetained(made).toOpaque())
    return made
  }
}

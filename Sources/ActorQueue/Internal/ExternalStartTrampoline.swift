#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Android)
  import Android
#endif

/// The external starts waiting on this thread while one of them runs (see
/// `Engine.startExternal`): a start that reports its end at once frees a slot, and the work
/// that takes it is queued here rather than started from inside the report.
///
/// Confined to one thread: created, used and dropped by one call of `Engine.startExternal`,
/// and reachable only through this thread's key. So it is not `Sendable`, and needs none.
final class ExternalStartTrampoline {
  private var starts: [ExternalStartEffect]
  private var position = 0

  init(_ starts: [ExternalStartEffect]) {
    self.starts = starts
  }

  func append(contentsOf more: [ExternalStartEffect]) {
    starts.append(contentsOf: more)
  }

  /// The next start to run, in the order they were queued.
  func next() -> ExternalStartEffect? {
    guard position < starts.count else { return nil }
    defer { position += 1 }
    return starts[position]
  }

  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key, nil)
    precondition(status == 0, "pthread_key_create failed: \(status)")
    return key
  }()

  /// This thread's trampoline while `Engine.startExternal` runs on it. Unretained: the call
  /// that sets it keeps it alive, and clears it before it returns.
  static var current: ExternalStartTrampoline? {
    get {
      pthread_getspecific(key).map { Unmanaged<ExternalStartTrampoline>.fromOpaque($0).takeUnretainedValue() }
    }
    set {
      pthread_setspecific(key, newValue.map { Unmanaged.passUnretained($0).toOpaque() })
    }
  }
}

import Synchronization

/// A reference stored at most once and read without a lock: `AtomicLazyReference`, but this
/// module's code, so specialized (the toolchain's `load()` looks up generic metadata per call).
struct LazyReference<Object: AnyObject & Sendable>: ~Copyable, Sendable {
  /// The object's address, retained while stored; 0 until one is.
  private let address = Atomic<UInt>(0)

  init() {}

  deinit {
    let stored = address.load(ordering: .acquiring)
    if stored != 0 { Self.unmanaged(stored).release() }
  }

  /// The object stored, if any.
  func load() -> Object? {
    let stored = address.load(ordering: .acquiring)
    return stored == 0 ? nil : Self.unmanaged(stored).takeUnretainedValue()
  }

  /// Stores `object` unless another was stored first; returns the one stored.
  func storeIfNil(_ object: Object) -> Object {
    let desired = UInt(bitPattern: Unmanaged.passRetained(object).toOpaque())
    let (exchanged, stored) = address.compareExchange(
      expected: 0, desired: desired, ordering: .acquiringAndReleasing)
    if exchanged { return object }
    // The caller still holds `object`: this release frees nothing.
    Self.unmanaged(desired).release()
    return Self.unmanaged(stored).takeUnretainedValue()
  }

  private static func unmanaged(_ address: UInt) -> Unmanaged<Object> {
    Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: address)!)
  }
}

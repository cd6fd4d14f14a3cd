import ActorQueue

/// A gate a test opens: bodies `await gate.wait()` until the test calls ``open()``.
///
/// A body waiting at a gate counts as still for ``ManualClock/settle(timeout:sourceLocation:)``:
/// nothing more happens in it until the test opens the gate. Once open, the gate stays open
/// (later waits return at once).
public final class TestGate: Sendable {
  private struct State: Sendable {
    var isOpen = false
    var waiters: [CheckedContinuation<Void, Never>] = []
    /// The operations whose bodies wait here, counted once per waiting task.
    var parked: [OperationID] = []
  }

  private let state = LockedValue(State())

  /// A closed gate.
  public init() {}

  /// Whether ``open()`` was called.
  public var isOpen: Bool { state.withLock { $0.isOpen } }

  /// Opens the gate: every task waiting at it goes on, and so will every later wait.
  public func open() {
    let (waiters, parked) = state.withLock { state in
      state.isOpen = true
      defer {
        state.waiters = []
        state.parked = []
      }
      return (state.waiters, state.parked)
    }
    // Unparked before they are resumed, so that settle() never sees a body that is about to
    // move as still.
    for operation in parked { Parking.unpark(operation) }
    for waiter in waiters { waiter.resume() }
  }

  /// Suspends until the gate is open. Cancelling the waiting task does not end the wait.
  public func wait() async {
    let operation = ActorQueue.currentOperationID
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let waits = state.withLock { state in
        guard !state.isOpen else { return false }
        state.waiters.append(continuation)
        if let operation {
          state.parked.append(operation)
          Parking.park(operation)
        }
        return true
      }
      if !waits { continuation.resume() }
    }
  }
}

/// Which operations' bodies wait at a kit primitive: what settle() counts as still. Keyed by
/// operation identifiers, which are unique in the process, so tests running in parallel never
/// see each other's entries.
enum Parking {
  private static let parked = LockedValue<[OperationID: Int]>([:])

  static func park(_ operation: OperationID) {
    parked.withLock { $0[operation, default: 0] += 1 }
  }

  static func unpark(_ operation: OperationID) {
    parked.withLock { parked in
      if let count = parked[operation], count > 1 {
        parked[operation] = count - 1
      } else {
        parked[operation] = nil
      }
    }
  }

  static func isParked(_ operation: OperationID) -> Bool { parked.withLock { $0[operation] != nil } }

  /// Every parked operation now.
  static var all: Set<OperationID> { parked.withLock { Set($0.keys) } }
}

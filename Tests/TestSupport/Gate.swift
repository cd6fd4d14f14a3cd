import ActorQueue

// Test support shared by the package's test targets: gates, counters and recorders that
// order concurrent code without sleeping.

/// A one-shot barrier for ordering concurrent code in tests without sleeping.
///
/// `wait()` suspends until `open()` is called (or returns at once if it already was). Any
/// number of tasks may wait; opening twice is harmless.
package final class Gate: Sendable {
  private struct State {
    var isOpen = false
    var waiters: [CheckedContinuation<Void, Never>] = []
  }
  private let state = LockedValue(State())

  package init() {}

  package func open() {
    let waiters = state.withLock { state in
      state.isOpen = true
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }

  package var isOpen: Bool { state.withLock { $0.isOpen } }

  package func wait() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let open = state.withLock { state in
        if state.isOpen { return true }
        state.waiters.append(continuation)
        return false
      }
      if open { continuation.resume() }
    }
  }
}

/// Suspends until the current task is cancelled (at once if it already is). No sleep: the
/// cancellation handler opens a gate, whether it runs before the wait or during it.
package func untilCancelled() async {
  let cancelled = Gate()
  await withTaskCancellationHandler {
    await cancelled.wait()
  } onCancel: {
    cancelled.open()
  }
}

/// Counts up to a target and opens a gate when it gets there: "wait until n things happened".
package final class CountdownGate: Sendable {
  private let remaining: LockedValue<Int>
  private let gate = Gate()

  package init(count: Int) {
    remaining = LockedValue(count)
    if count <= 0 { gate.open() }
  }

  package func signal() {
    let reached = remaining.withLock { remaining in
      remaining -= 1
      return remaining == 0
    }
    if reached { gate.open() }
  }

  package func wait() async { await gate.wait() }
}

/// A thread-safe recorder of values, in the order they were appended.
package final class Recorder<Value: Sendable>: Sendable {
  private let values = LockedValue<[Value]>([])

  package init() {}

  package func append(_ value: Value) { values.withLock { $0.append(value) } }

  package var snapshot: [Value] { values.withLock { $0 } }
}

/// Tracks how many bodies run at once and the maximum ever seen.
package final class ConcurrencyProbe: Sendable {
  private let counts = LockedValue<(current: Int, maximum: Int)>((0, 0))

  package init() {}

  package func enter() {
    counts.withLock {
      $0.current += 1; $0.maximum = max($0.maximum, $0.current)
    }
  }
  package func leave() { counts.withLock { $0.current -= 1 } }

  package var current: Int { counts.withLock { $0.current } }
  package var maximum: Int { counts.withLock { $0.maximum } }
}

// A copy of Tests/ActorQueueTests/Support (test targets cannot share sources).
import Synchronization

/// A one-shot barrier for ordering concurrent code in tests without sleeping.
///
/// `wait()` suspends until `open()` is called (or returns at once if it already was). Any
/// number of tasks may wait; opening twice is harmless.
final class Gate: Sendable {
  private struct State {
    var isOpen = false
    var waiters: [CheckedContinuation<Void, Never>] = []
  }
  private let state = Mutex(State())

  init() {}

  func open() {
    let waiters = state.withLock { state in
      state.isOpen = true
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }

  var isOpen: Bool { state.withLock { $0.isOpen } }

  func wait() async {
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

/// Counts up to a target and opens a gate when it gets there: "wait until n things happened".
final class CountdownGate: Sendable {
  private let remaining: Mutex<Int>
  private let gate = Gate()

  init(count: Int) {
    remaining = Mutex(count)
    if count <= 0 { gate.open() }
  }

  func signal() {
    let reached = remaining.withLock { remaining in
      remaining -= 1
      return remaining == 0
    }
    if reached { gate.open() }
  }

  func wait() async { await gate.wait() }
}

/// A thread-safe recorder of values, in the order they were appended.
final class Recorder<Value: Sendable>: Sendable {
  private let values = Mutex<[Value]>([])

  init() {}

  func append(_ value: Value) { values.withLock { $0.append(value) } }

  var snapshot: [Value] { values.withLock { $0 } }
}

/// Tracks how many bodies run at once and the maximum ever seen.
final class ConcurrencyProbe: Sendable {
  private let counts = Mutex<(current: Int, maximum: Int)>((0, 0))

  init() {}

  func enter() { counts.withLock { $0.current += 1; $0.maximum = max($0.maximum, $0.current) } }
  func leave() { counts.withLock { $0.current -= 1 } }

  var current: Int { counts.withLock { $0.current } }
  var maximum: Int { counts.withLock { $0.maximum } }
}

/// The process's one timer task: it sleeps until the instant the scheduler value last commanded
/// (`TimerCommand`), then reports `timersFired`. A later command replaces it (the old task is
/// cancelled and does nothing more); `disarm` ends it, so no timer task exists while no system
/// timer is armed.
package enum TimerTask {
  private struct State: Sendable {
    /// The newest command performed: commands are decided in order under the scheduler's lock
    /// but performed after it, on several threads, so an older one arriving late is ignored.
    var generation: UInt64 = 0
    var current: Task<Void, Never>?
    /// Every timer task not yet returned, by generation (for tests).
    var live: [UInt64: Task<Void, Never>] = [:]
  }

  private static let state = LockedValue(State())

  /// Performs a command (an effect: after the scheduler's lock is released).
  static func perform(_ command: TimerCommand) {
    let replaced: Task<Void, Never>? = state.withLock { state in
      switch command {
      case .arm(let at, let generation):
        guard generation > state.generation else { return nil }
        state.generation = generation
        let task = Task.detached { await sleepThenFire(at: at, generation: generation) }
        state.live[generation] = task
        defer { state.current = task }
        return state.current
      case .disarm(let generation):
        guard generation > state.generation else { return nil }
        state.generation = generation
        return state.current.take()
      }
    }
    replaced?.cancel()
  }

  private static func sleepThenFire(at: Int64, generation: UInt64) async {
    defer { _ = state.withLock { $0.live.removeValue(forKey: generation) } }
    // The instant is of `CLOCK_MONOTONIC`; the sleep is on `ContinuousClock`, which may run ahead
    // of it on Linux (it counts the system's suspension): woken early, it sleeps again.
    while case let remaining = SaturatingTime.subtracting(at, SchedulerInstant.now().nanoseconds),
      remaining > 0
    {
      do {
        try await Task.sleep(for: .nanoseconds(remaining), tolerance: .zero)
      } catch {
        return  // replaced or disarmed
      }
    }
    guard !Task.isCancelled else { return }
    Engine.run { $0.timersFired(now: Engine.now, &$1) }
  }

  /// Timer tasks that have not returned yet (for tests; see ``waitUntilNoneLive()``).
  package static var liveCount: Int { state.withLock { $0.live.count } }

  /// Returns once every timer task that exists now has returned (for tests: a replaced or
  /// disarmed task returns as soon as it runs; call it only when none is armed).
  package static func waitUntilNoneLive() async {
    while true {
      let tasks = state.withLock { Array($0.live.values) }
      if tasks.isEmpty { return }
      for task in tasks { await task.value }
    }
  }

  /// Returns once every timer task but the current one has returned (for tests).
  package static func waitUntilOnlyCurrent() async {
    while true {
      let replaced = state.withLock { state in
        state.live.filter { _, task in task != state.current }.map(\.value)
      }
      if replaced.isEmpty { return }
      for task in replaced { await task.value }
    }
  }
}

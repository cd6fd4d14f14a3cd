import Testing

@testable import OperationAdapter

/// The watcher's pause between passes (it notices what legacy code changes on a waiting
/// operation: an overridden `isReady`, a cancel, a new priority).
@Suite struct LegacyWatcherTests {
  @Test("A short pass pauses by the backoff, or twenty times the pass when that is longer")
  func dutyLimit() {
    #expect(LegacyWatcher.pause(afterPassOf: 0.000_01, backoff: 0.001) == 0.001)
    #expect(abs(LegacyWatcher.pause(afterPassOf: 0.001, backoff: 0.004) - 0.02) < 1e-9)
  }

  /// A preempted pass seems long: without the cap the watcher slept twenty times as long, and
  /// no waiting legacy operation's change was noticed meanwhile.
  @Test("A pass that seemed long, as a preempted thread's does, never pauses more than 50 ms")
  func longPassIsCapped() {
    for pass in [0.003, 0.01, 1, 17, 3600] {
      #expect(LegacyWatcher.pause(afterPassOf: pass, backoff: 0.004) == 0.05)
    }
    #expect(LegacyWatcher.longestDutyPause == 0.05)
  }
}

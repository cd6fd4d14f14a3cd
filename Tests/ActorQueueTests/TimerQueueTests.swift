import Testing

@testable import ActorQueue

/// `TimerQueue` (a clock's timers: an in-order run and a heap) against a sorted array, and the
/// scheduler's use of it: an operation that ends in order drops its own entry.
@Suite("Timers: the run and the heap")
struct TimerQueueTests {
  private static func entry(at: Int64, key: UInt64, action: TimerEntry.Action = .deadline) -> TimerEntry {
    var entry = TimerEntry(at: at, index: Int(key % 1_000), id: OperationID(rawValue: key), action: .deadline)
    entry.action = action
    return entry
  }

  private static func order(_ entry: TimerEntry) -> [UInt64] {
    [UInt64(bitPattern: entry.at), entry.key, UInt64(entry.action.rawValue)]
  }

  @Test(
    "Seeded random inserts, pops, front drops and rebuilds give the entries in (instant, key, action) order")
  func randomAgainstSortedArray() {
    for script in 0..<300 {
      var random = SplitMix64(seed: SplitMix64.scriptSeed(run: 0x7131, index: script))
      var timers = TimerQueue()
      var model: [TimerEntry] = []
      var nextKey: UInt64 = 1
      var lastAt: Int64 = 0
      for _ in 0..<(20 + random.below(200)) {
        switch random.below(10) {
        case 0..<5:
          // Mostly in order (a deadline `in:` a fixed duration), sometimes earlier, sometimes tied.
          let at: Int64 =
            switch random.below(4) {
            case 0: Int64(random.below(1_000))
            case 1: lastAt
            default: lastAt + Int64(random.below(50))
            }
          lastAt = max(lastAt, at)
          let entry = Self.entry(
            at: at, key: nextKey, action: random.chance(20) ? .executionTimeout : .deadline)
          nextKey += 1
          timers.insert(entry)
          timers.live += 1
          model.append(entry)
        case 5..<8:
          let expected = model.min { $0.precedes($1) }
          let popped = timers.popFirst()
          #expect(popped.map(Self.order) == expected.map(Self.order), "script \(script)")
          if let popped { model.removeAll { Self.order($0) == Self.order(popped) } }
          if popped != nil { timers.live -= 1 }
        case 8:
          // The run's front goes stale and is dropped, as an operation ending in order does.
          if let front = timers.frontOfRun {
            timers.dropFrontOfRun()
            timers.live -= 1
            model.removeAll { Self.order($0) == Self.order(front) }
          }
        default:
          // A rebuild that keeps every other entry, as a compaction keeps the live ones.
          var keep = true
          let run = timers.runEntries.filter { _ in
            keep.toggle()
            return keep
          }
          let heap = timers.heapEntries.filter { _ in
            keep.toggle()
            return keep
          }
          let kept = Set((run + heap).map(Self.order))
          model.removeAll { !kept.contains(Self.order($0)) }
          timers = TimerQueue(run: Array(run), heap: heap)
        }
        #expect(timers.count == model.count, "script \(script)")
        #expect(
          timers.first.map(Self.order) == model.min { $0.precedes($1) }.map(Self.order), "script \(script)")
        let run = Array(timers.runEntries)
        #expect(
          zip(run, run.dropFirst()).allSatisfy { !$1.precedes($0) },
          "script \(script): the run is out of order")
      }
      var drained: [TimerEntry] = []
      while let entry = timers.popFirst() { drained.append(entry) }
      #expect(drained.map(Self.order) == model.sorted { $0.precedes($1) }.map(Self.order), "script \(script)")
    }
  }

  @Test("Operations with a deadline that end in the order they were added leave no stale timer behind")
  func inOrderEndsLeaveNoStaleEntries() {
    var harness = SchedulerHarness()
    let clock: UInt64 = 1_000_281
    harness.registerManualClock(clock)
    let queue = harness.makeQueue(limit: 2, clock: clock)
    for number in 0..<200 { harness.add("op\(number)", traits: [.deadline(in: .seconds(60))], to: queue) }
    #expect(harness.scheduler.manualClocks[clock]?.timers.count == 200)
    #expect(harness.scheduler.timeStates.isEmpty, "a deadline alone keeps no time state")
    for number in 0..<200 {
      harness.end("op\(number)")
      // Its own entry left the front of the run when it ended: only the live ones are kept.
      #expect(harness.scheduler.manualClocks[clock]?.timers.count == 199 - number)
    }
  }

  @Test("Operations with a timeout that end in the order they started leave no stale timer behind")
  func inOrderEndsOfTimedBodiesLeaveNoStaleEntries() {
    var harness = SchedulerHarness()
    let clock: UInt64 = 1_000_282
    harness.registerManualClock(clock)
    let queue = harness.makeQueue(limit: 2, clock: clock)
    for number in 0..<50 { harness.add("op\(number)", traits: [.timeout(.seconds(60))], to: queue) }
    // Armed when each body starts: two at a time.
    #expect(harness.scheduler.manualClocks[clock]?.timers.count == 2)
    for number in 0..<50 {
      harness.end("op\(number)")
      #expect(harness.scheduler.manualClocks[clock]?.timers.count == min(2, 49 - number))
    }
  }

  /// The timer task and its generations are the process's: a test's scheduler value that armed a
  /// system-clock timer and commanded the task replaced the real scheduler's task, whose own
  /// commands then counted as stale, so its timers (a retry's backoff in a documentation test)
  /// did not fire until its generations caught up.
  @Test("A test's scheduler value arms system-clock timers in its state and commands no timer task")
  func testValuesLeaveTheTimerTaskAlone() {
    var harness = SchedulerHarness()
    let queue = harness.makeQueue(limit: 1)
    harness.add("a", traits: [.deadline(in: .seconds(60))], to: queue)
    #expect(harness.scheduler.armedSystemTimer != nil)
    #expect(harness.scheduler.systemTimers.live == 1)
    #expect(harness.lastEffects.resumptions?.isEmpty ?? true)
    #expect(!harness.scheduler.commandsTimerTask)
    #expect(Engine.read { $0.commandsTimerTask })
  }
}

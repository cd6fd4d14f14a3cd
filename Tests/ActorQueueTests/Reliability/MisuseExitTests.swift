import ActorQueue
import ActorQueueTesting
import Foundation
import TestSupport
import Testing

/// API misuse must stop the program with a message that names the misuse and survives release
/// builds (a `precondition` message is stripped with -O), never with "Internal inconsistency"
/// (which means a bug of ours). Each runs in an exit-test child and reads its standard error.
/// Refused misuse that throws must leave everything else working.
@Suite("Reliability: misuse")
struct ReliabilityMisuseTests {
  /// The child's standard error, when it stopped the program (nil and an issue otherwise).
  private static func stderr(of result: ExitTest.Result?) -> String {
    guard let result else { return "" }
    return String(decoding: result.standardErrorContent, as: UTF8.self)
  }

  private static func expectNamesMisuse(
    _ result: ExitTest.Result?, _ words: [String], sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let text = stderr(of: result)
    for word in words {
      #expect(
        text.contains(word), "stderr does not name the misuse (\(word)):\n\(text)",
        sourceLocation: sourceLocation)
    }
    #expect(
      !text.contains("Internal inconsistency"), "misuse reported as our bug:\n\(text)",
      sourceLocation: sourceLocation)
    // A `precondition`'s message is dropped in -O builds: the user of a release build would see
    // only an address. The misuse must be reported by something that survives (fatalError, or a
    // message written before stopping).
    #expect(
      !text.contains("Precondition failed"),
      "reported by a precondition, whose message a release build drops:\n\(text)",
      sourceLocation: sourceLocation)
  }

  @Test(
    "A limit below 1 (other than -1) in init stops with a message naming it",
    arguments: [0, -5, Int.min])
  func invalidLimitInInit(limit: Int) async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      [limit = limit as Int] in
      _ = ActorQueue(name: "misuse", maxConcurrentOperationCount: limit)
    }
    Self.expectNamesMisuse(result, ["maxConcurrentOperationCount", "\(limit)", "isSuspended"])
  }

  @Test("An empty tag name stops with a message saying a tag needs a name")
  func emptyTagName() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let name = ""
      _ = OperationTag(name)
    }
    Self.expectNamesMisuse(result, ["OperationTag needs a name"])
  }

  @Test("A capacity below 1 stops with a message naming it", arguments: [0, -3])
  func invalidCapacity(capacity: Int) async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      [capacity = capacity as Int] in
      let queue = ActorQueue(name: "misuse")
      queue.capacity = capacity
    }
    Self.expectNamesMisuse(result, ["capacity must be at least 1", "got \(capacity)", "isSuspended"])
  }

  @Test("Joining coalesced work with another result type stops with a message naming the key and both types")
  func coalescingResultTypeMismatch() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let queue = ActorQueue(name: "images")
      queue.isSuspended = true
      queue.addOperation(coalescingBy: "a.png") { 1 }
      queue.addOperation(coalescingBy: "a.png") { "not an Int" }
    }
    Self.expectNamesMisuse(result, ["coalescingBy: a.png", "String", "Int", "images"])
  }

  @Test(
    "Keys in another queue's own exclusivity domain stop with a message naming the domain and what to use")
  func keysInAnotherQueuesDomain() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let first = ActorQueue(name: "first")
      let second = ActorQueue(name: "second")
      second.addOperation(name: "import", traits: [.exclusive("db", in: first.exclusivityDomain)]) {}
    }
    Self.expectNamesMisuse(result, ["import", "\"second\"", "queue \"first\"", "ExclusivityDomain()"])
  }

  @Test("Lowering the limit below 1 with the excess paused stops with a message naming it")
  func invalidLimitPausingExcess() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let queue = ActorQueue(name: "misuse")
      queue.setMaxConcurrentOperationCount(0, pausingExcess: true)
    }
    Self.expectNamesMisuse(result, ["maxConcurrentOperationCount", "0"])
  }

  @Test(
    "Setting a limit below 1 (other than -1) stops with a message naming it", arguments: [0, -5, Int.min])
  func invalidLimitSet(limit: Int) async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      [limit = limit as Int] in
      let queue = ActorQueue(name: "misuse")
      queue.maxConcurrentOperationCount = limit
    }
    Self.expectNamesMisuse(result, ["maxConcurrentOperationCount", "\(limit)", "isSuspended"])
  }

  @Test(
    "A limit other than 1 on the main queue stops with a message saying it stays serial",
    arguments: [4, -1, 2])
  func mainQueueLimit(limit: Int) async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      [limit = limit as Int] in
      ActorQueue.main.queue.maxConcurrentOperationCount = limit
    }
    Self.expectNamesMisuse(result, ["ActorQueue.main", "serial", "maxConcurrentOperationCount"])
  }

  @Test("Pausing the excess of a main-queue limit other than 1 stops with the same message")
  func mainQueueLimitPausingExcess() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      ActorQueue.main.queue.setMaxConcurrentOperationCount(4, pausingExcess: true)
    }
    Self.expectNamesMisuse(result, ["ActorQueue.main", "serial", "4"])
  }

  @Test("The main queue accepts its own limit, 1, again: no change, no stop")
  func mainQueueLimitOne() async {
    await #expect(processExitsWith: .success) {
      ActorQueue.main.queue.maxConcurrentOperationCount = 1
      ActorQueue.main.queue.setMaxConcurrentOperationCount(1, pausingExcess: true)
      precondition(ActorQueue.main.queue.maxConcurrentOperationCount == 1)
    }
  }

  @Test("events(bufferingPolicy: .bufferingNewest(0)) stops with a message naming the capacity")
  func zeroCapacityEvents() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let queue = ActorQueue(name: "misuse")
      _ = queue.events(bufferingPolicy: .bufferingNewest(0))
    }
    Self.expectNamesMisuse(result, ["bufferingNewest", "0"])
  }

  @Test("Two tasks reading one event stream stop with a message saying it is misuse")
  func twoReadersOfOneStream() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      startDeadline(seconds: 5, "two readers")
      let queue = ActorQueue(name: "misuse")
      let stream = queue.events
      let first = Task { for await _ in stream {} }
      let second = Task { for await _ in stream {} }
      // Both wait for an event; a correct implementation has stopped the program by now.
      for _ in 0..<10_000 { await Task.yield() }
      queue.addOperation {}
      for _ in 0..<10_000 { await Task.yield() }
      first.cancel()
      second.cancel()
    }
    Self.expectNamesMisuse(result, ["events", "one"])
  }

  @Test(
    "After refused misuse (alreadyEnqueued, dependencyCycle, alreadyStarted) other operations still complete")
  func refusedMisuseLeavesQueueWorking() async throws {
    let queue = ActorQueue(name: "misuse", maxConcurrentOperationCount: 2)
    let other = ActorQueue(name: "other")
    let gate = Gate()
    let started = Gate()
    let running = queue.addOperation(name: "running") { () async -> Int in
      started.open()
      await gate.wait()
      return 1
    }
    let first = QueueOperation<Int>(name: "first") { 2 }
    let second = QueueOperation<Int>(name: "second") { 3 }
    try second.addDependency(first)
    #expect(throws: ActorQueueError.dependencyCycle) { try first.addDependency(second) }
    #expect(first.dependencies.isEmpty)
    try queue.addOperations([first, second])
    #expect(throws: ActorQueueError.alreadyEnqueued) { try queue.addOperation(first) }
    #expect(throws: ActorQueueError.alreadyEnqueued) { try other.addOperations([second]) }
    await started.wait()
    #expect(throws: ActorQueueError.alreadyStarted) { try running.addDependency(first) }
    let unrelated = other.addOperation(name: "unrelated") { 4 }
    #expect(try await first.value == 2)
    #expect(try await second.value == 3)
    #expect(try await unrelated.value == 4)
    gate.open()
    #expect(try await running.value == 1)
    #expect(queue.operationCount == 0)
    #expect(other.operationCount == 0)
  }

  @Test("A retry policy of zero attempts stops with a message saying the first run counts")
  func zeroAttempts() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = RetryPolicy.attempts(0)
    }
    Self.expectNamesMisuse(result, ["attempts(0)", "at least 1"])
    let custom = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = RetryPolicy.custom(maxAttempts: -1) { _ in .stop }
    }
    Self.expectNamesMisuse(custom, ["custom(maxAttempts: -1)", "at least 1"])
  }

  @Test("A backoff whose maximum is below its first delay stops with a message naming both")
  func maximumBelowInitial() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = Backoff.exponential(initial: .seconds(2), maximum: .seconds(1))
    }
    Self.expectNamesMisuse(result, ["initial: 2.0 seconds", "maximum: 1.0 seconds", "raise the maximum"])
    let negative = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = Backoff.constant(.seconds(-1))
    }
    Self.expectNamesMisuse(negative, ["constant(-1.0 seconds)", "negative"])
  }

  @Test("ManualClock.advance(by:) a negative duration stops with a message saying a clock cannot go back")
  func manualClockAdvanceByNegative() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      ManualClock().advance(by: .seconds(-1))
    }
    Self.expectNamesMisuse(result, ["advance(by: -1.0 seconds)", "cannot go back", "zero or more"])
  }

  @Test("ManualClock.advance(to:) an earlier instant stops with a message saying a clock cannot go back")
  func manualClockAdvanceToEarlier() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let clock = ManualClock()
      let start = clock.now
      clock.advance(by: .seconds(2))
      clock.advance(to: start)
    }
    Self.expectNamesMisuse(result, ["advance(to:", "earlier than the clock's now", "cannot go back"])
  }

  @Test("ManualClock.advance(to:) and sleep(until:) another clock's instant stop with a message naming it")
  func manualClockOtherClocksInstant() async {
    let advance = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      ManualClock().advance(to: ManualClock().now + .seconds(1))
    }
    Self.expectNamesMisuse(advance, ["advance(to:", "another clock", "this clock's now + duration"])
    let sleep = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      try? await ManualClock().sleep(until: ManualClock().now + .seconds(1))
    }
    Self.expectNamesMisuse(sleep, ["sleep(until:", "another clock", "this clock's now + duration"])
  }

  @Test("A ScriptedBody with no step that ends a run stops with a message naming the steps to add")
  func scriptedBodyWithoutEnd() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = ScriptedBody<Int>(.checkpoint)
    }
    Self.expectNamesMisuse(result, ["ScriptedBody", ".returning(_:)", ".hanging"])
  }

  @Test("A QueueRecorder asked about a queue it does not record stops with a message naming the queue")
  func recorderOfAnotherQueue() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let recorded = ActorQueue(name: "recorded")
      let elsewhere = ActorQueue(name: "elsewhere")
      let recorder = QueueRecorder(recorded)
      withExtendedLifetime(recorded) { _ = recorder.maxConcurrency(in: elsewhere) }
    }
    Self.expectNamesMisuse(result, ["elsewhere", "not one of the recorded queues", "QueueRecorder(_:)"])
  }

  @Test("Legacy work with a retry stops with a message saying it cannot run twice")
  func retryOfLegacyWork() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let queue = ActorQueue()
      let legacy = QueueOperation<Int>(
        name: "legacy sync", start: { complete in complete(.success(1)) }, cancel: {})
      legacy.setTraits([.retry(.attempts(3))])
      try? queue.addOperation(legacy)
    }
    Self.expectNamesMisuse(result, ["legacy sync", "cannot run twice", ".retry"])
  }

  @Test("Legacy work with a condition stops with a message saying where to check it")
  func conditionOnLegacyWork() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let queue = ActorQueue()
      let legacy = QueueOperation<Int>(
        name: "legacy sync", start: { complete in complete(.success(1)) }, cancel: {})
      legacy.setTraits([.condition("online") { _ in .satisfied }])
      try? queue.addOperation(legacy)
    }
    Self.expectNamesMisuse(result, ["legacy sync", ".condition(online)", "inside the work"])
  }

  @Test("Coalesced work with a condition stops with a message saying where to check it")
  func conditionOnCoalescedWork() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let queue = ActorQueue()
      queue.addOperation(traits: [.condition("online") { _ in .satisfied }], coalescingBy: "a.png") { 1 }
    }
    Self.expectNamesMisuse(result, ["coalescingBy: a.png", "condition \"online\"", "shared work"])
  }
}

/// Rate limits' bad input (beyond.md §1.6 d, item 8): refused with a message in every build.
@Suite("Reliability: rate-limit misuse")
struct RateLimitMisuseTests {
  private static func expectMessage(
    _ result: ExitTest.Result?, _ words: [String], sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let text = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
    for word in words {
      #expect(
        text.contains(word), "stderr does not name the misuse (\(word)):\n\(text)",
        sourceLocation: sourceLocation)
    }
    #expect(!text.contains("Precondition failed") && !text.contains("Internal inconsistency"), "\(text)")
  }

  @Test("No permits, a zero interval, no burst, an empty window: each refused with a message")
  func badLimiters() async {
    var result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = RateLimiterProbe.tokenBucket(permits: 0, seconds: 1, burst: 1)
    }
    Self.expectMessage(result, ["at least 1 permit", "not 0"])
    result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = RateLimiterProbe.tokenBucket(permits: 1, seconds: 0, burst: 1)
    }
    Self.expectMessage(result, ["interval must be positive"])
    result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = RateLimiterProbe.tokenBucket(permits: 1, seconds: 1, burst: 0)
    }
    Self.expectMessage(result, ["burst must be at least 1"])
    result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = RateLimiterProbe.slidingWindow(maxStarts: 0, seconds: 1)
    }
    Self.expectMessage(result, ["at least 1 start per window"])
  }

  @Test("A negative cost, and a limiter of another clock, are refused with a message")
  func badUse() async {
    var result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      RateLimiterProbe.negativeCost()
    }
    Self.expectMessage(result, [".cost(-1)", "must not be negative"])
    result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      RateLimiterProbe.limiterOfAnotherClock()
    }
    Self.expectMessage(result, ["counts time on the manual", "runs on the system clock"])
  }
}

import ActorQueue
import ActorQueueTesting
import Foundation
import OperationAdapter
import TestSupport
import Testing

/// The DocC articles' examples (Sources/ActorQueue/ActorQueue.docc and
/// Sources/OperationAdapter/OperationAdapter.docc), compiled and run.
@Suite("DocC articles")
struct ArticleTests {
  struct Offline: Error, CustomStringConvertible {
    var description: String { "offline" }
  }

  @Test("The catalog's overview")
  func overview() async throws {
    let url = URL(fileURLWithPath: "/images/1.png")
    @Sendable func fetch(_ url: URL) async throws -> Data { Data(url.lastPathComponent.utf8) }
    @Sendable func tiltShift(_ data: Data) throws -> String { "tilt-shifted \(data.count) bytes" }

    // snippet: quick-start-docc
    let queue = ActorQueue(name: "images", maxConcurrentOperationCount: 4)
    let load = queue.addOperation(name: "load") { try await fetch(url) }
    let filtered = queue.addOperation(after: load) { data in try tiltShift(data) }
    let image = try await filtered.value
    // end snippet

    #expect(image == "tilt-shifted 5 bytes")
  }

  @Test("Getting started")
  func gettingStarted() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-getting-started
    // A queue: at most 2 operations execute at once.
    let queue = ActorQueue(name: "work", maxConcurrentOperationCount: 2)

    // An operation: an async body; its return value is the operation's value.
    let greeting = queue.addOperation(name: "greeting") { "hello" }
    print(try await greeting.value)

    // A prepared operation, given a dependency before it is added.
    let first = QueueOperation(name: "first") { print("first") }
    let second = QueueOperation(name: "second") { print("second") }
    try second.addDependency(first)
    try queue.addOperations([second, first])

    await queue.waitUntilAllOperationsAreFinished()
    print(first.state, second.state, queue.operationCount)
    // end snippet

    try expectOutput(transcript, "docc-getting-started")
  }

  @Test("An operation's lifecycle")
  func lifecycle() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-lifecycle
    let queue = ActorQueue(name: "lifecycle")
    queue.isSuspended = true

    let job = QueueOperation(name: "job") { 42 }
    let states = job.events  // subscribed before it is in a queue: it is .pending
    try queue.addOperation(job)  // .ready: it may start once the queue allows
    queue.isSuspended = false  // .executing, then .finished
    for await state in states { print(state) }

    let failing = queue.addOperation(name: "failing") { () throws -> Int in throw Offline() }
    _ = await failing.result
    print(failing.state, failing.isFinished)  // failed true: isFinished covers every end

    queue.isSuspended = true
    let waiting = queue.addOperation(name: "waiting") { 0 }
    waiting.cancel()  // a waiting operation ends at once, without running
    print(waiting.state, waiting.isFinished)
    // end snippet

    try expectOutput(transcript, "docc-lifecycle")
  }

  @Test("Dependencies and data flow")
  func dependencies() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-dependencies
    let network = ActorQueue(name: "network", maxConcurrentOperationCount: 4)
    let cpu = ActorQueue(name: "cpu", maxConcurrentOperationCount: 2)

    // Typed inputs, across queues: each body receives its inputs' values, in order.
    let user = network.addOperation(name: "user") { "Ada" }
    let score = network.addOperation(name: "score") { 97 }
    let card = cpu.addOperation(name: "card", after: user, score) { name, points in "\(name): \(points)" }
    print(try await card.value)

    // An input that fails: the dependent never runs, and says which input failed and why.
    let broken = network.addOperation(name: "broken") { () throws -> String in throw Offline() }
    let unused = cpu.addOperation(name: "unused", after: broken) { text in text.count }
    print(await unused.result)

    // Ordering only: runs after its dependency ends, however it ends...
    let cleanup = QueueOperation(name: "cleanup") { print("cleanup") }
    try cleanup.addDependency(broken)
    // ...unless it requires success:
    let publish = QueueOperation(name: "publish") { print("publish") }
    try publish.addDependency(broken, requiring: .success)
    try cpu.addOperations([cleanup, publish])
    await cpu.waitUntilAllOperationsAreFinished()
    print(cleanup.state, publish.state)

    // A cycle is refused, and nothing changes; the error names the cycle ("→": waits for).
    let a = QueueOperation(name: "a") {}
    let b = QueueOperation(name: "b") {}
    try b.addDependency(a)
    do {
      try a.addDependency(b)
    } catch let error as ActorQueueError where error == .dependencyCycle {
      print("refused:", error.cycle.map(\.description).joined(separator: " → "))
      print(a.dependencies.count, "dependencies on a")
    }
    // end snippet

    try expectOutput(transcript, "docc-dependencies")
  }

  @Test("Dependencies and data flow: a cycle through coalesced work and a barrier")
  func coalescedCycle() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-coalesced-cycle
    let files = ActorQueue(name: "files")
    let thumbnails = ActorQueue(name: "thumbnails")
    files.isSuspended = true
    thumbnails.isSuspended = true
    let index = files.addOperation(name: "index") { print("index") }
    let scan = QueueOperation(name: "scan") { print("scan") }
    try scan.addDependency(index)
    try thumbnails.addOperation(scan)
    thumbnails.addBarrierBlock(name: "flush") { print("flush") }
    let cover = thumbnails.addOperation(name: "cover", coalescingBy: "cover.jpg") { print("cover") }

    // cover waits for its shared work, which waits for the barrier, which waits for scan, which
    // waits for index: index cannot wait for cover.
    do {
      try index.addDependency(cover)
    } catch let error as ActorQueueError where error == .dependencyCycle {
      print(error.cycle.map(\.description).joined(separator: " → "))
    }
    files.isSuspended = false
    thumbnails.isSuspended = false
    try await cover.value
    // end snippet

    try expectOutput(transcript, "docc-coalesced-cycle")
  }

  @Test("Cancellation")
  func cancellation() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-cancellation
    let queue = ActorQueue(name: "cancellation", maxConcurrentOperationCount: 1)
    let (started, signal) = AsyncStream<Void>.makeStream()
    let running = queue.addOperation(name: "running") {
      signal.finish()
      while true {
        try Task.checkCancellation()  // cooperative: the body decides where it can stop
        await Task.yield()
      }
    }
    let waiting = queue.addOperation(name: "waiting") { print("never runs") }
    waiting.onCompletion { result in print("waiting ended:", result) }

    for await _ in started {}  // until the running body has begun
    queue.cancelAllOperations()  // the waiting one ends before this returns
    print(waiting.state)
    _ = await running.result
    print(running.state, running.thrownError == nil)  // it threw CancellationError itself

    // A body that throws an error of its own once cancelled also ends .cancelled.
    let (begun, begin) = AsyncStream<Void>.makeStream()
    let download = queue.addOperation(name: "download") { () async throws -> Int in
      begin.finish()
      try? await Task.sleep(for: .seconds(60))  // wakes early when cancelled
      throw Offline()  // as a URL session throws URLError(.cancelled)
    }
    for await _ in begun {}
    download.cancel()
    print(await download.result, download.state, download.thrownError.map { "\($0)" } ?? "nil")
    // end snippet

    try expectOutput(transcript, "docc-cancellation")
  }

  @Test("Deadlines and timeouts")
  func deadlines() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    @Sendable func render() async throws -> String { "report" }

    // snippet: docc-deadlines
    let queue = ActorQueue(name: "reports", maxConcurrentOperationCount: 1)
    queue.isSuspended = true  // nothing starts: the deadline finds the operation waiting
    let report = queue.addOperation(name: "report", traits: [.deadline(in: .milliseconds(50))]) {
      try await render()
    }
    do {
      _ = try await report.value
    } catch let error as OperationTimeoutError {
      print(report.state, error.kind, "started:", error.hadStarted)
    }
    // end snippet

    try expectOutput(transcript, "docc-deadlines")
  }

  @Test("Deadlines and timeouts: testing on a manual clock")
  func manualClock() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-manual-clock
    let clock = ManualClock()
    let queue = ActorQueue(name: "tested", maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let (begun, begin) = AsyncStream<Void>.makeStream()
    let slow = queue.addOperation(name: "slow", traits: [.timeout(.seconds(2))]) {
      begin.finish()
      try await Task.sleep(for: .seconds(3_600))  // wakes early when cancelled
    }
    let waiting = queue.addOperation(name: "waiting", traits: [.deadline(in: .seconds(1))]) {}
    for await _ in begun {}

    clock.advance(by: .seconds(1))  // waiting's deadline: it ends before advance returns
    print(waiting.state)
    clock.advance(by: .seconds(1))  // slow's timeout: its task is cancelled
    _ = await slow.result
    print(slow.state, slow.thrownError is CancellationError)
    // end snippet

    try expectOutput(transcript, "docc-manual-clock")
  }

  @Test("Deadlines and timeouts: retrying failed work")
  func retry() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-retry
    let clock = ManualClock()
    let queue = ActorQueue(name: "sync", clock: clock.queueClock)
    let policy = RetryPolicy.attempts(
      3, backoff: .exponential(initial: .seconds(1), maximum: .seconds(30)), jitter: .none)
    let upload = queue.addOperation(name: "upload", traits: [.retry(policy)]) { () -> String in
      let attempt = ActorQueue.currentAttempt?.number ?? 1
      guard attempt == 3 else { throw ServerBusy() }
      return "uploaded on attempt \(attempt)"
    }
    await clock.settle()  // the first attempt failed: a backoff of 1 s, holding no slot
    print(upload.state, upload.attemptCount)
    clock.advance(by: .seconds(1))
    await clock.settle()  // the second failed too: 2 s this time
    print(upload.state, upload.attemptCount)
    clock.advance(by: .seconds(2))
    print(try await upload.value)
    // end snippet

    try expectOutput(transcript, "docc-retry")
  }

  @Test("Cancellation: the structured wait")
  func cancellableValue() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "images")
    @Sendable func loadImage() async throws -> Int {
      try await Task.sleep(for: .seconds(60))  // until cancelled
      return 1
    }

    // snippet: docc-cancellable-value
    let load = queue.addOperation { try await loadImage() }
    let view = Task { try await load.cancellableValue }  // a view's .task, say
    view.cancel()  // the view went away
    print(await view.result, "-", await load.result)
    // end snippet

    try expectOutput(transcript, "docc-cancellable-value")
  }

  @Test("Events")
  func events() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-events
    let queue = ActorQueue(name: "events", maxConcurrentOperationCount: 1)
    queue.isSuspended = true
    let all = queue.events  // lossless: every event, however slowly it is read
    let newest = queue.events(bufferingPolicy: .bufferingNewest(2))  // bounded: the newest 2

    queue.addOperation(name: "a") {}
    queue.addOperation(name: "b") {}
    queue.isSuspended = false
    await queue.waitUntilAllOperationsAreFinished()
    queue.maxConcurrentOperationCount = 4

    // A queue's stream ends only when the queue is gone: take a prefix (or cancel the reader).
    for await event in all.prefix(8) { print(event) }
    for await event in newest.prefix(3) { print("bounded:", event) }
    // end snippet

    try expectOutput(transcript, "docc-events")
  }

  @Test("Mutual exclusion by key")
  func mutualExclusion() async throws {
    let transcript = Transcript()
    // The report is printed while sync holds the key: the sync ends only after the first print.
    let reported = TestGate()
    @Sendable func print(_ items: Any...) {
      transcript.print(items)
      reported.open()
    }
    @Sendable func syncDatabase() async throws { await reported.wait() }

    // snippet: docc-exclusive
    let network = ActorQueue(name: "network", maxConcurrentOperationCount: 4)
    let maintenance = ActorQueue(name: "maintenance", maxConcurrentOperationCount: 1)
    let storage = ExclusivityDomain(name: "storage")  // keys shared by both queues

    let sync = network.addOperation(name: "sync", traits: [.exclusive("database", in: storage)]) {
      try await syncDatabase()  // the sync itself
    }
    _ = await sync.events.first { $0 == .executing }  // sync takes the key when it starts
    let vacuum = maintenance.addOperation(name: "vacuum", traits: [.exclusive("database", in: storage)]) {
      print("vacuum starts after sync:", sync.isFinished)
    }
    let thumbnail = maintenance.addOperation(name: "thumbnail") {}  // no key
    _ = await thumbnail.result  // ran while vacuum waited: a waiter holds no slot

    for report in maintenance.waitReport() { print(report) }  // what vacuum waits for, and who holds it
    try await vacuum.value
    // end snippet

    try expectOutput(transcript, "docc-exclusive")
  }

  @Test("Rate limits")
  func rateLimits() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-rate-limit
    let api = ActorQueue(name: "api", maxConcurrentOperationCount: 4)
    let host = RateLimiter.tokenBucket(permits: 5, per: .seconds(1), burst: 2)  // 5 a second, 2 at once
    api.rateLimiters = [host]

    let clock = ContinuousClock()
    let begin = clock.now
    let requests = (1...4).map { number in
      api.addOperation(name: "GET /items/\(number)") { begin.duration(to: clock.now) }
    }
    for report in api.waitReport() { print(report) }  // the third waits for a permit, the fourth behind it
    for (position, request) in requests.enumerated() {
      let startedAfter = try await request.value
      // The burst starts two at once; each of the others waits 200 ms more than the one before.
      print(request.name!, "started on time:", startedAfter >= .milliseconds(200) * max(0, position - 1))
    }
    // end snippet

    try expectOutput(transcript, "docc-rate-limit")
  }

  @Test("Bounding a queue: backpressure")
  func capacity() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let uploaded = Counter()
    @Sendable func upload(_ number: Int) async { uploaded.increment() }

    // snippet: docc-capacity
    let uploads = ActorQueue(name: "uploads", maxConcurrentOperationCount: 2)
    uploads.capacity = 2
    uploads.isSuspended = true  // held, so that it fills
    let producer = Task {
      for number in 1...4 {
        try await uploads.addOperationWaitingForCapacity(name: "photo \(number)") { await upload(number) }
      }
    }
    while uploads.waitReport().count < 3 { await Task.yield() }  // two added; the third waits for space
    for report in uploads.waitReport() { print(report) }
    let thumbnail = uploads.tryAddOperation(name: "thumbnail") { await upload(0) }
    print("thumbnail:", thumbnail == nil ? "dropped" : "added")

    uploads.isSuspended = false  // each end makes room for the producer's next photo
    try await producer.value
    await uploads.waitUntilAllOperationsAreFinished()
    print("uploaded", uploaded.value, "photos")
    // end snippet

    try expectOutput(transcript, "docc-capacity")
  }

  @Test("Testing: a retry under test")
  func testingRetry() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    struct Offline: Error {}

    // snippet: docc-testing-retry
    let clock = ManualClock()
    let queue = ActorQueue(name: "sync", maxConcurrentOperationCount: 2, clock: clock.queueClock)
    let recorder = QueueRecorder(queue)
    let fetch = ScriptedBody<Int>(.failing(Offline()), .sleeping(for: .seconds(3), on: clock), .returning(42))
    let retry = RetryPolicy.attempts(3, backoff: .constant(.seconds(10)), jitter: .none)
    let refresh = queue.addOperation(name: "refresh", traits: [.retry(retry)], fetch.body)

    await clock.settle()  // the first attempt failed; the next waits for the clock
    print(refresh.state, refresh.attemptCount)
    clock.advance(by: .seconds(10))  // the second attempt starts, and sleeps 3 s on the clock
    await clock.settle()
    print(refresh.state, refresh.attemptCount)
    clock.advance(by: .seconds(3))

    await expectFinished(refresh)
    expectRetried(refresh, times: 1)
    expectNeverMoreThan(2, concurrentIn: queue, recorder)
    print(try await refresh.value, recorder.states(of: refresh).map { "\($0)" }.joined(separator: " → "))
    // end snippet

    try expectOutput(transcript, "docc-testing-retry")
  }

  @Test("Testing: a limit and a key under test")
  func testingGates() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-testing-gates
    let clock = ManualClock()
    let queue = ActorQueue(name: "migrations", maxConcurrentOperationCount: 3, clock: clock.queueClock)
    let recorder = QueueRecorder(queue)
    let gate = TestGate()
    let migrations = (1...6).map { number in
      queue.addOperation(name: "m\(number)", traits: [.exclusive(number <= 4 ? "schema" : "cache")]) {
        await gate.wait()
      }
    }
    await clock.settle()  // one per key holds it at its gate; the others wait for the key
    print(recorder.startOrder(in: queue).compactMap { $0 })
    gate.open()
    for migration in migrations { await expectFinished(migration) }
    print(recorder.maxConcurrency(in: queue), recorder.maxConcurrency(holding: "schema"))
    // end snippet

    try expectOutput(transcript, "docc-testing-gates")
  }

  @Test("Rate limits: answering a 429")
  func rateLimitPenalty() throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-rate-limit-penalty
    let host = RateLimiter.tokenBucket(permits: 80, per: .seconds(1), burst: 25)
    let images = ActorQueue(name: "images", maxConcurrentOperationCount: 6)
    let thumbnails = ActorQueue(name: "thumbnails", maxConcurrentOperationCount: 2)
    images.rateLimiters = [host]  // one limiter for the host, shared by both queues
    thumbnails.rateLimiters = [host]

    let status = 429  // what the server answered
    if status == 429 {
      host.penalize(for: .seconds(30))  // the Retry-After header's seconds
    }
    print("permits now:", host.availablePermits)
    // end snippet

    try expectOutput(transcript, "docc-rate-limit-penalty")
  }

  @Test("Rate limits on a manual clock")
  func rateLimitManualClock() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-rate-limit-manual
    let clock = ManualClock()
    let queue = ActorQueue(name: "api", clock: clock.queueClock)
    queue.rateLimiters = [.tokenBucket(permits: 10, per: .seconds(1), burst: 5, clock: clock.queueClock)]
    let operations = (0..<20).map { _ in
      queue.addOperation { try await Task.sleep(for: .seconds(60)) }  // long requests
    }
    func started() -> Int { operations.filter { $0.state == .executing }.count }

    print("at 0 ms:", started())
    clock.advance(by: .milliseconds(99))
    print("at 99 ms:", started())
    clock.advance(by: .milliseconds(1))
    print("at 100 ms:", started())
    clock.advance(by: .milliseconds(900))
    print("at 1 s:", started())
    queue.cancelAllOperations()
    await queue.waitUntilAllOperationsAreFinished()
    // end snippet

    try expectOutput(transcript, "docc-rate-limit-manual")
  }

  @Test("Readiness conditions")
  func readinessConditions() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-condition
    actor Session {
      private(set) var token: String?
      func signIn() { token = "t0ken" }
    }
    struct SignedIn: OperationCondition {
      let session: Session
      func evaluate(for operation: AnyQueueOperation) async -> ConditionResult {
        await session.token != nil ? .satisfied : .skip
      }
    }

    let session = Session()
    let queue = ActorQueue(name: "sync")
    let early = queue.addOperation(name: "early sync", traits: [.condition(SignedIn(session: session))]) {
      "synced"
    }
    _ = await early.result
    print(early.name!, early.state)  // skipped: cancelled, and its body never ran

    await session.signIn()
    let later = queue.addOperation(name: "later sync", traits: [.condition(SignedIn(session: session))]) {
      "synced"
    }
    print(later.name!, try await later.value)
    // end snippet

    try expectOutput(transcript, "docc-condition")
  }

  @Test("Readiness conditions: not yet, on a manual clock")
  func readinessConditionNotYet() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-condition-not-yet
    actor Network {
      private(set) var isUp = false
      func comeUp() { isUp = true }
    }
    let network = Network()
    let clock = ManualClock()
    let backups = ActorQueue(name: "backups", clock: clock.queueClock)
    let backup = backups.addOperation(
      name: "backup",
      traits: [
        .condition("network") { _ in await network.isUp ? .satisfied : .notYet(retryAfter: .seconds(5)) }
      ]
    ) { "backed up" }

    await clock.settle()  // asked once: not yet
    for report in backups.waitReport() { print(report) }
    await network.comeUp()
    clock.advance(by: .seconds(5))  // asked again: satisfied
    print(try await backup.value)
    // end snippet

    try expectOutput(transcript, "docc-condition-not-yet")
  }

  @Test("Readiness conditions: a produced dependency")
  func readinessConditionDependency() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-condition-dependency
    struct BadPassword: Error {}
    struct LoggedIn: OperationCondition {
      let login: QueueOperation<String>
      func dependency(for operation: AnyQueueOperation) -> AnyQueueOperation? { login }
      func evaluate(for operation: AnyQueueOperation) async -> ConditionResult {
        switch await login.result {
        case .success: .satisfied
        case .failure(let error): .failed(error)
        }
      }
    }

    let api = ActorQueue(name: "api")
    let login = QueueOperation<String>(name: "login") { throw BadPassword() }
    let upload = api.addOperation(name: "upload", traits: [.condition(LoggedIn(login: login))]) { "uploaded" }
    do {
      _ = try await upload.value
    } catch let error as ConditionFailedError {
      print(error.conditionName, "failed:", error.underlyingError)
    }
    print("login", login.state)  // added with upload, ended first
    // end snippet

    try expectOutput(transcript, "docc-condition-dependency")
  }

  @Test("Cancellation: by tag")
  func cancelByTag() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    @Sendable func loadImage() async throws -> Int {
      await untilCancelled()  // a load that runs until it is cancelled
      throw CancellationError()
    }

    // snippet: docc-cancel-by-tag
    let images = ActorQueue(name: "images", maxConcurrentOperationCount: 1)
    let (started, signal) = AsyncStream<Void>.makeStream()
    let avatar = images.addOperation(name: "avatar", traits: [.tags("profile")]) {
      signal.finish()
      return try await loadImage()
    }
    let banner = images.addOperation(name: "banner", traits: [.tags("profile")]) { try await loadImage() }
    let logo = images.addOperation(name: "logo", traits: [.tags("home")]) { "logo" }

    for await _ in started {}  // the avatar is loading, the banner waits
    print(images.operations(tagged: "profile").map { $0.name ?? "?" })
    images.cancelOperations(tagged: "profile")  // the user left the profile screen
    print(banner.state)  // it was waiting: it ended before the call returned
    _ = await avatar.result
    print(avatar.state, try await logo.value)
    // end snippet

    try expectOutput(transcript, "docc-cancel-by-tag")
  }

  @Test("Operation groups")
  func operationGroup() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-group
    struct NotFound: Error {}
    let library = ActorQueue(name: "library")
    let sync = library.addOperationGroup(name: "sync", maxConcurrentOperationCount: 1) { group in
      for album in ["Blue", "Missing", "Abbey Road"] {
        group.queue.addOperation(name: album) {
          if album == "Missing" { throw NotFound() }
          print("downloaded", album)
        }
      }
    }
    do {
      try await sync.value
    } catch let error as GroupFailedError {
      print("sync failed:", error.failures.map { "\($0.name ?? "?"): \($0.error)" })
    }
    // end snippet

    try expectOutput(transcript, "docc-group")
  }

  @Test("Operation groups: a child adds children")
  func operationGroupLateChildren() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-group-late
    let crawler = ActorQueue(name: "crawler")
    let crawl = crawler.addOperationGroup(name: "crawl", maxConcurrentOperationCount: 1) { group in
      group.queue.addOperation(name: "/") {
        print("crawled /")
        // The pages it found: children of the same group, which waits for them too.
        for page in ["/about", "/blog"] {
          OperationGroup.current?.queue.addOperation(name: page) { print("crawled", page) }
        }
      }
      return "crawled from /"
    }
    print(try await crawl.value)
    // end snippet

    try expectOutput(transcript, "docc-group-late")
  }

  @Test("Observing state: why is an operation not running?")
  func waitReport() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: docc-wait-report
    let network = ActorQueue(name: "network", maxConcurrentOperationCount: 1)
    let database = ActorQueue(name: "database")
    network.isSuspended = true  // offline, say
    let login = network.addOperation(name: "login") { "token" }
    let profile = database.addOperation(name: "profile", after: login) { token in "profile for \(token)" }
    network.addOperation(name: "avatar", traits: [.deadline(in: .seconds(30))]) {}

    for report in network.waitReport() + database.waitReport() { print(report) }
    network.isSuspended = false
    print(try await profile.value)
    // end snippet

    try expectOutput(transcript, "docc-wait-report")
  }

  @Test("Observing state: counts and progress")
  func progress() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let lines = ["a", "b", "c"]
    @Sendable func store(_ line: String) async throws { await Task.yield() }

    // snippet: docc-progress
    let queue = ActorQueue(name: "import")
    let parse = queue.addOperation(name: "parse") { progress in
      progress.setTotal(lines.count)
      for line in lines {
        try await store(line)
        progress.complete()
      }
    }
    for await progress in parse.progressUpdates where progress.isFinished {
      print(progress, "-", queue.counts)
    }
    // end snippet

    try expectOutput(transcript, "docc-progress")
  }

  @Test("Migrating")
  func migrating() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let url = URL(fileURLWithPath: "/files/report.pdf")
    @Sendable func download(_ url: URL) async throws -> Data { Data(url.lastPathComponent.utf8) }

    // snippet: docc-migrating
    // Before: let queue = OperationQueue(); queue.maxConcurrentOperationCount = 3
    let queue = ActorQueue(name: "downloads", maxConcurrentOperationCount: 3)

    // Before: an Operation subclass with isExecuting/isFinished KVO around a callback API.
    let file = queue.addOperation(name: "download") { try await download(url) }

    // Before: completionBlock = { [weak op] in … }
    file.onCompletion { result in print("downloaded:", (try? result.get())?.count ?? 0, "bytes") }

    // Before: op.waitUntilFinished(), which blocks a thread.
    let data = try await file.value
    print(String(decoding: data, as: UTF8.self))
    // end snippet

    try expectOutput(transcript, "docc-migrating")
  }

  @Test("The adapter's overview")
  func adapter() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let legacyQueue = OperationQueue()
    legacyQueue.maxConcurrentOperationCount = 1

    // snippet: docc-adapter
    // A legacy Operation, unchanged, in an ActorQueue: its handle's value is the operation.
    let queue = ActorQueue(name: "images", maxConcurrentOperationCount: 2)
    let filter = try queue.addOperation(legacy: TiltShiftOperation(image: Image(name: "cat.png")))
    print(try await filter.value.outputImage?.name ?? "none")

    // New async work in an old OperationQueue.
    let upload = AsyncBlockOperation { print("uploaded") }
    legacyQueue.addOperation(upload)

    // A Foundation operation that waits for ActorQueue work.
    let refresh = queue.addOperation(name: "refresh") { "token" }
    let marker = refresh.asFoundationOperation()
    let fetch = BlockOperation { print("fetching after", refresh.state) }
    fetch.addDependency(marker)
    legacyQueue.addOperation(marker)  // Foundation finishes only operations it starts
    legacyQueue.addOperation(fetch)
    // end snippet

    await legacyQueue.allFinished()
    try expectOutput(transcript, "docc-adapter")
  }

  @Test("The adapter's errors")
  func adapterErrors() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "legacy")
    let finished = TiltShiftOperation(image: Image(name: "cat.png"))
    _ = try await queue.addOperation(legacy: finished).value

    // snippet: docc-adapter-errors
    do {
      _ = try queue.addOperation(legacy: finished)
    } catch OperationAdapterError.alreadyFinished {
      print("an Operation runs once: create a new instance")
    }
    // end snippet

    try expectOutput(transcript, "docc-adapter-errors")
  }
}

/// A server's "busy, try again" answer, as the retry example's upload throws it.
struct ServerBusy: Error {}

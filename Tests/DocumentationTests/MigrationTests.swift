import ActorQueue
import ActorQueueTesting
import Foundation
import Testing

/// Migration.md's "after" examples, compiled and run; each prints what the document shows.
@Suite("Migration.md")
struct MigrationTests {
  struct Offline: Error, CustomStringConvertible {
    var description: String { "offline" }
  }

  // MARK: Field scenarios

  @Test("Download manager: pause, resume, live limit changes")
  func downloadManager() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let network = SimulatedNetwork()

    // snippet: download-manager-after
    @Sendable func download(_ file: String) async throws -> Int {
      var chunks = 0
      while chunks < 3 {
        try await ActorQueue.checkpoint()  // where a transfer may pause: its slot goes to the next file
        chunks += try await network.receiveChunk(of: file)
      }
      return chunks
    }
    func untilExecuting(_ count: Int, _ events: AsyncStream<QueueEvent>) async {
      for await event in events where event.executingCount == count { return }
    }
    let downloads = ActorQueue(name: "downloads", maxConcurrentOperationCount: 3)
    func executing() -> [String] { downloads.operations.filter(\.isExecuting).compactMap(\.name) }

    var events = downloads.events
    let files = (1...8).map { n in
      downloads.addOperation(name: "file\(n)") { try await download("file\(n)") }
    }
    await untilExecuting(3, events)
    print("limit 3:", executing())

    // Pause one: at its next checkpoint it gives its slot back, and the next file starts.
    events = downloads.events
    files[0].pause()
    network.send(to: "file1")  // its next chunk arrives: it reaches the checkpoint and pauses there
    await untilExecuting(3, events)
    print("file1 paused:", executing(), "- file1 is", files[0].state)

    // Resume it: it waits for a slot, like any start.
    files[0].resume()
    print("file1 resumed:", files[0].state)

    // Raise the limit: file1 and every waiting file start at once.
    events = downloads.events
    downloads.maxConcurrentOperationCount = 10
    await untilExecuting(8, events)
    print("limit 10:", executing())

    // Lower it, pausing the excess: the most recently started pause at their next checkpoint,
    // and start again by themselves as slots free up.
    events = downloads.events
    downloads.setMaxConcurrentOperationCount(5, pausingExcess: true)
    for file in ["file6", "file7", "file8"] { network.send(to: file) }
    await untilExecuting(5, events)
    print("limit 5:", executing(), "paused:", files.filter(\.isPaused).compactMap(\.name))

    // Pause all, resume all.
    events = downloads.events
    downloads.pauseAllOperations()  // each transfer pauses at its next checkpoint
    network.openAll()
    await untilExecuting(0, events)
    print("paused all:", files.filter(\.isPaused).count, "of", files.count)
    downloads.resumeAllOperations()
    var chunks: [Int] = []
    for file in files { chunks.append(try await file.value) }
    print("done:", chunks)
    // end snippet

    try expectOutput(transcript, "download-manager-after")
  }

  @Test("An image loader: a cache, and one load per URL")
  func imageLoader() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let network = SimulatedNetwork()
    @Sendable func fetchImage(_ url: String) async throws -> Image {
      _ = try await network.receiveChunk(of: url)
      return Image(name: url)
    }
    let cache = ImageCache()

    // snippet: image-loader-after
    let loads = ActorQueue(name: "images", maxConcurrentOperationCount: 4)

    @Sendable func image(for url: String) -> QueueOperation<Image> {
      // A second request for a URL already loading joins the load instead of starting another.
      loads.addOperation(coalescingBy: url) {
        if let cached = await cache.image(for: url) { return cached }
        let image = try await fetchImage(url)
        await cache.store(image, for: url)
        return image
      }
    }

    let cell1 = image(for: "cat.jpg")
    let cell2 = image(for: "cat.jpg")  // the same load: one operation in the queue
    let cell3 = image(for: "dog.jpg")
    print("loads in the queue:", loads.operationCount)

    cell1.cancel()  // that cell scrolled away: its handle ends, the load goes on for cell2
    network.openAll()
    print("cell2 shows", try await cell2.value, "- cell1 is", cell1.state)
    print("cell3 shows", try await cell3.value)
    print("again, from the cache:", try await image(for: "cat.jpg").value)

    loads.cancelAllOperations()  // the screen went away
    // end snippet

    try expectOutput(transcript, "image-loader-after")
  }

  @Test("An image pipeline: data between steps")
  func imagePipeline() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "images", maxConcurrentOperationCount: 4)
    let imageView = ImageView()
    let url = URL(fileURLWithPath: "/photos/beach.jpg")
    let badURL = URL(fileURLWithPath: "/photos/missing.jpg")
    @Sendable func loadImage(_ url: URL) async throws -> Image {
      guard url == badURL else { return Image(name: url.lastPathComponent) }
      throw Offline()
    }
    @Sendable func tiltShift(_ image: Image) throws -> Image { Image(name: "\(image.name), tilt-shifted") }

    // snippet: pipeline-after
    let load = queue.addOperation(name: "load") { try await loadImage(url) }
    let filter = queue.addOperation(name: "tilt-shift", after: load) { image in try tiltShift(image) }
    let show = ActorQueue.main.addOperation(name: "show", after: filter) { image in
      imageView.image = image  // on the main actor
      print("showing", image)
    }
    try await show.value

    // When the load fails, the filter never runs: it fails with an error naming its input.
    let broken = queue.addOperation(name: "load") { try await loadImage(badURL) }
    let unfiltered = queue.addOperation(name: "tilt-shift", after: broken) { image in try tiltShift(image) }
    do {
      _ = try await unfiltered.value
    } catch let failure as DependencyFailedError {
      print(unfiltered.state, "-", failure)
    }
    // end snippet

    try expectOutput(transcript, "pipeline-after")
  }

  @Test("Cancelling a loop")
  func cancellingALoop() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "sums")
    let pairs = [(1, 2), (3, 4), (5, 6)]

    // snippet: loop-after
    let sums = queue.addOperation(name: "sums") {
      var sums: [Int] = []
      for pair in pairs {
        try Task.checkCancellation()  // cancelled: throws, and the operation ends .cancelled
        sums.append(pair.0 + pair.1)
      }
      return sums
    }
    print(try await sums.value)
    // end snippet

    try expectOutput(transcript, "loop-after")
  }

  @Test("Cancelling a call that reports only through a callback")
  func cancellingACallbackCall() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "exports")
    let exporter = Exporter()

    // snippet: loop-callback-after
    let export = queue.addOperation(name: "export") {
      try await withTaskCancellationHandler {
        try await exporter.run { percent in print("exported \(percent)%") }  // callbacks only
      } onCancel: {
        exporter.stop()  // the callback API's own way to stop; run() then throws its own error
      }
    }
    await exporter.reached(50)
    export.cancel()
    _ = await export.result
    print(export.state)  // cancelled, although run() threw its own error, not CancellationError
    // end snippet

    try expectOutput(transcript, "loop-callback-after")
    #expect(export.thrownError is Exporter.Stopped)
  }

  @Test("A batch built on a suspended queue")
  func batchOnASuspendedQueue() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    @Sendable func process(_ item: Int) async throws -> Int {
      for _ in 0..<(7 - item) { await Task.yield() }  // later items finish sooner
      return item * item
    }

    // snippet: batch-after
    let batch = ActorQueue(name: "batch", maxConcurrentOperationCount: 2)
    batch.isSuspended = true  // build the whole batch first
    let results = ActorQueue(name: "results", maxConcurrentOperationCount: 1)  // one append at a time
    let store = ResultStore()
    var previous: AnyQueueOperation?
    for item in 1...6 {
      let work = batch.addOperation(name: "item \(item)") { try await process(item) }
      let append = results.addOperation(after: work) { value in await store.append(value) }
      // Without this line the appends run in the order the items finish, not the order added.
      if let previous { try append.addDependency(previous) }
      previous = append
    }
    batch.isSuspended = false  // start (or batch.cancelAllOperations() to drop the whole batch)
    await batch.waitUntilAllOperationsAreFinished()
    await results.waitUntilAllOperationsAreFinished()
    print(await store.values)
    // end snippet

    // snippet: batch-cancel-after
    let dropped = ActorQueue(name: "dropped", maxConcurrentOperationCount: 2)
    dropped.isSuspended = true
    let items = (1...6).map { item in dropped.addOperation { try await process(item) } }
    dropped.cancelAllOperations()  // waiting operations end at once, even in a suspended queue
    print(items.filter { $0.state == .cancelled }.count, "of", items.count, "cancelled")
    // end snippet

    try expectOutput(transcript, "batch-after")
  }

  @Test("A serial queue with priorities")
  func serialQueueWithPriorities() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: serial-after
    let serial = ActorQueue(name: "serial", maxConcurrentOperationCount: 1)
    serial.isSuspended = true  // or busy: priority orders the operations that wait
    let low = serial.addOperation(name: "low", priority: .low) { print("low, raised to veryHigh") }
    serial.addOperation(name: "high", priority: .high) { print("high") }
    serial.addOperation(name: "normal") { print("normal") }
    low.queuePriority = .veryHigh  // re-sorts a waiting operation at once
    serial.isSuspended = false
    await serial.waitUntilAllOperationsAreFinished()

    // One batch is ordered by priority too, even on an idle queue:
    let a = QueueOperation(name: "a", priority: .low) { print("batch: low") }
    let b = QueueOperation(name: "b", priority: .veryHigh) { print("batch: veryHigh") }
    try await serial.addOperations([a, b], waitUntilFinished: true)
    // end snippet

    try expectOutput(transcript, "serial-after")
  }

  @Test("UI updates at the end")
  @MainActor
  func uiUpdatesAtTheEnd() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let network = ActorQueue(name: "network", maxConcurrentOperationCount: 4)
    let database = ActorQueue(name: "database", maxConcurrentOperationCount: 1)
    let label = Label()
    struct Profile: Sendable {
      var name: String
      init(json: Data) throws { name = String(decoding: json, as: UTF8.self) }
    }
    @Sendable func fetchProfile() async throws -> Data { Data("Ada".utf8) }
    actor Store { func save(_ profile: Profile) {} }
    let store = Store()

    // snippet: ui-after
    let fetch = network.addOperation(name: "fetch") { try await fetchProfile() }
    let parse = network.addOperation(name: "parse", after: fetch) { data in try Profile(json: data) }
    let save = database.addOperation(name: "save", after: parse) { profile in
      await store.save(profile)
      return profile
    }
    let update = ActorQueue.main.addOperation(name: "update UI", after: save) { profile in
      label.text = profile.name  // main-actor state, no await: the body is @MainActor
    }
    try await update.value
    print("label:", label.text)
    // end snippet

    try expectOutput(transcript, "ui-after")
  }

  @Test("The main queue where an ActorQueue is expected")
  @MainActor
  func mainQueueAsAnActorQueue() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let label = Label()

    // snippet: main-queue-as-actor-queue
    // Written for any queue: it takes an ActorQueue.
    func refresh(on queue: ActorQueue, _ label: Label) -> QueueOperation<Void> {
      queue.addOperation { @MainActor in label.text = "refreshed" }  // runs on the main actor
    }

    let refreshed = refresh(on: ActorQueue.main.queue, label)  // the main queue's ActorQueue
    try await refreshed.value
    print("label:", label.text, "- limit:", ActorQueue.main.queue.maxConcurrentOperationCount)
    // end snippet

    try expectOutput(transcript, "main-queue-as-actor-queue")
  }

  // MARK: Idioms

  @Test("An asynchronous operation")
  func asynchronousOperation() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "downloads")
    let session = Session(waitsForCancellation: true)
    let url = URL(fileURLWithPath: "/files/report.pdf")

    // snippet: async-operation-after
    let download = queue.addOperation(name: "download") { try await session.data(from: url).0 }
    // end snippet
    for await _ in session.started.stream { break }

    // snippet: async-operation-cancel-after
    download.cancel()
    print(await download.result)  // what value throws: CancellationError
    print(download.state, "-", download.thrownError is URLError)  // what the body threw is kept
    // end snippet

    try expectOutput(transcript, "async-operation-cancel-after")
  }

  @Test("Dependencies across queues, and a failure policy")
  func dependenciesAcrossQueues() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let networkQueue = ActorQueue(name: "network")
    let databaseQueue = ActorQueue(name: "database")
    struct API: Sendable {
      func logIn() async throws -> String { throw Offline() }
      func profile() async throws -> String { "Ada" }
    }
    let api = API()

    // snippet: cross-queue-after
    let login = QueueOperation(name: "login") { try await api.logIn() }
    let profile = QueueOperation(name: "profile") { try await api.profile() }
    try profile.addDependency(login, requiring: .success)  // or addDependency(login): however it ends
    try networkQueue.addOperation(login)
    try databaseQueue.addOperation(profile)

    await profile.waitUntilFinished()
    print(profile.state, "-", await profile.result)
    // end snippet

    try expectOutput(transcript, "cross-queue-after")
  }

  @Test("Waiting")
  func waiting() async throws {
    let queue = ActorQueue(name: "work")
    let op = queue.addOperation { 42 }

    // snippet: waiting-after
    await queue.waitUntilAllOperationsAreFinished()  // suspends; no thread blocks
    let value = try await op.value  // one operation's value (or its error)
    // end snippet

    #expect(value == 42)
  }

  @Test("A timeout")
  func timeout() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    @Sendable func fetch(_ name: String) async throws -> String { name }
    let queue = ActorQueue(name: "network")

    // snippet: timeout-after
    let page = queue.addOperation(name: "page", traits: [.timeout(.seconds(60))]) {
      try await fetch("page")
    }
    let report = queue.addOperation(name: "report", traits: [.deadline(in: .seconds(600))]) {
      try await fetch("report")
    }
    do {
      print(try await page.value, try await report.value)
    } catch let timeout as OperationTimeoutError {
      print("\(timeout.operationName ?? "an operation") took too long (\(timeout.kind))")
    }

    // Waiting with a time limit leaves the operation alone.
    if await report.waitUntilFinished(timeout: .seconds(5)) == false { print("still running") }
    // end snippet

    try expectOutput(transcript, "timeout-after")
  }

  @Test("Retrying failed work")
  func retry() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    struct AuthError: Error {}
    struct Unavailable: Error {}
    // Fails its first attempt, as a flaky server does.
    @Sendable func fetchFlaky(_ name: String) async throws -> String {
      if ActorQueue.currentAttempt?.number == 1 { throw Unavailable() }
      return name
    }
    let queue = ActorQueue(name: "network")

    // snippet: retry-after
    let policy = RetryPolicy.attempts(
      4, backoff: .exponential(initial: .milliseconds(50), maximum: .seconds(10)),
      retryIf: { !($0 is AuthError) })  // what is not worth another attempt
    let page = queue.addOperation(name: "page", traits: [.retry(policy), .deadline(in: .seconds(600))]) {
      try await fetchFlaky("page")  // ActorQueue.currentAttempt?.number says which attempt this is
    }
    print(try await page.value, "after", page.attemptCount, "attempts")
    // end snippet

    try expectOutput(transcript, "retry-after")
  }

  @Test("One at a time per key: exclusivity")
  func exclusivity() async throws {
    let transcript = Transcript()
    // The report is printed while schema holds the key: a step ends only after the first print.
    let reported = TestGate()
    @Sendable func print(_ items: Any...) {
      transcript.print(items)
      reported.open()
    }
    @Sendable func migrate(_ step: String) async throws { await reported.wait() }
    let network = ActorQueue(name: "network", maxConcurrentOperationCount: 4)
    let maintenance = ActorQueue(name: "maintenance")

    // snippet: exclusivity-after
    let database = ExclusivityDomain(name: "database")  // shared by every queue that names it
    let schema = maintenance.addOperation(name: "schema", traits: [.exclusive("migration", in: database)]) {
      try await migrate("schema")
    }
    _ = await schema.events.first { $0 == .executing }  // the key is taken at the start, not the add
    let backfill = network.addOperation(name: "backfill", traits: [.exclusive("migration", in: database)]) {
      try await migrate("backfill")  // runs only once schema has ended
    }
    _ = await backfill.events.first { $0 == .pending }  // parked on the key, holding no slot
    print(network.waitReport().map(\.description))
    try await schema.value
    try await backfill.value
    print(schema.isFinished, backfill.isFinished)
    // end snippet

    try expectOutput(transcript, "exclusivity-after")
  }

  @Test("Readiness conditions")
  func readinessConditions() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "sync")

    // snippet: conditions-after
    struct SignInRequired: Error {}
    actor Session {
      private(set) var token: String?
      func signIn() { token = "t0ken" }
    }
    struct SignedIn: OperationCondition {
      let session: Session
      // PSOperations' dependencyForOperation: runs first, added to the queue with the operation.
      func dependency(for operation: AnyQueueOperation) -> AnyQueueOperation? {
        QueueOperation(name: "sign in") { await session.signIn() }
      }
      func evaluate(for operation: AnyQueueOperation) async -> ConditionResult {
        await session.token != nil ? .satisfied : .failed(SignInRequired())
      }
    }

    let session = Session()
    let sync = queue.addOperation(name: "sync", traits: [.condition(SignedIn(session: session))]) { "synced" }
    print(sync.dependencies.compactMap(\.name))
    print(try await sync.value)
    // end snippet

    try expectOutput(transcript, "conditions-after")
  }

  @Test("Groups of operations")
  func groups() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "library")

    // snippet: groups-after
    struct Unavailable: Error {}
    let sync = queue.addOperationGroup(
      name: "sync", maxConcurrentOperationCount: 3, onChildFailure: .collectAll
    ) {
      group in
      for album in ["Blue", "Gone", "Abbey Road", "Lost"] {
        group.queue.addOperation(name: album) {
          if album == "Gone" || album == "Lost" { throw Unavailable() }
        }
      }
      return "synced"
    }
    do {
      print(try await sync.value)
    } catch let error as GroupFailedError {
      print(error.failures.compactMap(\.name).sorted())
    }
    // end snippet

    try expectOutput(transcript, "groups-after")
  }

  @Test("Cancelling a screen's work by tag")
  func tags() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "network")
    queue.isSuspended = true  // so that both are still waiting when the screen goes away
    let avatarURL = URL(string: "https://example.com/avatar.png")!
    let postsURL = URL(string: "https://example.com/posts.json")!
    @Sendable func fetch(_ url: URL) async throws -> Data { Data(url.absoluteString.utf8) }

    // snippet: tags-after
    let avatar = queue.addOperation(name: "avatar", traits: [.tags("profile-screen")]) {
      try await fetch(avatarURL)
    }
    let posts = queue.addOperation(name: "posts", traits: [.tags("profile-screen")]) {
      try await fetch(postsURL)
    }
    // The user left the profile screen:
    ActorQueue.cancelOperations(tagged: "profile-screen")
    print(avatar.state, posts.state)
    // end snippet

    try expectOutput(transcript, "tags-after")
  }

  @Test("A bounded queue: backpressure")
  func capacity() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let records = (1...1000).map { "record \($0)" }
    let stored = Counter()
    let highWater = LockedValue(0)
    @Sendable func store(_ record: String) async throws {
      // What the queue holds while this body runs (it is a body of the queue).
      let count = ActorQueue.current?.operationCount ?? 0
      highWater.withLock { $0 = max($0, count) }
      await Task.yield()
      stored.increment()
    }

    // snippet: capacity-after
    let queue = ActorQueue(name: "import", maxConcurrentOperationCount: 4)
    queue.capacity = 100  // at most 100 records in memory at once
    for record in records {
      try await queue.addOperationWaitingForCapacity { try await store(record) }
    }
    await queue.waitUntilAllOperationsAreFinished()
    print("stored", stored.value, "records, never more than", queue.capacity!, "in the queue")
    // end snippet

    try expectOutput(transcript, "capacity-after")
    #expect(highWater.withLock { $0 } <= 100)
  }

  @Test("Progress: counts, and how far each operation has got")
  func progress() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let files = ["a.txt", "b.txt", "c.txt"]
    @Sendable func send(_ chunk: Int, of file: String) async throws { await Task.yield() }

    // snippet: progress-after
    let queue = ActorQueue(name: "uploads", maxConcurrentOperationCount: 2)
    let before = queue.counts
    let uploads = files.map { file in
      queue.addOperation(name: file) { progress in
        progress.setTotal(4)
        for chunk in 0..<4 {
          try await send(chunk, of: file)
          progress.complete()
        }
      }
    }
    for await progress in uploads[0].progressUpdates where progress.isFinished {
      print(uploads[0].name!, progress)
    }
    await queue.waitUntilAllOperationsAreFinished()
    let batch = queue.counts.since(before)
    print("finished", batch.finished, "failed", batch.failed, "of", uploads.count)
    // end snippet

    try expectOutput(transcript, "progress-after")
  }

  @Test("Waiting raises priority: escalation")
  func escalation() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let url = URL(fileURLWithPath: "/thumbnails/1")
    // The fetch goes on once the wait below has escalated it (its queue's only operation): the
    // example's claim, not a race with the awaiting task.
    @Sendable func fetch(_ url: URL) async throws -> String {
      let network = ActorQueue.current!
      while network.operations.first?.effectiveTaskPriority != .userInitiated { await Task.yield() }
      return "data"
    }
    @Sendable func render(_ data: String) async throws -> String { "thumbnail of \(data)" }

    // snippet: escalation-after
    let network = ActorQueue(name: "network", maxConcurrentOperationCount: 1)
    let thumbnails = ActorQueue(name: "thumbnails", maxConcurrentOperationCount: 2)
    thumbnails.escalation = .taskPriorityAndOrder  // an awaited operation also moves ahead
    let data = network.addOperation(name: "data", priority: .low) { try await fetch(url) }
    let thumbnail = thumbnails.addOperation(name: "thumbnail", priority: .low, after: data) { data in
      try await render(data)
    }
    // The cell became visible: its task awaits the thumbnail.
    let image = try await Task(priority: .userInitiated) { try await thumbnail.value }.value
    print(image, thumbnail.queuePriority, data.queuePriority, data.effectiveTaskPriority == .userInitiated)
    // end snippet

    try expectOutput(transcript, "escalation-after")
  }

  @Test("At most N a second: rate limits")
  func rateLimits() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    @Sendable func fetchStatus(_ name: String) async throws -> Int { 429 }
    let images = ActorQueue(name: "images", maxConcurrentOperationCount: 6)
    let thumbnails = ActorQueue(name: "thumbnails", maxConcurrentOperationCount: 2)

    // snippet: rate-limit-after
    let host = RateLimiter.tokenBucket(permits: 80, per: .seconds(1), burst: 25)
    images.rateLimiters = [host]  // both queues call the same host
    thumbnails.rateLimiters = [host]

    let page = images.addOperation(name: "page", traits: [.cost(2)]) {  // two requests' worth
      let status = try await fetchStatus("page")
      if status == 429 {
        host.penalize(for: .seconds(30))  // nothing starts through host for 30 s
        print("permits during the penalty:", host.availablePermits)
      }
      return status
    }
    print("page:", try await page.value)
    // end snippet

    try expectOutput(transcript, "rate-limit-after")
    // The penalty holds the next start back, unless this task waited out its 30 s (the suite's
    // other tests can keep the cooperative pool's two threads that long on the CI machine).
    let next = thumbnails.addOperation(name: "next") {}
    if host.availablePermits == 0 {
      #expect(next.state == .ready)
      #expect(thumbnails.waitReport().first?.waitingFor.first?.kind == .permits)
    }
    next.cancel()
  }

  @Test("Running on a queue of yours: underlyingQueue")
  func underlyingQueue() async throws {
    /// Counts its runs (the block's `dispatchPrecondition` checks where they run).
    final class Store: Sendable {
      let runs = LockedValue(0)
      func vacuum() { runs.withLock { $0 += 1 } }
    }
    let store = Store()

    // snippet: underlying-queue-after
    let database = DispatchQueue(label: "database")
    let queries = ActorQueue(name: "queries", taskExecutor: DispatchQueueExecutor(database))
    queries.addOperation {
      dispatchPrecondition(condition: .onQueue(database))  // so do the child tasks it creates
      store.vacuum()
    }
    // end snippet

    await queries.waitUntilAllOperationsAreFinished()
    #expect(store.runs.withLock { $0 } == 1)
  }

  @Test("Completion without a retain cycle")
  func completion() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    @Sendable func show(_ value: Int) { print("showing", value) }
    let queue = ActorQueue(name: "work")
    let op = queue.addOperation { 42 }

    // snippet: completion-after
    op.onCompletion { result in
      if case .success(let value) = result { show(value) }  // runs once; released after it runs
    }
    // end snippet
    await op.waitUntilFinished()

    try expectOutput(transcript, "completion-after")
  }

  @Test("Observing state")
  func observingState() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "sync")
    let spinner = Spinner()
    let logged = LockedValue(0)
    @Sendable func log(_ event: QueueEvent) { logged.withLock { $0 += 1 } }
    @Sendable func syncEverything() async throws {}

    // snippet: observing-after
    // A queue's events never end by themselves: consume them in a task, and cancel it when done.
    let logging = Task {
      for await event in queue.events { log(event) }
    }

    // An operation's events end after its terminal state. Prepared, it starts as pending.
    let sync = QueueOperation(name: "sync") { try await syncEverything() }
    let states = sync.events
    try queue.addOperation(sync)
    for await state in states {
      switch state {
      case .executing: await spinner.start()
      case .finished, .failed, .cancelled: await spinner.stop()
      default: break
      }
      print(state)
    }
    logging.cancel()
    // end snippet

    try expectOutput(transcript, "observing-after")
    #expect(await !spinner.isSpinning)
  }

  @Test("Barriers and several blocks")
  func barriersAndBlocks() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    let queue = ActorQueue(name: "thumbnails")
    actor Cache {
      func flush() async { flushed = true }
      private(set) var flushed = false
    }
    let cache = Cache()
    let urls = ["a.png", "b.png", "c.png"].map { URL(fileURLWithPath: "/images/\($0)") }
    @Sendable func thumbnail(_ url: URL) async throws -> String {
      #expect(await cache.flushed)
      return "thumbnail of \(url.lastPathComponent)"
    }

    // snippet: blocks-after
    queue.addBarrierBlock { await cache.flush() }  // after everything added before it
    let thumbnails = queue.addOperation(blocks: urls.map { url in { try await thumbnail(url) } })
    print(try await thumbnails.value)  // the blocks' values, in the order of urls
    // end snippet

    try expectOutput(transcript, "blocks-after")
  }
}

/// A long call that reports progress only through a callback, and stops when told to.
final class Exporter: Sendable {
  struct Stopped: Error {}
  private let state = LockedValue(
    (stopped: false, percent: 0, waiters: [(Int, CheckedContinuation<Void, Never>)]()))

  /// Reports 0, 10, … 100 through `progress`; throws `Stopped` once `stop()` was called.
  func run(progress: @Sendable (Int) -> Void) async throws {
    for percent in stride(from: 0, through: 100, by: 10) {
      if state.withLock({ $0.stopped }) { throw Stopped() }
      progress(percent)
      let ready = state.withLock { state in
        state.percent = percent
        let ready = state.waiters.filter { $0.0 <= percent }.map(\.1)
        state.waiters.removeAll { $0.0 <= percent }
        return ready
      }
      for waiter in ready { waiter.resume() }
      if percent == 50 { while !state.withLock({ $0.stopped }) { await Task.yield() } }
    }
  }

  /// Stops a running `run` at its next step.
  func stop() { state.withLock { $0.stopped = true } }

  /// Suspends until `run` has reported `percent`.
  func reached(_ percent: Int) async {
    await withCheckedContinuation { continuation in
      let now = state.withLock { state in
        if state.percent >= percent { return true }
        state.waiters.append((percent, continuation))
        return false
      }
      if now { continuation.resume() }
    }
  }
}

import Foundation

// Migration.md's "before" examples: Foundation code as the field writes it, compiled in Swift 6
// language mode so the document shows code that builds today. Never run (the point of each is
// what it does wrong); the "after" examples run in MigrationTests.

// snippet: async-operation-before
final class DownloadOperation: Operation, @unchecked Sendable {
  let url: URL
  var data: Data?
  private let session = Session()
  private var task: DataTask?
  private var _executing = false
  private var _finished = false

  init(url: URL) { self.url = url }

  override var isAsynchronous: Bool { true }
  override var isExecuting: Bool { _executing }
  override var isFinished: Bool { _finished }

  override func start() {
    if isCancelled {
      finish()
      return
    }
    willChangeValue(forKey: "isExecuting")
    _executing = true
    didChangeValue(forKey: "isExecuting")
    task = session.dataTask(with: url) { data, _, _ in
      self.data = data
      self.finish()  // forget this on one path and the queue's slot is lost for good
    }
    task?.resume()
  }

  override func cancel() {
    super.cancel()
    task?.cancel()
  }

  private func finish() {
    willChangeValue(forKey: "isExecuting")
    willChangeValue(forKey: "isFinished")
    _executing = false
    _finished = true
    didChangeValue(forKey: "isExecuting")
    didChangeValue(forKey: "isFinished")
  }
}
// end snippet

final class SumPairsOperation: Operation, @unchecked Sendable {
  let pairs: [(Int, Int)]
  var sums: [Int] = []
  init(pairs: [(Int, Int)]) { self.pairs = pairs }

  // snippet: loop-before
  override func main() {
    for pair in pairs {
      if isCancelled { return }  // finishes as if it had succeeded
      sums.append(pair.0 + pair.1)
    }
  }
  // end snippet
}

final class ImageLoadOperation: Operation, @unchecked Sendable {
  let url: URL
  var outputImage: Image?
  init(url: URL) { self.url = url }
  override func main() { outputImage = Image(name: url.lastPathComponent) }
}

final class TiltShiftFilterOperation: Operation, @unchecked Sendable {
  var inputImage: Image?
  var outputImage: Image?
  override func main() { outputImage = inputImage.map { Image(name: "\($0.name), tilt-shifted") } }
}

func pipelineBefore(queue: OperationQueue, url: URL) {
  // snippet: pipeline-before
  let load = ImageLoadOperation(url: url)
  let filter = TiltShiftFilterOperation()
  let transfer = BlockOperation { [unowned load, unowned filter] in
    filter.inputImage = load.outputImage  // nil if the load failed: the filter cannot tell
  }
  transfer.addDependency(load)
  filter.addDependency(transfer)
  queue.addOperations([load, transfer, filter], waitUntilFinished: false)
  // end snippet
}

final class ProcessOperation: Operation, @unchecked Sendable {
  let item: Int
  var output = 0
  init(item: Int) { self.item = item }
  override func main() { output = item * item }
}

final class LegacyStore: @unchecked Sendable {
  var values: [Int] = []
  func append(_ value: Int) { values.append(value) }
}

func batchBefore(items: [Int], store: LegacyStore) {
  // snippet: batch-before
  let batch = OperationQueue()
  batch.maxConcurrentOperationCount = 2
  batch.isSuspended = true
  let results = OperationQueue()
  results.maxConcurrentOperationCount = 1  // one append at a time, in the order the items finish
  for item in items {
    let work = ProcessOperation(item: item)
    let append = BlockOperation { [unowned work] in store.append(work.output) }
    append.addDependency(work)
    batch.addOperation(work)
    results.addOperation(append)
  }
  batch.isSuspended = false  // start; or batch.cancelAllOperations(), which leaves them queued
  batch.waitUntilAllOperationsAreFinished()  // blocks this thread
  // end snippet
}

func serialBefore() {
  // snippet: serial-before
  let serial = OperationQueue()
  serial.maxConcurrentOperationCount = 1
  let low = BlockOperation { print("low") }
  low.queuePriority = .low
  let high = BlockOperation { print("high") }
  high.queuePriority = .high
  serial.addOperation(low)  // an idle queue starts it at once: priority orders only the waiting
  serial.addOperation(high)
  low.queuePriority = .veryHigh  // a hint: a waiting operation may not be re-sorted
  // end snippet
}

final class FetchProfileOperation: Operation, @unchecked Sendable {
  var data: Data?
  override func main() { data = Data("Ada".utf8) }
}

final class ParseProfileOperation: Operation, @unchecked Sendable {
  var userName: String?
  override func main() {
    let fetch = dependencies.compactMap { $0 as? FetchProfileOperation }.first
    userName = fetch?.data.map { String(decoding: $0, as: UTF8.self) }
  }
}

func uiBefore(network: OperationQueue, label: Label) {
  // snippet: ui-before
  let fetch = FetchProfileOperation()
  let parse = ParseProfileOperation()  // finds its input by casting its dependencies
  parse.addDependency(fetch)
  let update = BlockOperation { [unowned parse] in
    let name = parse.userName ?? ""
    MainActor.assumeIsolated { label.text = name }  // Swift 6 needs the main actor spelled out
  }
  update.addDependency(parse)
  network.addOperations([fetch, parse], waitUntilFinished: false)
  OperationQueue.main.addOperation(update)
  // end snippet
}

final class LoginOperation: Operation, @unchecked Sendable {
  var error: (any Error)?
}

func crossQueueBefore(networkQueue: OperationQueue, databaseQueue: OperationQueue) {
  // snippet: cross-queue-before
  let login = LoginOperation()
  let profile = FetchProfileOperation()
  profile.addDependency(login)  // runs even if login failed; it must check login.error itself
  networkQueue.addOperation(login)
  databaseQueue.addOperation(profile)
  // end snippet
}

func waitingBefore(queue: OperationQueue, op: FetchProfileOperation) {
  // snippet: waiting-before
  queue.waitUntilAllOperationsAreFinished()  // blocks the thread (the UI, on the main thread)
  op.waitUntilFinished()
  let data = op.data  // then read its output
  // end snippet
  _ = data
}

/// A store whose maintenance must run on its own dispatch queue.
final class SQLiteStore: Sendable {
  func vacuum() {}
}

func underlyingQueueBefore(store: SQLiteStore) {
  // snippet: underlying-queue-before
  let database = DispatchQueue(label: "database")
  let queries = OperationQueue()
  queries.underlyingQueue = database
  queries.addOperation {
    dispatchPrecondition(condition: .onQueue(database))  // runs on the database's queue
    store.vacuum()
  }
  // end snippet
}

final class CountOperation: Operation, @unchecked Sendable {
  var result = 0
}

func completionBefore(op: CountOperation, show: @escaping @Sendable (Int) -> Void) {
  // snippet: completion-before
  op.completionBlock = { [weak op] in  // without [weak op]: a retain cycle
    guard let op, !op.isCancelled else { return }
    show(op.result)
  }
  // end snippet
}

final class Cache: Sendable {
  func flush() {}
}

func blocksBefore(queue: OperationQueue, cache: Cache, urls: [URL], thumbnails: LegacyThumbnails) {
  // snippet: blocks-before
  queue.addBarrierBlock { cache.flush() }  // after everything added before it
  let blocks = BlockOperation()
  for url in urls {
    blocks.addExecutionBlock { thumbnails.make(url) }  // concurrent; results kept by hand
  }
  queue.addOperation(blocks)
  // end snippet
}

final class LegacyThumbnails: @unchecked Sendable {
  private let lock = NSLock()
  private var made: [URL] = []
  func make(_ url: URL) { lock.withLock { made.append(url) } }
}

func adapterStepOneBefore(image: Image, imageView: ImageView) {
  // snippet: adapter-step1-before
  let queue = OperationQueue()
  queue.maxConcurrentOperationCount = 4

  let filter = TiltShiftOperation(image: image)  // a legacy subclass
  filter.completionBlock = { [weak filter] in  // the [weak] dance
    guard let filter, !filter.isCancelled, let output = filter.outputImage else { return }
    DispatchQueue.main.async { imageView.image = output }
  }
  queue.addOperation(filter)
  // leaving the screen:
  queue.cancelAllOperations()
  // end snippet
}

/// The download manager's transfer, as an asynchronous `Operation`: `suspendTransfer()` suspends
/// its task, and `Operation` has no notion of that.
final class TransferOperation: Operation, @unchecked Sendable {
  let file: String
  init(file: String) { self.file = file }
  override var isAsynchronous: Bool { true }
  func suspendTransfer() {}
  func resumeTransfer() {}
}

func downloadManagerBefore() {
  // snippet: download-manager-before
  let downloads = OperationQueue()
  downloads.maxConcurrentOperationCount = 3
  let files = (1...8).map { n in TransferOperation(file: "file\(n)") }  // asynchronous Operations
  downloads.addOperations(files, waitUntilFinished: false)

  files[0].suspendTransfer()  // its task is suspended, but the operation still executes:
  // it keeps its slot, so file4 does not start
  downloads.maxConcurrentOperationCount = 10  // file4 to file8 start
  downloads.maxConcurrentOperationCount = 5  // all 8 keep running: only later starts obey 5
  // The workarounds: raise and lower the limit by hand around each pause, or cancel the
  // operation and queue a new one with its task's resume data; "pause all" loops over both.
  // end snippet
}

// snippet: image-loader-before
final class LegacyImageLoader: @unchecked Sendable {
  private let queue = OperationQueue()
  private let lock = NSLock()
  private var inFlight: [URL: ImageLoadOperation] = [:]
  private var waiting: [URL: [(Image?) -> Void]] = [:]

  init() { queue.maxConcurrentOperationCount = 4 }

  func load(_ url: URL, completion: @escaping (Image?) -> Void) {
    lock.lock()
    defer { lock.unlock() }
    waiting[url, default: []].append(completion)
    guard inFlight[url] == nil else { return }  // a second request joins, by hand
    let operation = ImageLoadOperation(url: url)
    operation.completionBlock = { [unowned self, unowned operation] in
      self.lock.lock()
      let completions = self.waiting.removeValue(forKey: url) ?? []
      self.inFlight[url] = nil
      self.lock.unlock()
      for completion in completions { completion(operation.outputImage) }
    }
    inFlight[url] = operation
    queue.addOperation(operation)
  }
  // Cancelling one caller needs more bookkeeping still: remove its completion, and cancel the
  // operation only once no caller is left.
}
// end snippet

func adapterFailureBefore(queue: OperationQueue, query: String, gallery: Gallery) {
  // snippet: adapter-failure-before
  let search = PhotoSearchOperation(query: query)  // fails by `self.error = error; cancel()`
  search.completionBlock = { [weak search] in
    guard let search else { return }
    if let error = search.error {  // read before isCancelled, or the failure reads as a cancel
      gallery.show(error)
    } else if !search.isCancelled {
      gallery.show(search.photos)
    }
  }
  queue.addOperation(search)
  // end snippet
}

/// A page fetched synchronously, as a `BlockOperation` body does.
func fetchPage() {}

func timeoutBefore(queue: OperationQueue) {
  // snippet: timeout-before
  let request = BlockOperation { fetchPage() }
  queue.addOperation(request)
  DispatchQueue.global().asyncAfter(deadline: .now() + 10) { [weak request] in
    request?.cancel()  // cancelled, not failed: callers cannot tell a timeout from a cancel
  }
  // end snippet
}

/// The error a hand-written race throws.
struct TimedOut: Error {}

/// A fetch, as the "after" examples' stand-in does.
@Sendable func fetchForRace(_ name: String) async throws -> String { name }

struct TimeoutRaceBefore: Sendable {
  func fetch(_ name: String) async throws -> String { try await fetchForRace(name) }

  // snippet: timeout-race-before
  func pageWithTimeout() async throws -> String {
    try await withThrowingTaskGroup(of: String.self) { group in
      group.addTask { try await fetch("page") }
      group.addTask {
        try await Task.sleep(for: .seconds(10))
        throw TimedOut()
      }
      defer { group.cancelAll() }
      return try await group.next()!
    }
  }
  // end snippet
}

struct RetryAsyncAfterBefore: Sendable {
  let queue: OperationQueue

  // snippet: retry-async-after-before
  func enqueueUpload(_ file: String, attempt: Int = 1) {
    let upload = UploadOperation(file: file)
    upload.completionBlock = { [unowned upload] in
      guard upload.error != nil, attempt < 4 else { return }
      let delay = pow(2.0, Double(attempt))  // uncapped: attempt 40 would wait 35,000 years
      DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
        enqueueUpload(file, attempt: attempt + 1)  // a new operation, a new identity
      }
    }
    queue.addOperation(upload)
  }
  // end snippet
}

struct RetryLoopBefore: Sendable {
  func fetch(_ name: String) async throws -> String { try await fetchForRace(name) }

  // snippet: retry-loop-before
  func pageWithRetries() async throws -> String {
    for attempt in 1...4 {
      do {
        return try await fetch("page")
      } catch {
        if attempt == 4 { throw error }
        try await Task.sleep(for: .seconds(1 << attempt))  // the caller's slot stays taken
      }
    }
    preconditionFailure("unreachable: the last attempt returns or throws")
  }
  // end snippet
}

/// A database migration, one of the "before" operations of the exclusivity example.
final class MigrationOperation: Operation, @unchecked Sendable {}

// snippet: exclusivity-before
/// PSOperations' idea, by hand: each operation of a category depends on the previous one.
final class CategoryChain: @unchecked Sendable {
  private let lock = NSLock()
  private var last: [String: Operation] = [:]

  func add(_ operation: Operation, category: String, to queue: OperationQueue) {
    lock.lock()
    // Chained at enqueue: if an earlier one of the category must wait for this one, nothing runs.
    if let previous = last[category], !previous.isFinished { operation.addDependency(previous) }
    last[category] = operation
    lock.unlock()
    queue.addOperation(operation)
  }
}
// end snippet

// snippet: rate-limit-before
/// A token bucket by hand: refilled from the wall clock (which jumps), polled every 50 ms.
final class PollingBucket: @unchecked Sendable {
  private let lock = NSLock()
  private var tokens: Double
  private var refilled = Date()
  private var waiting: [Operation] = []
  private let perSecond: Double
  private let burst: Double
  private let queue: OperationQueue

  init(perSecond: Double, burst: Double, feeding queue: OperationQueue) {
    self.perSecond = perSecond
    self.burst = burst
    self.queue = queue
    tokens = burst
    poll()
  }

  func add(_ operation: Operation) {
    lock.lock()
    waiting.append(operation)
    lock.unlock()
  }

  private func poll() {
    lock.lock()
    tokens = min(burst, tokens + Date().timeIntervalSince(refilled) * perSecond)
    refilled = Date()
    var due: [Operation] = []
    while tokens >= 1, !waiting.isEmpty {
      tokens -= 1
      due.append(waiting.removeFirst())  // first come, whatever its priority
    }
    lock.unlock()
    queue.addOperations(due, waitUntilFinished: false)
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { [weak self] in self?.poll() }
  }
}
// end snippet

func tagsBefore(queue: OperationQueue) {
  // snippet: tags-before
  for operation in queue.operations where operation.name?.hasPrefix("profile/") == true {
    operation.cancel()
  }
  // end snippet
}

func progressBefore(queue: OperationQueue, files: [String]) {
  @Sendable func send(_ chunk: Int, of file: String) {}
  // snippet: progress-before
  queue.progress.totalUnitCount = Int64(files.count)  // nothing shows until this is set
  for file in files {
    let upload = BlockOperation {
      let fileProgress = Progress(totalUnitCount: 4)
      for chunk in 0..<4 {
        send(chunk, of: file)
        fileProgress.completedUnitCount += 1
      }
    }
    queue.addOperation(upload)
  }
  // end snippet
}

func escalationBefore(thumbnail: Operation) {
  // snippet: escalation-before
  // The cell became visible: its thumbnail is no longer a prefetch.
  thumbnail.queuePriority = .veryHigh
  thumbnail.qualityOfService = .userInitiated
  for dependency in thumbnail.dependencies {
    dependency.queuePriority = .veryHigh
    dependency.qualityOfService = .userInitiated
  }
  // end snippet
}

func capacityBefore(queue: OperationQueue, records: [String], store: @escaping @Sendable (String) -> Void) {
  // snippet: capacity-before
  let slots = DispatchSemaphore(value: 100)
  for record in records {
    slots.wait()  // blocks this thread while 100 are in flight
    let save = BlockOperation { store(record) }
    save.completionBlock = { slots.signal() }
    queue.addOperation(save)
  }
  // end snippet
}

import ActorQueue
// Legacy Operation subclasses written the way the field writes them (operation-model.md §5).
// They are deliberately *not* modernised: unsynchronised flags where the articles have them,
// KVO by string keys, semaphores in main(). The adapter must run them unchanged.
//
// `@unchecked Sendable` on each: Swift 6 makes a subclass restate `Operation`'s conformance
// (exactly what a migrating codebase adds). Why it holds here: each unguarded field is written
// by the operation's own work before it sends didChangeValue(forKey: "isFinished") (or before
// main() returns) and read by the tests only after the operation is seen finished, an edge
// ordered by Foundation's internal locks; the others are behind a lock.
import Dispatch
import Foundation
import TestSupport

/// Whether the calling code runs inside a Swift task (a blocking main() must not).
func insideSwiftTask() -> Bool { withUnsafeCurrentTask { $0 != nil } }

// MARK: (a) Synchronous: main() loops over items, checks isCancelled between them, swallows errors

struct NegativeNumber: Error {}

final class SumOperation: Operation, @unchecked Sendable {
  let numbers: [Int]
  /// Called before each item (tests use it to block or to observe progress).
  let beforeItem: (@Sendable (Int) -> Void)?
  var sum = 0
  var processed = 0
  var errors = 0
  var ranInsideTask: Bool?

  init(numbers: [Int], beforeItem: (@Sendable (Int) -> Void)? = nil) {
    self.numbers = numbers
    self.beforeItem = beforeItem
  }

  private func add(_ number: Int) throws {
    guard number >= 0 else { throw NegativeNumber() }
    sum += number
  }

  override func main() {
    ranInsideTask = insideSwiftTask()
    for number in numbers {
      if isCancelled { return }
      beforeItem?(number)
      do {
        try add(number)
      } catch {
        errors += 1  // swallowed, as legacy code does
      }
      processed += 1
    }
  }
}

// MARK: (b) Asynchronous, Swift: _executing/_finished, willChange/didChange by hand

final class AsyncFetchOperation: Operation, @unchecked Sendable {
  /// The callback API being wrapped: it calls its completion with a value, later, elsewhere.
  let fetch: (@escaping @Sendable (String) -> Void) -> Void
  var result: String?
  var startedInsideTask: Bool?

  private var _executing = false
  private var _finished = false

  init(fetch: @escaping (@escaping @Sendable (String) -> Void) -> Void) {
    self.fetch = fetch
  }

  override var isAsynchronous: Bool { true }
  override var isExecuting: Bool { _executing }
  override var isFinished: Bool { _finished }

  override func start() {
    startedInsideTask = insideSwiftTask()
    if isCancelled {
      willChangeValue(forKey: "isFinished")
      _finished = true
      didChangeValue(forKey: "isFinished")
      return
    }
    willChangeValue(forKey: "isExecuting")
    _executing = true
    didChangeValue(forKey: "isExecuting")
    DispatchQueue.global().async {
      self.fetch { value in
        self.result = value
        self.completeOperation()
      }
    }
  }

  func completeOperation() {
    willChangeValue(forKey: "isExecuting")
    willChangeValue(forKey: "isFinished")
    _executing = false
    _finished = true
    didChangeValue(forKey: "isExecuting")
    didChangeValue(forKey: "isFinished")
  }
}

// MARK: (c) Asynchronous, lock-guarded: recursive lock, notify only on change, cancel() finishes

final class LockedDownloadOperation: Operation, @unchecked Sendable {
  /// The underlying job: started with a completion, stopped by the returned cancel closure.
  let download: (@escaping @Sendable (Int) -> Void) -> (@Sendable () -> Void)
  var bytes: Int?

  private let lock = NSRecursiveLock()
  private var _executing = false
  private var _finished = false
  private var _started = false
  private var _cancelled = false
  private var stopDownload: (@Sendable () -> Void)?

  init(download: @escaping (@escaping @Sendable (Int) -> Void) -> (@Sendable () -> Void)) {
    self.download = download
  }

  override var isAsynchronous: Bool { true }

  override var isExecuting: Bool {
    get { lock.lock(); defer { lock.unlock() }; return _executing }
  }
  override var isFinished: Bool {
    get { lock.lock(); defer { lock.unlock() }; return _finished }
  }
  override var isCancelled: Bool {
    get { lock.lock(); defer { lock.unlock() }; return _cancelled }
  }

  private func setExecuting(_ value: Bool) {
    lock.lock(); defer { lock.unlock() }
    guard _executing != value else { return }
    willChangeValue(forKey: "isExecuting")
    _executing = value
    didChangeValue(forKey: "isExecuting")
  }

  private func setFinished(_ value: Bool) {
    lock.lock(); defer { lock.unlock() }
    guard _finished != value else { return }
    willChangeValue(forKey: "isFinished")
    _finished = value
    didChangeValue(forKey: "isFinished")
  }

  override func start() {
    lock.lock(); defer { lock.unlock() }
    if _cancelled {
      setFinished(true)
      return
    }
    _started = true
    setExecuting(true)
    stopDownload = download { bytes in
      self.lock.lock(); defer { self.lock.unlock() }
      guard !self._finished else { return }
      self.bytes = bytes
      self.setExecuting(false)
      self.setFinished(true)
    }
  }

  override func cancel() {
    lock.lock(); defer { lock.unlock() }
    guard !_cancelled else { return }
    willChangeValue(forKey: "isCancelled")
    _cancelled = true
    didChangeValue(forKey: "isCancelled")
    super.cancel()
    if _started {
      stopDownload?()
      setExecuting(false)
      setFinished(true)
    }
  }
}

// MARK: (e) A wrapper around a callback API: main() waits on a semaphore; cancel() stops the task

/// A stand-in for a URLSession-like client: a task completes when the test says so, or with an
/// error when cancelled.
final class FakeClient: Sendable {
  struct Cancelled: Error {}

  final class FakeTask: Sendable {
    private let completion: LockedValue<(@Sendable (Result<Int, any Error>) -> Void)?>
    let started = Gate()
    let cancelCalls = LockedValue(0)

    init(completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
      self.completion = LockedValue(completion)
    }

    func complete(_ result: Result<Int, any Error>) {
      let completion = self.completion.withLock { completion in
        defer { completion = nil }
        return completion
      }
      completion?(result)
    }

    func cancel() {
      cancelCalls.withLock { $0 += 1 }
      complete(.failure(Cancelled()))
    }
  }

  let tasks = LockedValue<[FakeTask]>([])
  let taskStarted = Gate()

  func startTask(completion: @escaping @Sendable (Result<Int, any Error>) -> Void) -> FakeTask {
    let task = FakeTask(completion: completion)
    tasks.withLock { $0.append(task) }
    taskStarted.open()
    return task
  }

  var firstTask: FakeTask? { tasks.withLock { $0.first } }
}

final class CallbackWrapperOperation: Operation, @unchecked Sendable {
  let client: FakeClient
  var result: Result<Int, any Error>?
  var ranInsideTask: Bool?
  private var task: FakeClient.FakeTask?
  private let taskLock = NSLock()

  init(client: FakeClient) { self.client = client }

  override func main() {
    ranInsideTask = insideSwiftTask()
    if isCancelled { return }
    let semaphore = DispatchSemaphore(value: 0)
    let task = client.startTask { result in
      self.result = result
      semaphore.signal()
    }
    taskLock.lock(); self.task = task; taskLock.unlock()
    if isCancelled { cancelTask() }  // cancelled between the check and the start
    semaphore.wait()
  }

  override func cancel() {
    super.cancel()
    cancelTask()
  }

  /// Cancels the underlying task once: whichever of `main()` (which sees `isCancelled` after
  /// storing the task) and `cancel()` (which sets it before looking) takes the task cancels it.
  private func cancelTask() {
    taskLock.lock(); let task = self.task; self.task = nil; taskLock.unlock()
    task?.cancel()
  }
}

// MARK: (f) Data hand-over: the input is read from a dependency, found by casting to a protocol

protocol ImageProvider {
  var image: String? { get }
}

final class LoadImageOperation: Operation, ImageProvider, @unchecked Sendable {
  let url: String
  var image: String?
  init(url: String) { self.url = url }
  override func main() {
    if isCancelled { return }
    image = "image(\(url))"
  }
}

final class TiltShiftOperation: Operation, ImageProvider, @unchecked Sendable {
  /// Set directly by a transfer operation, or found among the dependencies.
  var inputImage: String?
  var image: String?
  override func main() {
    if isCancelled { return }
    let input = inputImage ?? dependencies.compactMap { ($0 as? any ImageProvider)?.image }.first
    guard let input else { return }
    image = "tiltShift(\(input))"
  }
}

// MARK: Signals finish twice (a callback and a timeout path both "complete")

final class DoubleFinishOperation: Operation, @unchecked Sendable {
  private var _executing = false
  private var _finished = false
  let finishSignals = LockedValue(0)
  let bothSignalsSent = Gate()

  override var isAsynchronous: Bool { true }
  override var isExecuting: Bool { _executing }
  override var isFinished: Bool { _finished }

  override func start() {
    willChangeValue(forKey: "isExecuting")
    _executing = true
    didChangeValue(forKey: "isExecuting")
    DispatchQueue.global().async {
      self.completeOperation()  // the callback path
      self.completeOperation()  // the timeout path, not knowing the callback came
      self.bothSignalsSent.open()
    }
  }

  func completeOperation() {
    finishSignals.withLock { $0 += 1 }
    willChangeValue(forKey: "isExecuting")
    willChangeValue(forKey: "isFinished")
    _executing = false
    _finished = true
    didChangeValue(forKey: "isExecuting")
    didChangeValue(forKey: "isFinished")
  }
}

/// Never signals that it finished (forgot to finish when cancelled, the classic P1 slot leak).
final class NeverFinishingOperation: Operation, @unchecked Sendable {
  private var _executing = false
  let cancelCalls = LockedValue(0)
  let started = Gate()

  override var isAsynchronous: Bool { true }
  override var isExecuting: Bool { _executing }
  override var isFinished: Bool { false }

  override func start() {
    willChangeValue(forKey: "isExecuting")
    _executing = true
    didChangeValue(forKey: "isExecuting")
    started.open()
  }

  override func cancel() {
    super.cancel()
    cancelCalls.withLock { $0 += 1 }
  }
}

// MARK: Helpers

/// Counts calls, thread-safely (for completion blocks and bodies).
final class Counter: Sendable {
  private let value = LockedValue(0)
  func increment() { value.withLock { $0 += 1 } }
  var count: Int { value.withLock { $0 } }
}

/// Runs `operations` on a new OperationQueue and waits (without blocking a cooperative thread)
/// until all have finished.
func runOnOperationQueue(_ operations: [Operation], maxConcurrentOperationCount: Int = -1) async {
  let queue = OperationQueue()
  queue.maxConcurrentOperationCount = maxConcurrentOperationCount
  for operation in operations { queue.addOperation(operation) }
  await queue.allFinished()
}

private let referenceThreads = LockedValue<[DispatchQueue]>([])

/// An OperationQueue whose operations run on a serial dispatch queue of their own, for reference
/// runs of operations whose main() blocks. On Linux a default OperationQueue runs them on
/// Dispatch's global pool, which the Swift cooperative executor shares: a blocked main() there
/// stalls the tests' tasks until Dispatch adds a thread (about a second). Only for references
/// with one operation executing at a time.
func serialReferenceQueue() -> OperationQueue {
  let thread = DispatchQueue(label: "reference")
  referenceThreads.withLock { $0.append(thread) }  // OperationQueue holds it unretained
  let queue = OperationQueue()
  queue.maxConcurrentOperationCount = 1
  queue.underlyingQueue = thread
  return queue
}

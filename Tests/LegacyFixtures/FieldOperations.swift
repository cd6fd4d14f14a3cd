// Legacy Operation subclasses written the way users write them before Swift concurrency
// (spec/operation-model.md, section 5, styles a–f), in Swift 5 language mode on purpose: plain
// (non-Sendable) closures, unsynchronised state where field code has it, KVO by string keys, a
// semaphore in main(). None of them would compile in Swift 6 mode as written; they stand for
// the code a migrating user keeps in a Swift 5 target of their own while the adapter runs it.
//
// They are package only because they live in a module of their own; field code is internal.
//
// `@unchecked Sendable` on each subclass: `Operation` is `@unchecked Sendable` and the compiler
// asks a subclass to restate it even in Swift 5 mode (a migrating codebase adds exactly this).
// What holds it up is the legacy pattern's own, not a proof: fields written by the operation's
// work before it signals isFinished (or before main() returns) and read by tests only after it
// finished are ordered by Foundation's locks; LockedTransferOperation guards its state with a
// lock; AsyncOperation's `state` is read and written without one, as the field writes it (a
// race kept on purpose: ThreadSanitizer reports it now and then, when OperationQueue's
// `waitUntilFinished` reads `isFinished` while `start()` sets the state, so
// .ci/tsan-suppressions.txt exempts this class, and only it).
import Dispatch
package import Foundation

// MARK: A callback API, as legacy operations wrap one

/// A stand-in for a network client: `request` calls its completion later, on a queue of its
/// own, once the test calls `respond` (nothing happens on a timer).
package final class FakeSession {
  package final class Task {
    fileprivate var completion: ((Data?, (any Error)?) -> Void)?
    package private(set) var cancelCount = 0
    private let queue = DispatchQueue(label: "FakeSession.task")

    /// Delivers the response (once; later calls are ignored).
    package func respond(_ data: Data?, _ error: (any Error)? = nil) {
      queue.async {
        let completion = self.completion
        self.completion = nil
        completion?(data, error)
      }
    }

    /// What URLSessionTask.cancel() does: the completion gets a cancellation error.
    package func cancel() {
      queue.async {
        self.cancelCount += 1
        let completion = self.completion
        self.completion = nil
        completion?(nil, URLError(.cancelled))
      }
    }
  }

  private let lock = NSLock()
  private var _tasks: [Task] = []
  /// Called with each new task (tests use it to learn that a request was sent).
  package var onRequest: ((Task) -> Void)?

  package init() {}

  package var tasks: [Task] {
    lock.lock(); defer { lock.unlock() }
    return _tasks
  }

  package func request(_ path: String, completion: @escaping (Data?, (any Error)?) -> Void) -> Task {
    let task = Task()
    task.completion = completion
    lock.lock()
    _tasks.append(task)
    lock.unlock()
    onRequest?(task)
    return task
  }
}

// MARK: (a) Synchronous: main() only, checks isCancelled between items, swallows errors

package class ChecksumOperation: Operation, @unchecked Sendable {
  package let chunks: [[UInt8]]
  /// Called after each chunk, on the operation's thread (a plain closure, as legacy code has).
  package var progressHandler: ((Int) -> Void)?
  package private(set) var checksum: UInt32 = 0
  package private(set) var processedChunks = 0
  package private(set) var failures = 0

  package init(chunks: [[UInt8]]) {
    self.chunks = chunks
    super.init()
  }

  package override func main() {
    for chunk in chunks {
      if isCancelled { return }
      do {
        try add(chunk)
      } catch {
        failures += 1  // swallowed, as legacy code does
      }
      processedChunks += 1
      progressHandler?(processedChunks)
    }
  }

  struct EmptyChunk: Error {}

  private func add(_ chunk: [UInt8]) throws {
    guard !chunk.isEmpty else { throw EmptyChunk() }
    for byte in chunk { checksum = checksum &* 31 &+ UInt32(byte) }
  }
}

// MARK: (b) Asynchronous, Swift: the ubiquitous "AsyncOperation" base class and a network subclass

/// The base class found in countless codebases: a `State` enum whose key paths drive the KVO
/// notifications, `isReady` combined with super's. Its `start()` calls `main()` before setting
/// `.executing`, as the widespread original does: work that finishes in between is overwritten
/// (a real bug of the pattern, kept; tests respond only once it is executing).
package class AsyncOperation: Operation, @unchecked Sendable {
  package enum State: String {
    case ready, executing, finished
    fileprivate var keyPath: String { "is" + rawValue.capitalized }
  }

  package var state = State.ready {
    willSet {
      willChangeValue(forKey: newValue.keyPath)
      willChangeValue(forKey: state.keyPath)
    }
    didSet {
      didChangeValue(forKey: oldValue.keyPath)
      didChangeValue(forKey: state.keyPath)
    }
  }

  package override var isReady: Bool { super.isReady && state == .ready }
  package override var isExecuting: Bool { state == .executing }
  package override var isFinished: Bool { state == .finished }
  package override var isAsynchronous: Bool { true }

  package override func start() {
    if isCancelled {
      state = .finished
      return
    }
    main()
    state = .executing
  }

  /// Subclasses call this when their work is done, however it ended.
  package func finish() { state = .finished }
}

/// A network request in the style of open-source "NetworkOperation"s: the request starts in
/// main(), the completion stores the result and finishes; cancel() also cancels the task.
package class NetworkOperation: AsyncOperation, @unchecked Sendable {
  package let session: FakeSession
  package let path: String
  package private(set) var responseData: Data?
  package private(set) var responseError: (any Error)?
  private var task: FakeSession.Task?
  /// Called when the response arrived (a plain closure, captured non-Sendable state welcome).
  package var onResponse: ((Data?) -> Void)?

  package init(session: FakeSession, path: String) {
    self.session = session
    self.path = path
    super.init()
  }

  package override func main() {
    task = session.request(path) { [weak self] data, error in
      guard let self = self else { return }
      self.responseData = data
      self.responseError = error
      self.onResponse?(data)
      self.finish()
    }
  }

  package override func cancel() {
    super.cancel()
    task?.cancel()
  }
}

// MARK: (b') Failure reported as cancellation: store the error, cancel(), finish

/// `Operation` has no failure state, so much field code stores the error and cancels itself
/// (the Unsplash photo picker's `ConcurrentOperation.completeWithError`, and many like it): to
/// anything that reads only `isCancelled`, every failure looks like a cancellation.
package class FailingRequestOperation: AsyncOperation, @unchecked Sendable {
  package let session: FakeSession
  package let path: String
  package private(set) var data: Data?
  /// Set before `cancel()` by `completeWithError`; read once the operation has finished.
  package private(set) var error: (any Error)?
  /// Guarded by `lock`: a response may arrive (and cancel) before `main()` has stored it.
  private var task: FakeSession.Task?
  private let lock = NSLock()

  package init(session: FakeSession, path: String) {
    self.session = session
    self.path = path
    super.init()
  }

  /// Executing before the request is sent (unlike the base class's original `start()`), so a
  /// response that arrives at once is not overwritten.
  package override func start() {
    if isCancelled {
      state = .finished
      return
    }
    state = .executing
    main()
  }

  package override func main() {
    let task = session.request(path) { [weak self] data, error in
      guard let self = self else { return }
      if let error = error {
        self.completeWithError(error)
      } else {
        self.data = data
        self.finish()
      }
    }
    lock.lock()
    self.task = task
    lock.unlock()
  }

  package func completeWithError(_ error: any Error) {
    self.error = error
    cancel()
    finish()
  }

  package override func cancel() {
    super.cancel()
    lock.lock()
    let task = self.task
    lock.unlock()
    task?.cancel()
  }
}

// MARK: (c) Asynchronous, lock-guarded: recursive lock, notifications only on change

/// Every getter and setter guarded by a recursive lock; setters notify only when the value
/// changes, and outside the lock, as careful field code does: corelibs' `Operation` reads
/// `isFinished` while holding its own lock, so a subclass that sent the change notifications
/// while holding its lock would deadlock against it (lock-order inversion; seen on
/// OperationQueue itself, not only through the adapter).
package class LockedTransferOperation: Operation, @unchecked Sendable {
  private let lock = NSRecursiveLock()
  private var _executing = false
  private var _finished = false
  private var _started = false
  package let session: FakeSession
  private var task: FakeSession.Task?
  private var _received: Data?

  package init(session: FakeSession) {
    self.session = session
    super.init()
  }

  package var received: Data? {
    lock.lock(); defer { lock.unlock() }
    return _received
  }

  package override var isAsynchronous: Bool { true }
  package override var isExecuting: Bool {
    lock.lock(); defer { lock.unlock() }
    return _executing
  }
  package override var isFinished: Bool {
    lock.lock(); defer { lock.unlock() }
    return _finished
  }

  private func setExecuting(_ value: Bool) {
    lock.lock()
    let changes = _executing != value
    lock.unlock()
    guard changes else { return }
    willChangeValue(forKey: "isExecuting")
    lock.lock()
    _executing = value
    lock.unlock()
    didChangeValue(forKey: "isExecuting")
  }

  private func setFinished(_ value: Bool) {
    lock.lock()
    let changes = _finished != value
    lock.unlock()
    guard changes else { return }
    willChangeValue(forKey: "isFinished")
    lock.lock()
    _finished = value
    lock.unlock()
    didChangeValue(forKey: "isFinished")
  }

  package override func start() {
    lock.lock()
    _started = true
    lock.unlock()
    if isCancelled {
      setFinished(true)
      return
    }
    setExecuting(true)
    let task = session.request("transfer") { [weak self] data, _ in
      guard let self = self else { return }
      self.lock.lock()
      self._received = data
      self.lock.unlock()
      self.setExecuting(false)
      self.setFinished(true)
    }
    lock.lock()
    self.task = task
    lock.unlock()
  }

  package override func cancel() {
    super.cancel()
    lock.lock()
    let running = _started && !_finished
    let task = self.task
    lock.unlock()
    if running {
      task?.cancel()
      setExecuting(false)
      setFinished(true)
    }
  }
}

// MARK: (d) BlockOperation with several execution blocks and a completion block

/// Several blocks appending to a shared array under a lock, the completion block reading it.
package func makeThumbnailOperation(sizes: [Int], done: @escaping ([Int]) -> Void) -> BlockOperation {
  final class Rendered {
    let lock = NSLock()
    var sizes: [Int] = []
  }
  let rendered = Rendered()
  let operation = BlockOperation()
  for size in sizes {
    operation.addExecutionBlock {
      rendered.lock.lock()
      rendered.sizes.append(size)
      rendered.lock.unlock()
    }
  }
  operation.completionBlock = {
    rendered.lock.lock()
    let all = rendered.sizes.sorted()
    rendered.lock.unlock()
    done(all)
  }
  return operation
}

// MARK: (e) A callback API wrapped in main() with a semaphore; cancel() cancels the task too

package class BlockingRequestOperation: Operation, @unchecked Sendable {
  package let session: FakeSession
  private var task: FakeSession.Task?
  package private(set) var result: Result<Data, any Error>?

  package init(session: FakeSession) {
    self.session = session
    super.init()
  }

  package override func main() {
    if isCancelled { return }
    let semaphore = DispatchSemaphore(value: 0)
    task = session.request("blocking") { data, error in
      if let data = data {
        self.result = .success(data)
      } else {
        self.result = .failure(error ?? URLError(.unknown))
      }
      semaphore.signal()
    }
    semaphore.wait()
  }

  package override func cancel() {
    super.cancel()
    task?.cancel()
  }
}

// MARK: (f) Data hand-over through dependencies

package protocol ImageProviding {
  var image: String? { get }
}

package class DecodeImageOperation: Operation, ImageProviding, @unchecked Sendable {
  package let name_: String
  package private(set) var image: String?

  package init(file: String) {
    name_ = file
    super.init()
  }

  package override func main() {
    if isCancelled { return }
    image = "decoded(\(name_))"
  }
}

package class BlurOperation: Operation, ImageProviding, @unchecked Sendable {
  package private(set) var image: String?

  package override func main() {
    // Reads its input from whichever dependency provides an image.
    let input = dependencies.compactMap { ($0 as? any ImageProviding)?.image }.first
    guard let input = input else { return }
    image = "blur(\(input))"
  }
}

// MARK: Readiness decided by the subclass

/// Not ready until told (Foundation's test_CustomOperationReady): `isReady` overridden,
/// changed with the KVO notifications Foundation expects. The flag is read by whichever thread
/// asks (a queue's, the adapter's watcher) while the test sets it: it is guarded by a lock, as
/// careful field code guards it, and the notifications are sent outside the lock.
package class ManualReadyOperation: Operation, @unchecked Sendable {
  private let lock = NSLock()
  private var _isReady = false
  private var _didRun = false

  /// Whether `main()` ran; under the lock, as `isReady`: the test reads it after the queue's
  /// wait, whose ordering corelibs Foundation does not show the thread sanitizer.
  package var didRun: Bool {
    lock.lock()
    defer { lock.unlock() }
    return _didRun
  }

  package override var isReady: Bool {
    lock.lock()
    let ready = _isReady
    lock.unlock()
    return ready && super.isReady
  }

  package func setIsReady() {
    willChangeValue(forKey: "isReady")
    lock.lock()
    _isReady = true
    lock.unlock()
    didChangeValue(forKey: "isReady")
  }

  package override func main() {
    lock.lock()
    _didRun = true
    lock.unlock()
  }
}

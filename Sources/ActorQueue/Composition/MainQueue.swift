/// The serial queue whose bodies run on the main actor: Foundation's `OperationQueue.main`,
/// for UI updates at the end of a pipeline.
///
/// ```swift
/// let saved = queue.addOperation(after: parsed) { model in try await store.save(model) }
/// ActorQueue.main.addOperation(after: saved) { _ in label.text = "Saved" }   // on the main actor
/// ```
///
/// Its bodies are `@MainActor` closures, so main-actor code reads and writes UI state in them
/// without `await` (`{ @MainActor in … }` works too). It is a serial ``ActorQueue`` underneath
/// (``queue``): its operations take part in dependencies, priorities, suspension, cancellation
/// and events like any other. Unlike `OperationQueue.main`, it may be suspended. Its limit
/// stays 1, so every module that adds to it keeps its order: setting
/// `queue.maxConcurrentOperationCount` (or calling
/// ``ActorQueue/setMaxConcurrentOperationCount(_:pausingExcess:)`` on `queue`) to anything else
/// stops the program with a message that says so, in every build configuration. Its operations pause and resume like any other
/// (``AnyQueueOperation/pause()``, ``pauseAllOperations()``); a body on the main actor pauses at
/// ``ActorQueue/checkpoint()``.
public struct MainQueue: Sendable {
  /// The serial queue underneath, for everything but adding main-actor bodies, and what to
  /// pass where an ``ActorQueue`` is expected (`refresh(on: ActorQueue.main.queue)`): `MainQueue`
  /// cannot itself be one, since an actor cannot be subclassed and Swift has no implicit
  /// conversions. Bodies added through it run where their closure is isolated: write main-actor
  /// work `{ @MainActor in … }`. Its limit stays 1 (a change to anything else is refused with a
  /// precondition failure).
  public let queue: ActorQueue

  init() {
    queue = ActorQueue(mainQueueNamed: "main")
  }

  /// Adds an operation whose `body` runs on the main actor; see
  /// ``ActorQueue/addOperation(name:priority:_:)->QueueOperation<Success>``.
  @discardableResult
  public func addOperation<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal,
    _ body: @escaping @MainActor @Sendable () async throws -> Success
  ) -> QueueOperation<Success> {
    queue.addOperation(name: name, priority: priority) { try await body() }
  }

  /// Adds an operation that receives its inputs' values on the main actor; see
  /// ``ActorQueue/addOperation(name:priority:after:_:operation:)``.
  @discardableResult
  public func addOperation<First: Sendable, each More: Sendable, Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal,
    after first: QueueOperation<First>, _ more: repeat QueueOperation<each More>,
    operation body: @escaping @MainActor @Sendable (First, repeat each More) async throws -> Success
  ) -> QueueOperation<Success> {
    queue.addOperation(name: name, priority: priority, after: first, repeat each more) {
      (first: First, more: repeat each More) async throws -> Success in
      try await body(first, repeat each more)
    }
  }

  /// Adds a prepared operation; its body runs where its closure is isolated (write it
  /// `{ @MainActor in … }` to run on the main actor). Throws as ``ActorQueue/addOperation(_:)``.
  public func addOperation(_ operation: AnyQueueOperation) throws {
    try queue.addOperation(operation)
  }

  /// See ``ActorQueue/isSuspended``.
  public var isSuspended: Bool {
    get { queue.isSuspended }
    nonmutating set { queue.isSuspended = newValue }
  }

  /// See ``ActorQueue/operationCount``.
  public var operationCount: Int { queue.operationCount }

  /// See ``ActorQueue/operations``.
  public var operations: [AnyQueueOperation] { queue.operations }

  /// See ``ActorQueue/events``.
  public var events: AsyncStream<QueueEvent> { queue.events }

  /// See ``ActorQueue/cancelAllOperations()``.
  public func cancelAllOperations() { queue.cancelAllOperations() }

  /// See ``ActorQueue/waitUntilAllOperationsAreFinished()``.
  public func waitUntilAllOperationsAreFinished() async { await queue.waitUntilAllOperationsAreFinished() }

  /// Adds prepared operations, all or none; see ``ActorQueue/addOperations(_:)``. Their bodies
  /// run where their closures are isolated.
  public func addOperations(_ operations: [AnyQueueOperation]) throws {
    try queue.addOperations(operations)
  }

  /// Adds prepared operations and waits for them if asked; see
  /// ``ActorQueue/addOperations(_:waitUntilFinished:)``.
  public func addOperations(_ operations: [AnyQueueOperation], waitUntilFinished: Bool) async throws {
    try await queue.addOperations(operations, waitUntilFinished: waitUntilFinished)
  }

  /// Adds a barrier whose `body` runs on the main actor; see
  /// ``ActorQueue/addBarrierBlock(name:_:)``.
  @discardableResult
  public func addBarrierBlock(
    name: String? = nil, _ body: @escaping @MainActor @Sendable () async throws -> Void
  ) -> QueueOperation<Void> {
    queue.addBarrierBlock(name: name) { try await body() }
  }

  /// Adds one operation whose blocks run on the main actor, one after another (the main actor
  /// runs one at a time); its value is their values, in order. See
  /// ``ActorQueue/addOperation(name:priority:blocks:)``, whose blocks run concurrently.
  @discardableResult
  public func addOperation<Value: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal,
    blocks: [@MainActor @Sendable () async throws -> Value]
  ) -> QueueOperation<[Value]> {
    queue.addOperation(name: name, priority: priority) { @MainActor in
      var values: [Value] = []
      values.reserveCapacity(blocks.count)
      for block in blocks { values.append(try await block()) }
      return values
    }
  }

  /// See ``ActorQueue/events(bufferingPolicy:)``.
  public func events(bufferingPolicy: QueueEvent.BufferingPolicy) -> AsyncStream<QueueEvent> {
    queue.events(bufferingPolicy: bufferingPolicy)
  }

  /// See ``ActorQueue/pauseAllOperations()``.
  public func pauseAllOperations() { queue.pauseAllOperations() }

  /// See ``ActorQueue/resumeAllOperations()``.
  public func resumeAllOperations() { queue.resumeAllOperations() }

  /// Adds coalesced work whose `body` runs on the main actor; see
  /// ``ActorQueue/addOperation(name:priority:coalescingBy:_:)``.
  @discardableResult
  public func addOperation<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal, coalescingBy key: some Hashable & Sendable,
    _ body: @escaping @MainActor @Sendable () async throws -> Success
  ) -> QueueOperation<Success> {
    queue.addOperation(name: name, priority: priority, coalescingBy: key) { try await body() }
  }
}

extension ActorQueue {
  /// The serial queue whose bodies run on the main actor (Foundation's `OperationQueue.main`).
  public static let main = MainQueue()
}

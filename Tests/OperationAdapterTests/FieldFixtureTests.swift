import ActorQueue
import Foundation
import LegacyFixtures
import OperationAdapter
import TestSupport
import Testing

/// The Swift 5 mode fixtures (`LegacyFixtures`, styles a–f as the field writes them) run from
/// Swift 6 code: each on an `OperationQueue`, then through the adapter, with the same outcome.
/// Closures handed to legacy code from here are `@Sendable` and hop explicitly (Migration.md).
@Suite(.timeLimit(.minutes(hangLimitMinutes))) struct FieldFixtureTests {
  enum Side: String, CaseIterable, Sendable {
    case operationQueue, adapter
  }

  /// Runs `operation` on a fresh queue of `side` and waits until it has finished.
  private func run(_ operation: Operation, on side: Side) async throws {
    switch side {
    case .operationQueue:
      let queue = OperationQueue()
      queue.addOperation(operation)
      await queue.allFinished()
    case .adapter:
      let queue = ActorQueue()
      let handle = try queue.addOperation(legacy: operation)
      _ = await handle.result
    }
  }

  @Test(arguments: Side.allCases) func synchronousMain(_ side: Side) async throws {
    let progress = Recorder<Int>()
    let operation = ChecksumOperation(chunks: [[1, 2], [], [3]])
    operation.progressHandler = { @Sendable count in progress.append(count) }
    try await run(operation, on: side)
    #expect(operation.processedChunks == 3 && operation.failures == 1 && operation.checksum != 0)
    #expect(progress.snapshot == [1, 2, 3])
  }

  /// The base class calls `main()` (which sends the request) before it sets `.executing`, as
  /// the widespread original does: a response arriving in between would be overwritten. The
  /// test responds once the operation is executing (nothing notifies that: polled).
  @Test(arguments: Side.allCases) func asyncOperationBaseClassWithANetworkSubclass(_ side: Side) async throws
  {
    let session = FakeSession()
    let requested = Gate()
    session.onRequest = { @Sendable _ in requested.open() }
    let operation = NetworkOperation(session: session, path: "/items")
    let respond = Task {
      await requested.wait()
      #expect(await eventually { operation.isExecuting })
      session.tasks.first?.respond(Data("payload".utf8))
    }
    try await run(operation, on: side)
    await respond.value
    #expect(operation.responseData == Data("payload".utf8) && operation.isFinished)
  }

  @Test(arguments: Side.allCases) func cancellingANetworkOperationCancelsItsTask(_ side: Side) async throws {
    let session = FakeSession()
    let requested = Gate()
    session.onRequest = { @Sendable _ in requested.open() }
    let operation = NetworkOperation(session: session, path: "/slow")
    let finished = Gate()
    operation.completionBlock = { finished.open() }
    switch side {
    case .operationQueue:
      OperationQueue().addOperation(operation)
      await requested.wait()
      operation.cancel()
    case .adapter:
      let handle = try ActorQueue().addOperation(legacy: operation)
      await requested.wait()
      handle.cancel()
      #expect(await handle.result.isCancellation)
    }
    await finished.wait()
    #expect(operation.isCancelled && operation.responseError is URLError)
    #expect(session.tasks.first?.cancelCount == 1)
  }

  @Test(arguments: Side.allCases) func lockGuardedAsynchronousTransfer(_ side: Side) async throws {
    let session = FakeSession()
    session.onRequest = { @Sendable task in task.respond(Data([7])) }
    let operation = LockedTransferOperation(session: session)
    try await run(operation, on: side)
    #expect(operation.received == Data([7]))
  }

  @Test(arguments: Side.allCases) func blockOperationWithSeveralBlocksAndACompletion(_ side: Side)
    async throws
  {
    let completed = Gate()
    let rendered = LockedValue<[Int]>([])
    let operation = makeThumbnailOperation(sizes: [64, 128, 256]) { @Sendable sizes in
      rendered.withLock { $0 = sizes }
      completed.open()
    }
    try await run(operation, on: side)
    await completed.wait()
    #expect(rendered.withLock { $0 } == [64, 128, 256])
  }

  @Test(arguments: Side.allCases) func callbackAPIWrappedWithASemaphore(_ side: Side) async throws {
    let session = FakeSession()
    session.onRequest = { @Sendable task in task.respond(Data([1, 2])) }
    let operation = BlockingRequestOperation(session: session)
    try await run(operation, on: side)
    #expect(try operation.result?.get() == Data([1, 2]))
  }

  @Test(arguments: Side.allCases) func dataHandOverThroughDependencies(_ side: Side) async throws {
    let decode = DecodeImageOperation(file: "a.png")
    let blur = BlurOperation()
    blur.addDependency(decode)
    switch side {
    case .operationQueue:
      let queue = OperationQueue()
      queue.addOperation(blur)
      queue.addOperation(decode)
      await queue.allFinished()
    case .adapter:
      let queue = ActorQueue(maxConcurrentOperationCount: 1)
      let handles = try queue.addOperations(legacy: [blur, decode])
      for handle in handles { _ = await handle.result }
    }
    #expect(blur.image == "blur(decoded(a.png))")
  }
}

extension Result {
  fileprivate var isCancellation: Bool {
    if case .failure(let error) = self { return error is CancellationError }
    return false
  }
}

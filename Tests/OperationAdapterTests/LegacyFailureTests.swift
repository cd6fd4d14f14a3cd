import ActorQueue
import Foundation
import LegacyFixtures
import OperationAdapter
import TestSupport
import Testing

/// Legacy code reports a failure by storing an error and cancelling itself (`Operation` has no
/// failure state). With `addOperation(legacy:error:)` the handle ends `.failed` with that error;
/// a handle cancelled through ActorQueue stays `.cancelled`, keeping the legacy error as its
/// `thrownError`. On an `OperationQueue` the same operation only ever reads as cancelled.
@Suite(.timeLimit(.minutes(hangLimitMinutes))) struct LegacyFailureTests {
  private let offline = URLError(.notConnectedToInternet)

  /// A session whose every request fails with `error` as soon as it is sent.
  private func failingSession(_ error: any Error & Sendable) -> FakeSession {
    let session = FakeSession()
    session.onRequest = { @Sendable task in task.respond(nil, error) }
    return session
  }

  @Test("A legacy operation that stores an error and cancels itself ends .failed with that error")
  func selfCancelWithAnErrorFails() async throws {
    let operation = FailingRequestOperation(session: failingSession(offline), path: "/photos")
    let handle = try ActorQueue().addOperation(legacy: operation, error: { $0.error })
    await #expect(throws: URLError.self) { try await handle.value }
    #expect(handle.state == .failed)
    let error = try #require(handle.thrownError as? URLError)
    #expect(error.code == .notConnectedToInternet)
    #expect(operation.isCancelled && operation.isFinished, "the legacy object is as its own code left it")
  }

  @Test("On an OperationQueue the same operation reads only as cancelled; without error: the handle too")
  func withoutTheErrorClosureAFailureIsACancellation() async throws {
    let onQueue = FailingRequestOperation(session: failingSession(offline), path: "/photos")
    let queue = OperationQueue()
    queue.addOperation(onQueue)
    await queue.allFinished()
    #expect(onQueue.isCancelled && onQueue.error is URLError, "Foundation has no failed state")

    let operation = FailingRequestOperation(session: failingSession(offline), path: "/photos")
    let handle = try ActorQueue().addOperation(legacy: operation)
    await #expect(throws: CancellationError.self) { try await handle.value }
    #expect(handle.state == .cancelled)
  }

  @Test(
    "A dependent that requires the legacy operation fails with a DependencyFailedError carrying its error")
  func dependentsSeeTheLegacyError() async throws {
    let queue = ActorQueue()
    let operation = FailingRequestOperation(session: failingSession(offline), path: "/photos")
    let request = try queue.addOperation(legacy: operation, error: { $0.error })
    let decode = queue.addOperation(after: request) { request in request.data?.count ?? 0 }
    await #expect(throws: DependencyFailedError.self) { try await decode.value }
    #expect(decode.state == .failed)
    guard case .failure(let failure as DependencyFailedError) = await decode.result else {
      Issue.record("the dependent did not fail with a DependencyFailedError")
      return
    }
    #expect((failure.underlyingError as? URLError)?.code == .notConnectedToInternet)
  }

  @Test("A handle cancelled through ActorQueue stays .cancelled; the legacy error is its thrownError")
  func cancelledThroughTheQueueStaysCancelled() async throws {
    let session = FakeSession()
    let requested = Gate()
    session.onRequest = { @Sendable _ in requested.open() }
    let operation = FailingRequestOperation(session: session, path: "/slow")
    let handle = try ActorQueue().addOperation(legacy: operation, error: { $0.error })
    await requested.wait()
    handle.cancel()
    await #expect(throws: CancellationError.self) { try await handle.value }
    #expect(handle.state == .cancelled)
    // The cancel reached the request, whose completion stored URLError.cancelled. (Its own
    // count of cancels is written on the session's queue, later: not read here.)
    #expect((handle.thrownError as? URLError)?.code == .cancelled)
  }

  @Test("A cancelled operation with no error stored ends .cancelled")
  func noErrorStoredIsACancellation() async throws {
    let operation = FailingRequestOperation(session: failingSession(offline), path: "/photos")
    let handle = try ActorQueue().addOperation(legacy: operation, error: { _ in nil })
    await #expect(throws: CancellationError.self) { try await handle.value }
    #expect(handle.state == .cancelled && handle.thrownError == nil)
  }

  @Test("A prepared handle says where the error is kept too")
  func preparedHandle() async throws {
    let operation = FailingRequestOperation(session: failingSession(offline), path: "/photos")
    let handle = QueueOperation(legacy: operation, error: { $0.error })
    let after = QueueOperation { "ran" }
    try after.addDependency(handle)
    try await ActorQueue().addOperations([handle, after], waitUntilFinished: true)
    #expect(handle.state == .failed && (handle.thrownError as? URLError)?.code == .notConnectedToInternet)
    #expect(try await after.value == "ran", "an ordering dependency runs after a failed dependency")
  }

  @Test("A legacy operation that finishes is not asked for an error")
  func successIsUntouched() async throws {
    let session = FakeSession()
    session.onRequest = { @Sendable task in task.respond(Data([1, 2])) }
    let asked = LockedValue(0)
    let operation = FailingRequestOperation(session: session, path: "/photos")
    let handle = try ActorQueue().addOperation(
      legacy: operation,
      error: { operation in
        asked.withLock { $0 += 1 }
        return operation.error
      })
    #expect(try await handle.value.data == Data([1, 2]))
    #expect(asked.withLock { $0 } == 0)
  }
}

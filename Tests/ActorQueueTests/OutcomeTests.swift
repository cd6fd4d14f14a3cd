import ActorQueue
import TestSupport
import Testing

/// `outcome`: how an operation ended, read without waiting, on a handle of any type — the
/// dependency failure of a dependent that never ran included.
@Suite("Outcome, read without waiting", .timeLimit(.minutes(hangLimitMinutes)))
struct OutcomeTests {
  struct Broken: Error, Equatable {}

  @Test("nil until the operation ends; then its state and value")
  func finished() async throws {
    let release = Gate()
    let operation = ActorQueue().addOperation { () -> Int in
      await release.wait()
      return 42
    }
    #expect(operation.outcome == nil)
    release.open()
    _ = try await operation.value
    let outcome = try #require(operation.outcome)
    #expect(outcome.state == .finished && outcome.error == nil && outcome.value as? Int == 42)
    let erased: AnyQueueOperation = operation
    #expect(erased.outcome?.value as? Int == 42, "the same through the type-erased handle")
  }

  @Test("A body's error; a cancellation's CancellationError, the body's own error kept apart")
  func failedAndCancelled() async throws {
    let queue = ActorQueue()
    let failing = queue.addOperation { () throws -> Int in throw Broken() }
    _ = await failing.result
    #expect(failing.outcome?.state == .failed && failing.outcome?.error as? Broken == Broken())

    let started = Gate()
    let cancelled = queue.addOperation { () throws -> Int in
      started.open()
      while !Task.isCancelled { await Task.yield() }
      throw Broken()  // thrown after its cancellation: the operation ends .cancelled
    }
    await started.wait()
    cancelled.cancel()
    _ = await cancelled.result
    #expect(cancelled.outcome?.state == .cancelled && cancelled.outcome?.error is CancellationError)
    #expect(cancelled.thrownError as? Broken == Broken())
  }

  @Test("A dependent that never ran tells why at once: a DependencyFailedError naming its input")
  func dependencyFailure() async throws {
    let queue = ActorQueue()
    let load = queue.addOperation(name: "load") { () throws -> Int in throw Broken() }
    let decode = queue.addOperation(name: "decode", after: load) { $0 * 2 }
    await decode.waitUntilFinished()
    #expect(decode.thrownError == nil, "it never ran, so it threw nothing")
    let outcome = try #require(decode.outcome)
    #expect(outcome.state == .failed)
    let failure = try #require(outcome.error as? DependencyFailedError)
    #expect(failure.dependencyName == "load" && failure.underlyingError as? Broken == Broken())
  }

  @Test("An operation cancelled while it waits ends at once with CancellationError")
  func cancelledWhileWaiting() {
    let queue = ActorQueue()
    queue.isSuspended = true
    let waiting = queue.addOperation { 1 }
    waiting.cancel()
    #expect(waiting.outcome?.state == .cancelled && waiting.outcome?.error is CancellationError)
    #expect(waiting.outcome?.description == "cancelled: CancellationError()")
  }
}

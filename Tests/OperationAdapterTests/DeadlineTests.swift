import ActorQueue
import ActorQueueTesting
import Foundation
import OperationAdapter
import TestSupport
import Testing

/// A deadline on a legacy operation does what it does to any operation, and waits for the
/// legacy operation to finish, as Foundation waits for a cancelled operation.
@Suite(.timeLimit(.minutes(hangLimitMinutes))) struct LegacyDeadlineTests {
  @Test func anExecutingLegacyOperationIsCancelledAtItsDeadlineAndEndsFailedOnceItFinishes() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(clock: clock.queueClock)
    let started = Gate()
    let stopped = Gate()
    let download = LockedDownloadOperation { _ in
      started.open()
      return { stopped.open() }
    }
    let handle = try queue.addOperation(legacy: download, traits: [.deadline(in: .seconds(2))])
    await started.wait()
    clock.advance(by: .seconds(2))
    await stopped.wait()  // the legacy operation's cancel() ran, and it finished
    await handle.waitUntilFinished()
    #expect(download.isCancelled && download.isFinished)
    #expect(handle.state == .failed)
    #expect(!handle.isCancelled)
    do {
      _ = try await handle.value
      Issue.record("a timed-out legacy operation returned a value")
    } catch let error as OperationTimeoutError {
      #expect(error.kind == .deadline && error.hadStarted)
    }
  }

  @Test func aWaitingLegacyOperationIsCancelledAndStartedSoItCanFinishThenEndsFailed() async throws {
    let clock = ManualClock()
    let queue = ActorQueue(maxConcurrentOperationCount: 1, clock: clock.queueClock)
    let release = Gate()
    queue.addOperation { await release.wait() }
    let fetched = Recorder<Int>()
    let fetch = AsyncFetchOperation { done in
      fetched.append(1)
      done("late")
    }
    let handle = try queue.addOperation(legacy: fetch, traits: [.deadline(in: .seconds(1))])
    clock.advance(by: .seconds(1))
    await handle.waitUntilFinished()
    #expect(fetch.isCancelled && fetch.isFinished)
    #expect(fetched.snapshot.isEmpty)  // it saw isCancelled at start and finished at once
    #expect(handle.state == .failed)
    release.open()
    await queue.waitUntilAllOperationsAreFinished()
  }

  @Test func theAdaptersTimeoutStillAbandonsAnOperationThatNeverFinishes() async throws {
    let queue = ActorQueue()
    let never = LockedDownloadOperation { _ in {} }  // ignores its cancellation: never finishes
    let handle = try queue.addOperation(
      legacy: never, traits: [.deadline(in: .seconds(3_600))], timeout: .milliseconds(20))
    await handle.waitUntilFinished()
    #expect(handle.state == .failed)
    #expect(handle.thrownError == nil || handle.thrownError is OperationAdapterError)
    do {
      _ = try await handle.value
    } catch let error as OperationAdapterError {
      #expect(error == .timedOut)
    }
  }
}

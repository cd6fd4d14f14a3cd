import ActorQueue
import TestSupport
import Testing

/// Found while extending the random tester to pause (issue 12), as a rule its reference model
/// needed: a queue released while suspended cancels what waits in it and its paused bodies,
/// because nobody can resume it; but an executing body that is asked to pause (by `pause()`,
/// or for the excess of a lowered limit) and reaches its checkpoint only after the release
/// pauses there for good: resumed, it waits for a slot in a queue nobody can resume; cancelled,
/// it ends. Its body and all it captures stay alive. Fixed: such a body is cancelled at that
/// checkpoint (its `checkpoint()` throws `CancellationError`). The random tester's model still
/// keeps scripts from it (no release while an executing op is asked to pause, no `pause()`
/// afterwards); these tests hold the rule.
@Suite("Reliability: a body asked to pause in a queue released while suspended")
struct ReleasedSuspendedQueuePauseTests {
  /// Whether `operation` ends: a bound for the wait (the body ends on another task once its
  /// checkpoint throws), not a way to order anything.
  private func ends(_ operation: AnyQueueOperation) async -> Bool {
    await eventually { operation.state.isTerminal }
  }

  /// Starts an op (after a blocker that never reaches a checkpoint, when `excess`), asks it to
  /// pause, suspends and releases its queue, then lets it reach its checkpoint.
  private func run(excess: Bool) async -> (AnyQueueOperation, Bool) {
    let started = Gate()
    let release = Gate()
    let blockerRelease = Gate()
    var queue: ActorQueue? = ActorQueue(maxConcurrentOperationCount: 2)
    if excess {
      let blockerStarted = Gate()
      queue!.addOperation {
        blockerStarted.open()
        await blockerRelease.wait()
      }
      await blockerStarted.wait()
    }
    let operation = queue!.addOperation { () -> Int in
      started.open()
      await release.wait()
      try await ActorQueue.checkpoint()
      return 1
    }
    await started.wait()
    if excess {
      // Lowering the limit to 1 asks the most recently started op of equal priority: this one.
      queue!.setMaxConcurrentOperationCount(1, pausingExcess: true)
    } else {
      operation.pause()
    }
    queue!.isSuspended = true
    queue = nil  // released while suspended: nobody can resume it
    release.open()
    let ended = await ends(operation)
    blockerRelease.open()
    return (operation, ended)
  }

  @Test(
    "A body asked to pause before its queue was released while suspended does not pause for good"
  )
  func pauseRequestedBeforeRelease() async {
    let (operation, ended) = await run(excess: false)
    #expect(ended, "state \(operation.state)")
  }

  @Test(
    "A body asked to pause for the excess before its queue was released while suspended does not pause for good"
  )
  func excessPauseRequestedBeforeRelease() async {
    let (operation, ended) = await run(excess: true)
    #expect(ended, "state \(operation.state)")
  }
}

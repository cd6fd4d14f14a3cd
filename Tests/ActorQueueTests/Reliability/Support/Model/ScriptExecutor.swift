/// The verdict of running one script.
struct ScriptFailure: Error, Sendable, CustomStringConvertible {
  var step: Int?
  var message: String

  var description: String { step.map { "step \($0): \(message)" } ?? message }
}

/// Runs scripts. The real-queue executor is one; an executor that drives the scheduler's pure
/// state machine can reuse the generator, the model and the shrinker through this protocol.
///
/// The contract every executor follows (see `RealQueueExecutor`): for each step, call
/// `ReferenceModel.apply(_:index:)`; skip the step when it says `.skip`, else perform it and
/// compare a thrown `ActorQueueError` with `.refused`; then, while `nextMove()` returns a body's
/// move, check that the system runs exactly `executing(in:)` of every queue (the ops holding a
/// slot), let that body move (give it the move's permits) and check it passed its checkpoint,
/// paused or ended as the model says; then compare every op's exact state with
/// `expectedState(_:)`. At the end, run `drainSteps()` the same way until it returns none, and
/// check what `opsAllowedAlive()`/`queuesAllowedAlive()` leave out is freed. Forward `journal`
/// entries to an `InvariantChecker` when the executor has events.
protocol ScriptExecutor {
  /// Runs `script` from scratch; returns the first disagreement, or nil.
  func run(_ script: Script) async -> ScriptFailure?
}

/// Delta debugging (ddmin) over the steps: the smallest script found that still fails.
/// `stillFails` runs a candidate; it may run it in a child process.
func shrink(_ script: Script, budget: Int = 200, stillFails: (Script) async -> Bool) async -> Script {
  var current = script
  var granularity = 2
  var attempts = 0
  while current.steps.count >= 2 && attempts < budget {
    let chunk = max(1, current.steps.count / granularity)
    var reduced = false
    var start = 0
    while start < current.steps.count && attempts < budget {
      var candidate = current
      candidate.steps.removeSubrange(start..<min(start + chunk, current.steps.count))
      attempts += 1
      if await stillFails(candidate) {
        current = candidate
        reduced = true
        granularity = max(granularity - 1, 2)
      } else {
        start += chunk
      }
    }
    if !reduced {
      if chunk == 1 { break }
      granularity = min(granularity * 2, current.steps.count)
    }
  }
  return current
}

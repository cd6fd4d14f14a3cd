public import ActorQueue
public import Testing

// Swift Testing helpers: plain functions (macros would need a package dependency), each
// reporting a failure at its caller's source location.

/// Waits until `operation` has ended and records an issue unless it finished (`.finished`),
/// naming its state and the error it ended with. Records an issue instead of waiting on if it
/// has not ended after `timeout` of real time.
///
/// ```swift
/// await expectFinished(upload)
/// ```
public func expectFinished(
  _ operation: AnyQueueOperation, timeout: Duration = .seconds(10),
  sourceLocation: SourceLocation = #_sourceLocation
) async {
  let clock = ContinuousClock()
  let deadline = clock.now + timeout
  while !operation.isFinished {
    if clock.now >= deadline {
      Issue.record(
        Comment(rawValue: "\(label(of: operation)) did not end within \(timeout): it is \(operation.state)"),
        sourceLocation: sourceLocation)
      return
    }
    await Task.yield()
    try? await Task.sleep(for: .microseconds(200))
  }
  guard let outcome = operation.outcome, outcome.state != .finished else { return }
  let error = outcome.error.map { ": \($0)" } ?? ""
  Issue.record(
    Comment(rawValue: "\(label(of: operation)) ended \(outcome.state)\(error), expected finished"),
    sourceLocation: sourceLocation)
}

/// Records an issue unless `operation` ran `times` attempts more than its first: its retry
/// policy ran it again `times` times (``AnyQueueOperation/attemptCount`` is `times + 1`).
///
/// ```swift
/// expectRetried(fetch, times: 2)
/// ```
public func expectRetried(
  _ operation: AnyQueueOperation, times: Int, sourceLocation: SourceLocation = #_sourceLocation
) {
  let retries = operation.attemptCount - 1
  guard retries != times else { return }
  Issue.record(
    Comment(
      rawValue:
        "\(label(of: operation)) was retried \(max(0, retries)) time\(retries == 1 ? "" : "s") "
        + "(\(operation.attemptCount) attempt\(operation.attemptCount == 1 ? "" : "s")), expected \(times)"),
    sourceLocation: sourceLocation)
}

/// Records an issue if `queue` ever had more than `limit` operations executing at once while
/// `recorder` recorded it.
///
/// ```swift
/// expectNeverMoreThan(3, concurrentIn: queue, recorder)
/// ```
public func expectNeverMoreThan(
  _ limit: Int, concurrentIn queue: ActorQueue, _ recorder: QueueRecorder,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  let most = recorder.maxConcurrency(in: queue)
  guard most > limit else { return }
  Issue.record(
    Comment(
      rawValue: "\(queue.name.map { "queue \"\($0)\"" } ?? "the queue") had \(most) operations executing "
        + "at once, more than \(limit)"),
    sourceLocation: sourceLocation)
}

private func label(of operation: AnyQueueOperation) -> String {
  operation.name.map { "\"\($0)\" (\(operation.id))" } ?? operation.id.description
}

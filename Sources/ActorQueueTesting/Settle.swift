import ActorQueue
public import Testing

extension ManualClock {
  /// Returns once nothing more can happen on this clock's queues without the clock advancing or
  /// a gate opening: no queue may start an operation (none is ready with a free slot in a queue
  /// that is not suspended, and no worker is starting), and every executing body waits at a
  /// ``TestGate``. A body that waits for anything else (a network call, a sleep on another
  /// clock) keeps it from returning: after `timeout` of real time it records an issue naming the
  /// operations still moving, at the caller's source location, and returns instead of hanging.
  /// An operation that only waits for its worker task to start is waited for up to ten times
  /// `timeout` (a busy cooperative pool), then reported the same way.
  ///
  /// ```swift
  /// let waiting = queue.addOperation(traits: [.deadline(in: .seconds(5))]) { await gate.wait() }
  /// await clock.settle()        // the body is at its gate
  /// clock.advance(by: .seconds(5))
  /// ```
  public func settle(timeout: Duration = .seconds(10), sourceLocation: SourceLocation = #_sourceLocation)
    async
  {
    let realClock = ContinuousClock()
    let started = realClock.now
    var stillFor = 0
    while true {
      let state = queueClock.quiescence
      let moving = state.executing.filter { !Parking.isParked($0.id) }
      if moving.isEmpty && !state.mayStart {
        // Still twice in a row, a yield apart: a body's end that is being reported shows first.
        stillFor += 1
        if stillFor >= 2 { return }
      } else {
        stillFor = 0
      }
      let waited = started.duration(to: realClock.now)
      // A body that moves for longer than `timeout` waits for something else. A start that is
      // only pending (a worker task the pool has not run yet) is waited for ten times longer:
      // a busy pool, as in a parallel test run, is slow, not stuck.
      if !moving.isEmpty, waited >= timeout {
        let names = moving.map { $0.name ?? $0.id.description }.sorted().joined(separator: ", ")
        let message =
          "ManualClock.settle(): after \(timeout), still moving: \(names) (a body waits for something other "
          + "than a TestGate?)"
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        return
      }
      if waited >= timeout * 10 {
        let message =
          "ManualClock.settle(): after \(timeout * 10), an operation still waits to start (is the cooperative "
          + "pool blocked?)"
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        return
      }
      await Task.yield()
      if stillFor == 0 { try? await Task.sleep(for: .microseconds(200)) }
    }
  }
}

import ActorQueue
public import Testing

extension ManualClock {
  /// Returns once nothing more can happen on this clock's queues without the clock advancing or
  /// a gate opening: no queue may start an operation (none is ready with a free slot in a queue
  /// that is not suspended, no worker is starting, and no start waits for a decision deferred
  /// by a long call in slices), and every executing body waits at a ``TestGate``, sleeps on this
  /// clock, or awaits (on its own task) what cannot move either: an operation's `value`,
  /// `result` or `waitUntilFinished()` (a timed one on a manual clock always counts), or a
  /// queue's `waitUntilAllOperationsAreFinished()`, as a group does for its children. A body that
  /// waits for anything else (a network call, a sleep on another clock) keeps it from
  /// returning: once it has moved for `timeout` of real time with nothing starting meanwhile, it
  /// records an issue naming the operations still moving, at the caller's source location, and
  /// returns instead of hanging. A start (a worker task the pool has not run yet) is waited for
  /// up to thirty times `timeout`, then reported the same way: in a parallel run of a large
  /// suite on a loaded 2-core machine, a start has waited over 100 seconds.
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
    var movingSince = started
    while true {
      let state = queueClock.quiescence(parked: Parking.all)
      let moving = state.moving
      if moving.isEmpty && !state.mayStart {
        // Still twice in a row, a yield apart: a body's end that is being reported shows first.
        stillFor += 1
        if stillFor >= 2 { return }
      } else {
        stillFor = 0
      }
      let now = realClock.now
      if moving.isEmpty || state.mayStart { movingSince = now }
      let waited = started.duration(to: now)
      // A body that moves for longer than `timeout`, nothing starting meanwhile, waits for
      // something else. A start that is only pending (a worker task the pool has not run yet) is
      // waited for thirty times longer: a busy pool, as in a parallel test run, is slow, not stuck.
      if !moving.isEmpty, movingSince.duration(to: now) >= timeout {
        let names = moving.map { $0.name ?? $0.id.description }.sorted().joined(separator: ", ")
        let message =
          "ManualClock.settle(): after \(timeout), still moving: \(names) (a body waits for something other "
          + "than a TestGate?)"
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        return
      }
      if waited >= timeout * 30 {
        let message =
          "ManualClock.settle(): after \(timeout * 30), an operation still waits to start (is the cooperative "
          + "pool blocked?)"
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        return
      }
      await Task.yield()
      if stillFor == 0 { try? await Task.sleep(for: .microseconds(200)) }
    }
  }
}

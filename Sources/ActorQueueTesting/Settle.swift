import ActorQueue
public import Testing

extension ManualClock {
  /// Returns once nothing more can happen on this clock's queues without the clock advancing or
  /// a gate opening: no queue may start an operation (none is ready with a free slot in a queue
  /// that is not suspended, and no worker is starting), and every executing body waits at a
  /// ``TestGate``. A body that waits for anything else (a network call, a sleep on another
  /// clock) keeps it from returning: after `timeout` of real time it records an issue naming the
  /// operations still moving, at the caller's source location, and returns instead of hanging.
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
    let giveUp = realClock.now + timeout
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
      if realClock.now >= giveUp {
        let names = moving.map { $0.name ?? $0.id.description }
        let what =
          names.isEmpty
          ? "an operation may still start" : "still moving: \(names.sorted().joined(separator: ", "))"
        Issue.record(
          "ManualClock.settle(): after \(timeout), \(what) (a body waits for something other than a TestGate?)",
          sourceLocation: sourceLocation)
        return
      }
      await Task.yield()
      if stillFor == 0 { try? await Task.sleep(for: .microseconds(200)) }
    }
  }
}

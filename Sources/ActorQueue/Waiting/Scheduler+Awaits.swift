/// Waits that could never end, refused at once; and what running bodies await, for `settle()`.
extension Scheduler {
  /// The error for a wait on `index` from the task at `task` that nothing could end, if it is
  /// one: the task runs the body or a condition of `index` (or of the shared work it follows), or
  /// the body of a child, at any depth, of the group `index` is. O(1); O(the group's started
  /// children) when `index` is an executing group and the task is not its own.
  func selfWait(for index: Int, fromTask task: Int) -> ActorQueueError? {
    guard task != 0, !operations[index].phase.hasEnded else { return nil }
    let target = operations[index].leader >= 0 ? operations[index].leader : index
    guard case .executing(.worker(let worker)) = operations[target].phase else { return nil }
    let awaited = target == index ? [target] : [target, index]
    if worker.recordedTaskAddress == task { return .awaitsItself(awaited.map(cycleMember)) }
    guard !groupRecords.isEmpty, let child = groupChild(of: target, runningOn: task) else { return nil }
    return .awaitsItself(([child] + awaited).map(cycleMember))
  }

  /// The child of group operation `group`, at any depth, whose body runs on `task`.
  private func groupChild(of group: Int, runningOn task: Int) -> Int? {
    guard let queue = groupRecords.queue(ofOperation: group),
      groupRecords[queue]?.operationID == operations[group].id
    else { return nil }
    var index = queues[queue].firstStarted
    while index >= 0 {
      if case .executing(.worker(let worker)) = operations[index].phase {
        if worker.recordedTaskAddress == task { return index }
        if let nested = groupChild(of: index, runningOn: task) { return nested }
      }
      index = operations[index].nextStarted
    }
    return nil
  }

  /// A wait on `index` from the task at `task`: refused if nothing could end it; otherwise
  /// `register` adds the waiter (`false`: `index` has ended), and a wait is noted for settle().
  mutating func beginWait(
    on index: Int, id: OperationID, fromTask task: Int, timed: Bool, _ register: (inout Scheduler) -> Bool
  ) -> (waits: Bool, refused: ActorQueueError?) {
    if let error = selfWait(for: index, fromTask: task) { return (false, error) }
    guard register(&self) else { return (false, nil) }
    noteAwait(.operation(index: index, id: id, timed: timed), fromTask: task)
    return (true, nil)
  }

  /// Notes that the body running on `task`, if any, awaits `target`: only while a manual clock
  /// exists, for its `settle()` (O(queues + started bodies) then; nothing otherwise).
  mutating func noteAwait(_ target: AwaitRegistry.Target, fromTask task: Int) {
    guard !manualClocks.isEmpty, task != 0, let running = bodyRunning(onTask: task) else { return }
    awaits.note(running.index, awaiter: operations[running.index].id, task: task, awaits: target)
  }

  /// Whether executing `index` waits, through what it last registered awaiting, for something
  /// that cannot move without a clock or a gate: an unfinished operation that is not executing,
  /// or whose own wait is still (`isStill`); a queue whose unfinished operations all are; or a
  /// timed wait on a manual clock. `visiting` breaks a cycle (none can form: they are refused).
  func awaitsSomethingStill(
    _ index: Int, isStill: (Int) -> Bool, visiting: inout Set<Int>
  ) -> Bool {
    guard case .executing(.worker(let worker)) = operations[index].phase,
      let entry = awaits.entry(of: index, id: operations[index].id), entry.task == worker.recordedTaskAddress,
      visiting.insert(index).inserted
    else { return false }
    defer { visiting.remove(index) }
    switch entry.target {
    case .operation(let awaited, let id, let timed):
      guard operations[awaited].id == id, !operations[awaited].phase.hasEnded else { return false }
      if timed {
        let queue = operations[awaited].queue
        if (queue >= 0 ? queues[queue].clock : 0) != 0 { return true }
      }
      return isOperationStill(awaited, isStill: isStill, visiting: &visiting)
    case .queue(let queue):
      guard queues[queue].isLive else { return false }
      var child = queues[queue].first
      while child >= 0 {
        guard isOperationStill(child, isStill: isStill, visiting: &visiting) else { return false }
        child = operations[child].nextInQueue
      }
      return true
    }
  }

  /// Whether unfinished `index` cannot move by itself: not executing, or executing and still.
  private func isOperationStill(_ index: Int, isStill: (Int) -> Bool, visiting: inout Set<Int>) -> Bool {
    guard case .executing = operations[index].phase else { return true }
    return isStill(index) || awaitsSomethingStill(index, isStill: isStill, visiting: &visiting)
  }

  /// `index` as a member of a refused cycle: its identifier and name.
  func cycleMember(_ index: Int) -> ActorQueueError.CycleMember {
    ActorQueueError.CycleMember(
      id: operations[index].id, name: operations[index].name,
      isSharedWork: operations[index].extrasBox != nil && operations[index].extras?.coalescing != nil)
  }
}

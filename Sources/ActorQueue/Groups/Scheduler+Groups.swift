/// What a group's queue (``OperationGroup/queue``) knows of its group, in its record.
struct GroupRecord: Sendable {
  /// Whether the queue takes children.
  enum Admission: Sendable {
    /// Children are added and run.
    case open
    /// The group cancels its children: one added now ends `.cancelled` at once.
    case cancelling
    /// The group's last child ended and the group is ending: an add is refused with
    /// ``ActorQueueError/groupEnded``.
    case ended
  }

  /// The group's operation (its record), which waits for every operation of this queue.
  let operation: Int
  let operationID: OperationID
  let policy: GroupFailurePolicy
  var admission = Admission.open
  /// The earliest of the group's deadline and its enclosing groups', on the queue's clock: every
  /// child's deadline is at most this.
  let deadline: Int64?
  /// The generation of the queue, not a group's, that the outermost group belongs to: its
  /// exclusivity domain is the children's by default.
  let domainGeneration: UInt64
  /// Children that ended, and the sum of their progress weights: complete in the roll-up.
  var endedChildren = 0
  var endedWeight = 0

  /// A child of `weight` ended; returns the group's operation.
  mutating func countEnded(weight: Int) -> (operation: Int, id: OperationID) {
    endedChildren += 1
    endedWeight += weight
    return (operation, operationID)
  }
}

/// The group of each group's queue, by queue index: an array beside the queue records, read and
/// changed in place. A dictionary cost each child a hash on its add and on its end.
struct GroupTable: Sendable {
  private var records: [GroupRecord?] = []
  /// The queues that have a record: for the rare walks over every group.
  private var indices: Set<Int> = []
  /// The queue of each group operation's record (a wait on a group looks for its children).
  private var queuesByOperation: [Int: Int] = [:]

  var isEmpty: Bool { indices.isEmpty }

  subscript(queue: Int) -> GroupRecord? {
    get { queue < records.count ? records[queue] : nil }
    _modify {
      if queue >= records.count { records += repeatElement(nil, count: queue + 1 - records.count) }
      let had = records[queue]?.operation
      yield &records[queue]
      let has = records[queue]?.operation
      if had != has {
        if let had { queuesByOperation[had] = nil }
        if let has { queuesByOperation[has] = queue }
        if has != nil { indices.insert(queue) } else { indices.remove(queue) }
      }
    }
  }

  /// Removes the record of `queue`, returning it.
  mutating func removeValue(forKey queue: Int) -> GroupRecord? {
    guard queue < records.count, let record = records[queue] else { return nil }
    records[queue] = nil
    indices.remove(queue)
    queuesByOperation[record.operation] = nil
    return record
  }

  /// The queue of the group whose operation is record `operation`, if it is one's.
  func queue(ofOperation operation: Int) -> Int? { queuesByOperation[operation] }

  /// The first group, in no particular order, that satisfies `predicate`. O(groups).
  func first(where predicate: ((key: Int, value: GroupRecord)) -> Bool) -> (key: Int, value: GroupRecord)? {
    for queue in indices {
      let entry = (key: queue, value: records[queue]!)
      if predicate(entry) { return entry }
    }
    return nil
  }
}

/// Operation groups: a queue of children whose group operation ends after them.
extension Scheduler {
  /// Makes the queue of the group whose body runs on the calling task (`address`): the children
  /// run there, holding none of the parent's slots. `nil` when no body runs on that task.
  mutating func createGroupQueue(
    runningOnTask address: Int, name: String?, limit: Int, policy: GroupFailurePolicy
  ) -> (reference: QueueReference, group: Int, id: OperationID)? {
    guard let (_, index) = bodyRunning(onTask: address) else { return nil }
    return createGroupQueue(of: index, name: name, limit: limit, policy: policy)
  }

  /// Makes the queue of the group operation `index`, which executes.
  mutating func createGroupQueue(
    of index: Int, name: String?, limit: Int, policy: GroupFailurePolicy
  ) -> (reference: QueueReference, group: Int, id: OperationID) {
    let parent = operations[index].queue
    let deadline =
      operations[index].timeSlot >= 0 ? timeStates[Int(operations[index].timeSlot)].deadline : nil
    let outer = groupRecords[parent]
    let reference = createQueue(
      name: name, limit: limit, taskPriority: nil, clock: QueueClock(id: queues[parent].clock))
    queues[reference.index].taskPriority = queues[parent].taskPriority
    queues[reference.index].taskExecutor = queues[parent].taskExecutor
    queues[reference.index].isGroup = true
    groupRecords[reference.index] = GroupRecord(
      operation: index, operationID: operations[index].id, policy: policy, deadline: deadline,
      domainGeneration: outer?.domainGeneration ?? queues[parent].generation)
    liveGroups += 1
    return (reference, index, operations[index].id)
  }

  /// The group's queue takes no child from now on if it has none unfinished: returns the
  /// children that failed (moved out, released by the caller), and whether the group's task was
  /// cancelled (by `cancel()` or a time limit), read in this hold: the event that cancelled it
  /// may also have ended its last child, and the body must not race the task's cancellation
  /// (delivered after that event) to decide its outcome. `nil`: some child is unfinished.
  mutating func sealGroup(_ queue: Int) -> (failures: [GroupFailedError.Failure], cancelled: Bool)? {
    guard queues[queue].unfinishedCount == 0, var group = groupRecords[queue] else { return nil }
    if group.admission != .ended { liveGroups -= 1 }
    group.admission = .ended
    groupRecords[queue] = group
    let failures = groupFailures.removeValue(forKey: queue) ?? []
    let cancelled = hasOperationRecord(group) && operations[group.operation].taskCancelled
    return (failures, cancelled)
  }

  /// The group cancels its children: waiting ones end at once, executing ones have their tasks
  /// cancelled, and one added later ends `.cancelled` as it is added. Nothing once it ended.
  mutating func cancelGroupChildren(
    _ reference: QueueReference, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    guard isLive(reference), let group = groupRecords[reference.index], group.admission != .ended else {
      return
    }
    groupRecords[reference.index]!.admission = .cancelling
    cancelAll(in: reference.index, now: now, &effects)
  }

  /// `cancel()` on the group operation `index`, if it is still operation `id`.
  mutating func cancelGroup(
    _ index: Int, id: OperationID, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    guard index < operations.count, operations[index].isLive, operations[index].id == id else { return }
    cancel(index, now: now, &effects)
  }

  /// Checks a batch being added to a group's queue: refused once the group ended, or when one of
  /// them waits for the group (which will wait for it). Nothing changes then.
  func checkGroupAdmission(of handles: [Handle], to queue: Int) throws(ActorQueueError) {
    guard let group = groupRecords[queue] else { return }
    if group.admission == .ended { throw .groupEnded }
    for handle in handles where !operations[handle.recordIndex].dependencies.isEmpty {
      if let cycle = cycle(closedBy: handle.recordIndex, group.operation) { throw cycleError(cycle) }
    }
  }

  /// `index`, just joined to the group's queue `queue`: it runs as a child (and inherits the
  /// group's deadline), or ends at once: `.cancelled` while the group cancels its children,
  /// `.failed` once the group ended or when it waits for its group. Returns whether it stays.
  @inline(never)
  mutating func admitChild(_ index: Int, to queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects)
    -> Bool
  {
    let group = groupRecords[queue]!
    switch group.admission {
    case .ended:
      terminate(index, as: .failed, error: ActorQueueError.groupEnded, &effects)
      return false
    case .cancelling:
      cancelWaiting(index, &effects)
      return false
    case .open:
      if !operations[index].dependencies.isEmpty,
        let cycle = cycle(closedBy: index, group.operation)
      {
        terminate(index, as: .failed, error: cycleError(cycle), &effects)
        return false
      }
      // One with time state arms its deadline in `enqueue`, the earlier of its own and this.
      if group.deadline != nil, operations[index].timeSlot < 0 {
        armDeadline(of: index, on: queue, TimeTraits(), now: now)
      }
      if operations[index].enqueuedHandle?.progressStorage.load() != nil {
        linkChildProgress(index, in: queue)
      }
      return true
    }
  }

  /// `index`, a child of the group of `queue`, ended `.failed`: the group lists it, and with
  /// ``GroupFailurePolicy/cancelSiblings`` cancels the others, in this call (a walk, as
  /// `cancelAllOperations()`'s, which starts nothing of the queue until it is done; one added
  /// later is cancelled as it is added).
  @inline(never)
  mutating func noteChildFailure(_ index: Int, in queue: Int, _ effects: inout Effects) {
    let group = groupRecords[queue]!
    guard group.policy != .ignore, group.admission != .ended else { return }
    groupFailures[queue, default: []].append(
      GroupFailedError.Failure(
        id: operations[index].id, name: operations[index].name,
        error: operations[index].failure ?? cancellationError))
    guard group.policy == .cancelSiblings, group.admission == .open else { return }
    groupRecords[queue]!.admission = .cancelling
    addWalk(.cancel, in: queue)
  }

  /// The group operation that waits for `index`, a child of its queue: what the cycle search adds
  /// to `index`'s dependents. `nil` when `index` is no group's child, or its group has ended.
  func groupOperation(waitingFor index: Int) -> Int? {
    let queue = operations[index].queue
    guard queue >= 0, queues[queue].isGroup, groupRecords[queue]!.admission != .ended else { return nil }
    return groupRecords[queue]!.operation
  }

  /// The queue whose exclusivity domain `queue`'s operations name by default: its own, or, for a
  /// group's queue, the one its outermost group belongs to.
  // Inlined: a call from a mutating method would copy the whole scheduler value first.
  @inline(__always)
  func domainGeneration(of queue: Int) -> UInt64 {
    queues[queue].isGroup ? groupRecords[queue]!.domainGeneration : queues[queue].generation
  }

  /// Whether lock `id` is held by a group that `queue` (a group's) is inside: then a child's key
  /// there is its group's, taken already.
  func isHeldByEnclosingGroup(_ id: LockID, queue: Int) -> Bool {
    guard let slot = lockSlot(of: id) else { return false }
    let holder = lockStates[slot].holder
    guard holder >= 0 else { return false }
    var queue = queue
    while let group = groupRecords[queue] {
      if group.operation == holder { return true }
      queue = operations[group.operation].queue
      guard queue >= 0 else { return false }
    }
    return false
  }
}

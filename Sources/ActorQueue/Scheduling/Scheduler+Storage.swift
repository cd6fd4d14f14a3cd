/// Storage: the records of operations and queues, created, freed and given back.
extension Scheduler {
  // MARK: Operations

  /// A new operation's handle and record, for the hold of the lock that submits it (`type` is
  /// looked up by the caller, outside the lock).
  @inline(__always)
  mutating func newOperation<Success: Sendable>(
    name: String?, priority: OperationPriority, work: OperationWork, as type: QueueOperation<Success>.Type
  ) -> QueueOperation<Success> {
    let id = OperationID()
    let record = createOperation(id: id, name: name, priority: priority, work: work)
    return type.init(id: id, name: name, recordIndex: record)
  }

  /// Creates the record of a new handle; returns its index. O(1).
  mutating func createOperation(
    id: OperationID, name: String?, priority: OperationPriority, work: OperationWork
  ) -> Int {
    defer {
      createdSinceJudged &+= 1
      let live = operations.count - freeOperations.count
      if live > peakLiveOperations { peakLiveOperations = live }
    }
    if let index = freeOperations.popLast() {
      operations[index].reuse(id: id, name: name, priority: priority, work: work)
      return index
    }
    // A new slot is appended empty and filled in place, as a freed one is: a record built for
    // it would be copied through its value witness, then destroyed.
    operations.append(OperationRecord.vacant)
    let index = operations.count - 1
    operations[index].reuse(id: id, name: name, priority: priority, work: work)
    return index
  }

  /// What a released handle's record let go of.
  struct Released: Sendable {
    /// User-owned values, released by the caller after unlocking.
    var garbage: Garbage
    /// The handle is the first of a chain being released: the caller releases `garbage`, then
    /// drains ``takeReleaseBacklog()`` until it is empty.
    var drains: Bool
    /// The handle was the last reference to an operation its released queue had let go of:
    /// what its cancellation decided, performed by the caller after unlocking.
    var effects: SchedulerEffects? = nil
  }

  /// The handle that owned `index` was deinitialised: frees its record. Its dependencies (the
  /// only handles a record can own after its handle is gone) go to the release backlog when
  /// another release is being drained, so a dropped chain of any length is released
  /// iteratively.
  mutating func releaseOperation(
    _ index: Int, owner: OperationID, now: () -> SchedulerInstant
  ) -> Released {
    guard operations[index].isLive, operations[index].id == owner else {
      preconditionFailure(
        "Internal inconsistency: operation record \(index) released by a handle it does not belong to")
    }
    if !operations[index].phase.hasEnded, operations[index].isLetGo || isFollowerOfLetGoWork(index) {
      return Released(garbage: Garbage(), drains: false, effects: handleGone(index, now: now))
    }
    precondition(
      operations[index].queue == -1 && operations[index].phase.worker == nil
        && !operations[index].phase.runsExternally,
      "Internal inconsistency: the handle of \(owner) was released while its queue still held it")
    if operations[index].phase.hasEnded {
      // The common case, an operation that ended.
      var effects = Effects()
      freeEnded(index, owner: owner, &effects)
      judgeStorageIfAllFree(now: now)
      return Released(garbage: effects.garbage, drains: false)
    }
    operations[index].isLive = false
    freeOperations.append(index)
    if operations[index].isTagged { forgetTags(of: index) }
    var garbage = Garbage()
    if operations[index].timeSlot >= 0 {
      // A prepared operation's traits: what of the user's they hold (a retry policy's closures,
      // a domain, conditions) goes after unlocking, not when the slot is reused.
      let slot = Int(operations[index].timeSlot)
      garbage.releaseLater((timeStates[slot].traits, timeStates[slot].produced))
      timeStates[slot].traits = TimeTraits()
      timeStates[slot].produced = []
      releaseTimeSlot(of: index)
    }
    if operations[index].retrySlot >= 0 { freeRetrySlot(of: index) }
    // Dependencies that still list it as a dependent skip it by its identifier (the index may
    // be reused), so there is nothing to unlink there. What it owned is taken out in place.
    if !operations[index].dependencies.isEmpty {
      for edge in operations[index].dependencies {
        if let handle = edge.handle { garbage.releaseLater(handle: handle) }
      }
      operations[index].dependencies = []
    }
    if let outcome = operations[index].outcome.take() { garbage.releaseLater(outcome: outcome) }
    if let body = operations[index].body.take() { garbage.releaseLater(body: body) }
    if let external = operations[index].external.take() { garbage.releaseLater(external: external) }
    if let error = operations[index].thrownError.take() { garbage.releaseLater(error: error) }
    operations[index].edgePositions = nil
    if !operations[index].dependents.isEmpty { operations[index].dependents = [] }
    if !operations[index].completionHandlers.isEmpty {
      garbage.releaseLater(operations[index].completionHandlers)
      operations[index].completionHandlers = []
    }
    if !operations[index].subscribers.isEmpty { operations[index].subscribers = [] }
    judgeStorageIfAllFree(now: now)
    guard garbage.hasHandles else { return Released(garbage: garbage, drains: false) }
    if isDrainingBacklog {
      releaseBacklog.append(contentsOf: garbage.takeHandles())
      return Released(garbage: garbage, drains: false)
    }
    isDrainingBacklog = true
    return Released(garbage: garbage, drains: true)
  }

  /// Frees the record of an ended operation whose handle is being released (by its `deinit`,
  /// or by its end when the queue held the last reference): its end let go of everything but
  /// its outcome, the error it threw and weak references to its dependencies. O(1).
  mutating func freeEnded(_ index: Int, owner: OperationID, _ effects: inout Effects) {
    precondition(
      operations[index].isLive && operations[index].id == owner && operations[index].phase.hasEnded,
      "Internal inconsistency: operation record \(index) freed while not an ended operation of \(owner)")
    freeOperations.append(index)
    if operations[index].retrySlot >= 0 { freeRetrySlot(of: index) }
    if operations[index].isTagged { forgetTags(of: index) }
    let (outcome, error) = operations[index].free()
    if let outcome { effects.garbage.releaseLater(outcome: outcome) }
    if let error { effects.garbage.releaseLater(error: error) }
    // An end that freed the last record is judged at the end of its event, by `settle`, which
    // knows the time.
  }

  /// How long the records' storage may stay underused before it is given back, whatever the
  /// number of operations meanwhile (see `judgeStorageIfAllFree(now:)`).
  static let storageWindow: Duration = .nanoseconds(storageWindowNanoseconds)
  /// ``storageWindow`` in nanoseconds: what the judgement compares.
  static let storageWindowNanoseconds: Int64 = 1_000_000_000

  /// Once no operation of the process has a record any more (every handle is gone), the records'
  /// storage is judged. It is kept if a quarter of it or more was in use at once since it was
  /// last judged, and given back if not, once as many operations as it holds have come and gone
  /// since then or ``storageWindow`` has passed; until then it is judged again at the next such
  /// moment. Memory follows the recent peak of live operations, not the largest burst ever seen,
  /// and a workload that repeats bursts of one size keeps its storage instead of growing it again
  /// each time (regrowing it is copying and page faults under the lock). Not judged on less work
  /// or time, because every record is also free for a moment whenever the workers catch up with
  /// a burst that is still being added: judged then, the storage would be given back in the
  /// middle of the burst and grown again at once. The Performance article has the figures.
  /// O(1) amortised: every record dropped was added by
  /// an operation that found no free one, and the free list is rebuilt only after a quarter of
  /// the storage was in use at once since the last judgement, which took that many new
  /// operations.
  ///
  /// Kept after a burst, the free records are handed out again from the lowest index up (the
  /// free list is rebuilt in order, once per burst that used a quarter of the storage or more):
  /// left in the order the burst freed them, the next work's records would be scattered over the
  /// whole storage.
  @inline(never)
  mutating func judgeStorageIfAllFree(now: () -> SchedulerInstant) {
    guard freeOperations.count == operations.count else { return }
    if operations.count > 1024 {
      let instant = now()
      if peakLiveOperations >= operations.count / 4 {
        if peakLiveOperations > 1024 {
          freeOperations.removeAll(keepingCapacity: true)
          freeOperations.append(contentsOf: stride(from: operations.count - 1, through: 0, by: -1))
        }
      } else if createdSinceJudged < operations.count, let judged = storageJudgedAt,
        instant.nanoseconds &- judged.nanoseconds < Self.storageWindowNanoseconds
      {
        return  // too little work and time since it was judged to tell
      } else {
        operations = []
        freeOperations = []
      }
      storageJudgedAt = instant
    }
    peakLiveOperations = 0
    createdSinceJudged = 0
  }

  /// The next handles to release while draining a chain; `[]` ends the drain.
  mutating func takeReleaseBacklog() -> [Handle] {
    if releaseBacklog.isEmpty {
      isDrainingBacklog = false
      return []
    }
    defer { releaseBacklog = [] }
    return releaseBacklog
  }

  // MARK: Queues

  /// Creates a queue's record.
  mutating func createQueue(
    name: String?, limit: Int, taskPriority: TaskPriority?, taskExecutor: (any TaskExecutor)? = nil,
    clock: QueueClock = .system
  ) -> QueueReference {
    nextQueueGeneration += 1
    let record = QueueRecord(
      generation: nextQueueGeneration, name: name, taskPriority: taskPriority?.rawValue, clock: clock.id,
      taskExecutor: taskExecutor, machine: QueueStartRule(limit: limit))
    if let index = freeQueues.popLast() {
      queues[index] = record
      return QueueReference(index: index, generation: nextQueueGeneration)
    }
    queues.append(record)
    return QueueReference(index: queues.count - 1, generation: nextQueueGeneration)
  }

  /// Whether the queue's record still exists (its `ActorQueue` or its work is alive).
  func isLive(_ queue: QueueReference) -> Bool {
    queue.index < queues.count && queues[queue.index].isLive
      && queues[queue.index].generation == queue.generation
  }

  /// The queue's `ActorQueue` was released. A suspended queue that nobody can resume any more
  /// cancels its waiting operations; a queue with nothing left is freed (its event streams
  /// end).
  ///
  /// Nobody can reach what `pause()` holds there but through a handle outside the queue: the
  /// queue lets go of it, so that it ends once the last such handle goes. Suspended, nobody can
  /// resume the queue: what waits for a start or for a slot again (a body paused at a
  /// checkpoint) would wait forever, and is cancelled. Both in slices of the lock, as
  /// `cancelAllOperations()`.
  mutating func releaseQueue(_ queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects) {
    queues[queue].isReleased = true
    let reference = QueueReference(index: queue, generation: queues[queue].generation)
    if queues[queue].first >= 0 { beginWalk(.release, in: queue, &effects) }
    if isLive(reference) { freeQueueIfDone(queue, &effects) }
    settle(now: now, &effects)
  }

  /// Frees a released queue's record once no operation and no worker is left in it.
  mutating func freeQueueIfDone(_ queue: Int, _ effects: inout Effects) {
    guard queues[queue].isLive, queues[queue].isReleased, queues[queue].unfinishedCount == 0,
      queues[queue].machine.executing == 0, queues[queue].machine.startingWorkers == 0
    else { return }
    let generation = queues[queue].generation
    if queues[queue].isArbitrated { exclusiveQueues.removeFirst(queue) }
    if queues[queue].hasLimiters {
      limitedQueues.removeFirst(queue)
      disarmPermitTimer(of: queue)
      effects.garbage.releaseLater(queues[queue].limiterObjects)
    }
    if !keyRecordings.isEmpty { keyRecordings[queue] = nil }
    for subscriber in queues[queue].subscribers { subscriber.finish(effects: &effects) }
    effects.garbage.releaseLater(queues[queue].subscribers)
    if let executor = queues[queue].taskExecutor { effects.garbage.releaseLater(executor) }
    // Its operation's record may be gone already (ended, freed, and the storage dropped since).
    if queues[queue].isGroup, let group = groupRecords[queue], hasOperationRecord(group) {
      keepGroupProgress(of: group.operation)
    }
    if queues[queue].isGroup, let group = groupRecords.removeValue(forKey: queue) {
      if group.admission != .ended { liveGroups -= 1 }
      if let failures = groupFailures.removeValue(forKey: queue) { effects.garbage.releaseLater(failures) }
    }
    var freed = QueueRecord(generation: generation, isLive: false, machine: QueueStartRule(limit: 1))
    // It stays where it is in the list of queues this event changed, which `settle` walks.
    freed.isTouched = queues[queue].isTouched
    freed.nextTouched = queues[queue].nextTouched
    queues[queue] = freed
    freeQueues.append(queue)
  }
}

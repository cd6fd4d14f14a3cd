/// Deadlines and timeouts: the `traits:` overloads, and waiting with a time limit.
extension ActorQueue {
  /// The instant `duration` from now on this queue's ``clock``: a deadline for operations of
  /// this queue, or of any queue on the same clock. It saturates as ``QueueClock/deadline(in:)``
  /// does: a duration too long to represent gives a deadline that never comes.
  public nonisolated func deadline(in duration: Duration) -> QueueDeadline {
    clock.deadline(in: duration)
  }

  /// Adds an operation with traits (a deadline, a timeout; see ``OperationTrait``), and returns
  /// its handle: otherwise the same as ``addOperation(name:priority:_:)->QueueOperation<Success>``.
  ///
  /// ```swift
  /// let page = queue.addOperation(traits: [.timeout(.seconds(10))]) { try await fetch(url) }
  /// ```
  ///
  /// Cost: what `addOperation` costs, plus a timer per deadline or timeout: O(1) when timers
  /// arrive in order (a deadline `in:` the same duration on each operation, a timeout), O(log n)
  /// in the timers armed otherwise; a timeout also keeps a small record. With a condition, the
  /// operation is created, given its traits and added in three holds of the lock, its conditions'
  /// dependencies asked in between (see ``OperationCondition``). An empty `traits` costs nothing
  /// more.
  @discardableResult
  public nonisolated func addOperation<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait],
    _ body: @escaping @Sendable () async throws -> Success
  ) -> QueueOperation<Success> {
    submit(name: name, priority: priority, traits: traits, .typed(body), as: QueueOperation<Success>.self)
  }

  /// ``addOperation(name:priority:traits:_:)->QueueOperation<Success>`` for a body that returns nothing
  /// and cannot throw, kept as it is given (no wrapper, no boxed result), as
  /// ``addOperation(name:priority:_:)->QueueOperation<Void>`` keeps it.
  @discardableResult
  public nonisolated func addOperation(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait],
    _ body: @escaping @Sendable () async -> Void
  ) -> QueueOperation<Void> {
    submit(name: name, priority: priority, traits: traits, .void(body), as: QueueOperation<Void>.self)
  }

  /// Adds an operation that receives the values of its inputs, with traits: otherwise the same
  /// as ``addOperation(name:priority:after:_:operation:)``. A deadline counts from this call, not
  /// from when the inputs finish; an input's deadline does not pass to this operation.
  @discardableResult
  public nonisolated func addOperation<First: Sendable, each More: Sendable, Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait],
    after first: QueueOperation<First>, _ more: repeat QueueOperation<each More>,
    operation body: @escaping @Sendable (First, repeat each More) async throws -> Success
  ) -> QueueOperation<Success> {
    let operation = QueueOperation<Success>(name: name, priority: priority, traits: traits) {
      try await body(first.inputValue(), repeat (each more).inputValue())
    }
    var inputs: [AnyQueueOperation] = [first]
    for input in repeat each more { inputs.append(input) }
    Engine.run { $0.submit(operation, inputs: inputs, to: index, now: Engine.now, &$1) }
    return operation
  }

  /// Creates the handle and record of a new operation with traits and submits it, in one
  /// critical section; the traits are folded, and an absolute deadline's clock checked, before
  /// it. No traits: ``submit(name:priority:_:as:)``.
  nonisolated func submit<Success: Sendable>(
    name: String?, priority: OperationPriority, traits: [OperationTrait], _ work: OperationWork,
    as type: QueueOperation<Success>.Type
  ) -> QueueOperation<Success> {
    guard !traits.isEmpty else { return submit(name: name, priority: priority, work, as: type) }
    if traits.count == 1 {
      let index = index
      switch traits[0].kind {
      case .exclusive(let request):
        // Keys alone, a common case: nothing to fold, no clock to check.
        return submitNew(name: name, priority: priority, work, as: type) { scheduler, operation, effects in
          scheduler.submitExclusive(operation, request, to: index, now: Engine.now, &effects)
        }
      case .tags(_, let ids):
        // Tags alone, another: an idle queue still starts the operation in one step.
        guard !ids.isEmpty else { return submit(name: name, priority: priority, work, as: type) }
        return submitNew(name: name, priority: priority, work, as: type) { scheduler, operation, effects in
          scheduler.submitTagged(operation, ids, to: index, now: Engine.now, &effects)
        }
      default:
        break
      }
    }
    let time = TimeTraits(traits)
    if let weight = time.progressWeight {
      return submit(
        name: name, priority: priority, traits: traits, progress: ProgressCell(weight: weight), work, as: type
      )
    }
    time.checkClock(clock.id, operation: name ?? "an operation", queue: self.name)
    let index = index
    if !time.conditions.isEmpty {
      // Conditions ask for their dependencies, outside the lock, between creation and submission.
      let operation = QueueOperation<Success>(name: name, priority: priority, work: work)
      operation.setTraits(traits, conditions: time.conditions)
      Engine.run { $0.submit(operation, to: index, now: Engine.now, &$1) }
      return operation
    }
    return submitNew(name: name, priority: priority, work, as: type) { scheduler, operation, effects in
      scheduler.submitTimed(operation, time, to: index, now: Engine.now, &effects)
    }
  }

  /// ``submit(name:priority:traits:_:as:)`` for an operation with a progress cell, tied to it in
  /// the critical section that creates it (so its group, if any, counts its weight from its add).
  nonisolated func submit<Success: Sendable>(
    name: String?, priority: OperationPriority, traits: [OperationTrait], progress cell: ProgressCell,
    _ work: OperationWork, as type: QueueOperation<Success>.Type
  ) -> QueueOperation<Success> {
    let time = TimeTraits(traits)
    time.checkClock(clock.id, operation: name ?? "an operation", queue: self.name)
    let index = index
    if !time.conditions.isEmpty {
      let operation = QueueOperation<Success>(name: name, priority: priority, work: work)
      operation.attachProgress(cell)
      operation.setTraits(traits, conditions: time.conditions)
      Engine.run { $0.submit(operation, to: index, now: Engine.now, &$1) }
      return operation
    }
    return submitNew(name: name, priority: priority, work, as: type) { scheduler, operation, effects in
      scheduler.attachProgress(cell, to: operation)
      if traits.isEmpty {
        if let spawn = scheduler.submitNew(operation, to: index, now: Engine.now, &effects) {
          effects.spawn(spawn)
        }
      } else {
        scheduler.submitTimed(operation, time, to: index, now: Engine.now, &effects)
      }
    }
  }

  /// Creates the handle and record of a new operation and submits it with `submission`, in one
  /// critical section.
  @inline(__always)
  private nonisolated func submitNew<Success: Sendable>(
    name: String?, priority: OperationPriority, _ work: OperationWork, as type: QueueOperation<Success>.Type,
    _ submission: (inout Scheduler, QueueOperation<Success>, inout SchedulerEffects) -> Void
  ) -> QueueOperation<Success> {
    Engine.run { scheduler, effects in
      let operation = scheduler.newOperation(name: name, priority: priority, work: work, as: type)
      submission(&scheduler, operation, &effects)
      return operation
    }
  }
}

extension QueueOperation {
  /// A prepared operation with traits (see ``OperationTrait``), not in any queue yet: otherwise
  /// the same as ``init(name:priority:_:)``. A deadline `in:` a duration counts from when it is
  /// added to a queue, on that queue's clock; an absolute deadline must be of that queue's clock
  /// (precondition, checked when it is added). Its conditions' dependencies
  /// (``OperationCondition/dependency(for:)``) are asked here, and added to its queue with it.
  public convenience init(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait],
    _ body: @escaping @Sendable () async throws -> Success
  ) {
    self.init(name: name, priority: priority, body)
    setTraits(traits)
  }
}

extension AnyQueueOperation {
  /// Suspends until the operation has ended or `timeout` has passed on its queue's clock (the
  /// system clock while it is in no queue), whichever comes first; returns whether it ended.
  /// The operation is left alone either way (to stop it, call ``cancel()``). A `timeout` of zero
  /// or less returns at once; one too long to represent in 64-bit nanoseconds (about 292 years)
  /// waits for the end alone.
  ///
  /// Like ``waitUntilFinished()``, cancelling the waiting task does not end the wait. Cost: one
  /// timer, at most O(log n) in the timers armed. Foundation has no such wait (its `waitUntilFinished()`
  /// blocks a thread for as long as it takes). Called from the operation's own body or
  /// condition (or a group's child on its group), it stops the program with
  /// ``ActorQueueError/awaitsItself``'s message.
  public func waitUntilFinished(timeout: Duration) async -> Bool {
    guard timeout > .zero else { return isFinished }
    let task = currentTaskAddress()
    var refused: ActorQueueError?
    let ended = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
      let (waits, error) = Engine.run { scheduler, effects in
        scheduler.beginWait(on: recordIndex, id: id, fromTask: task, timed: true) {
          $0.addTimedWaiter(continuation, to: recordIndex, timeout: timeout, now: Engine.now, &effects)
        }
      }
      refused = error
      if !waits { continuation.resume(returning: true) }
    }
    if let refused { fatalError("ActorQueue: \(refused)") }
    return ended
  }
}

extension AnyQueueOperation {
  /// Gives this operation, not yet in a queue, traits (also the OperationAdapter's legacy handles).
  package func setTraits(_ traits: [OperationTrait]) {
    guard !traits.isEmpty else { return }
    let conditions = traits.compactMap { trait -> (any OperationCondition)? in
      if case .condition(let box) = trait.kind { return box.condition }
      return nil
    }
    setTraits(traits, conditions: conditions)
  }

  /// ``setTraits(_:)`` with the traits' `conditions`, whose dependencies are asked for here,
  /// outside the lock, once.
  func setTraits(_ traits: [OperationTrait], conditions: [any OperationCondition]) {
    for trait in traits {
      if case .progressWeight(let weight) = trait.kind, progressStorage.load() == nil {
        attachProgress(ProgressCell(weight: weight))
      }
    }
    let produced = conditions.compactMap { $0.dependency(for: self) }
    Engine.mutate { [recordIndex] in $0.setTraits(traits, of: recordIndex, produced: produced) }
  }

  /// Callers in ``waitUntilFinished(timeout:)`` now (for tests).
  package var timedWaiterCount: Int {
    Engine.read { $0.time(of: recordIndex)?.timedWaiters.count ?? 0 }
  }
}

extension MainQueue {
  /// Adds an operation whose `body` runs on the main actor, with traits; see
  /// ``ActorQueue/addOperation(name:priority:traits:_:)->QueueOperation<Success>``.
  @discardableResult
  public func addOperation<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait],
    _ body: @escaping @MainActor @Sendable () async throws -> Success
  ) -> QueueOperation<Success> {
    queue.addOperation(name: name, priority: priority, traits: traits) { try await body() }
  }
}

extension Scheduler {
  /// Gives a new operation, not yet enqueued, its traits (armed when it is enqueued).
  mutating func setTraits(_ traits: [OperationTrait], of index: Int, produced: [Handle] = []) {
    modifyTime(of: index) {
      $0.traits.add(traits)
      $0.produced += produced
    }
    if let tags = time(of: index)?.traits.tags, !tags.isEmpty { setTags(tags, of: index) }
    guard operations[index].external != nil, let time = time(of: index) else { return }
    if let policy = time.traits.retry {
      beginRetries(of: index, policy)  // refuses it, with a message
    }
    if let condition = time.traits.conditions.first {
      let name = operations[index].name ?? operations[index].id.description
      fatalError(
        "ActorQueue: \(name) is legacy work (an Operation or other externally completed work), which the queue "
          + "starts without running a body: .condition(\(condition.name)) cannot apply to it; check the "
          + "condition inside the work, or add a body that checks it before running the work")
    }
  }

  /// ``submitTimed(_:_:to:now:_:)`` for an operation whose only trait is `.tags`: `tags`, interned.
  mutating func submitTagged(
    _ handle: Handle, _ tags: [UInt64], to queue: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    setTags(tags, of: handle.recordIndex)
    submit(handle, to: queue, now: now, &effects)
  }

  /// ``submitTimed(_:_:to:now:_:)`` for an operation whose only trait is `.exclusive(request)`.
  mutating func submitExclusive(
    _ handle: Handle, _ request: ExclusiveRequest, to queue: Int, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) {
    if !request.keys.isEmpty {
      beginExclusive(handle.recordIndex, request, on: queue)
      if enqueueParkedIfBlocked(handle, into: queue) {
        settle(now: now, &effects)
        return
      }
    }
    enqueue(handle, into: queue, now: now, &effects)
    settle(now: now, &effects)
  }

  /// Adds a new operation with traits, folded by the caller: an operation with only a deadline
  /// keeps no time state (its entry and a mark in its record are enough).
  mutating func submitTimed(
    _ handle: Handle, _ traits: TimeTraits, to queue: Int, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) {
    let index = handle.recordIndex
    if !traits.tags.isEmpty { setTags(traits.tags, of: index) }
    if let policy = traits.retry { beginRetries(of: index, policy) }
    if !traits.exclusive.isEmpty { beginExclusive(index, traits.exclusive, on: queue) }
    if traits.cost != nil { beginCost(traits.cost, of: index, on: queue) }
    if traits.timeout != nil || queues[queue].isGroup {
      // Armed when its body starts; `enqueue` arms the deadline from it (a group's child: the
      // earlier of its own and its group's).
      modifyTime(of: index) { $0.traits = traits }
      enqueue(handle, into: queue, now: now, &effects)
    } else {
      enqueue(handle, into: queue, now: now, &effects)
      if traits.hasDeadline { armDeadline(of: index, on: queue, traits, now: now) }
    }
    settle(now: now, &effects)
  }
}

/// Bounded capacity: backpressure for the code that feeds a queue.
extension ActorQueue {
  /// The most unfinished operations (``operationCount``) this queue takes from submitters that
  /// ask for space; `nil`, the default: no bound.
  ///
  /// While the queue holds this many, ``addOperationWaitingForCapacity(name:priority:traits:_:)->QueueOperation<Success>``
  /// suspends its caller and ``tryAddOperation(name:priority:traits:_:)->QueueOperation<Success>?``
  /// returns `nil`. Every unfinished operation counts: waiting, executing, paused, in a retry's
  /// backoff. The synchronous `addOperation`s (and barriers, groups, prepared operations) always
  /// accept, and what they add counts too, so a queue may hold more than its capacity.
  ///
  /// Raising it, or setting `nil`, adds waiting submitters' operations at once, first come first
  /// served; lowering it below the count ends nothing: submitters wait until enough operations
  /// end. Values below 1 are refused (precondition): to stop a queue from starting operations,
  /// set ``isSuspended``. Cost: O(1), plus the submitters it serves. Foundation has no bound; the
  /// usual stand-in, a semaphore waited on before `addOperation`, blocks a thread per waiting
  /// producer.
  public nonisolated var capacity: Int? {
    get { Engine.read { $0.queueCapacity(of: index) } }
    set {
      let capacity = Self.validatedCapacity(newValue)
      Engine.run { $0.setCapacity(capacity, of: index, now: Engine.now, &$1) }
    }
  }

  /// Adds an operation that runs `body` once this queue has space (see ``capacity``), suspending
  /// the caller until then, and returns its handle: otherwise the same as
  /// ``addOperation(name:priority:traits:_:)->QueueOperation<Success>``.
  ///
  /// ```swift
  /// for url in urls {
  ///   try await queue.addOperationWaitingForCapacity { try await download(url) }
  /// }
  /// ```
  ///
  /// Waiting submitters are served first come, first served, each in the same hold of the
  /// scheduler's lock as the end (or the raised capacity) that made its space, so no other
  /// submitter takes it first. A waiting submitter holds nothing: its operation is in no queue,
  /// has no slot and no task, and ``waitReport()`` lists it with ``OperationWaitReport/Reason/capacity``.
  /// Its operation's deadline `in:` a duration counts from when it is added.
  ///
  /// - Throws: `CancellationError` if the calling task is cancelled before the operation is added
  ///   (already cancelled when it calls, too): nothing is added, and the next waiting submitter
  ///   is served. Once added, the operation is returned even if the task is cancelled after.
  ///
  /// Cost, with space free: what `addOperation` costs, plus a read of the task's cancellation
  /// flag. Waiting: one continuation and a cancellation handler.
  @discardableResult
  public nonisolated func addOperationWaitingForCapacity<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait] = [],
    _ body: @escaping @Sendable () async throws -> Success
  ) async throws(CancellationError) -> QueueOperation<Success> {
    try await submitWaitingForCapacity(
      name: name, priority: priority, traits: traits, .typed(body), as: QueueOperation<Success>.self)
  }

  /// ``addOperationWaitingForCapacity(name:priority:traits:_:)->QueueOperation<Success>`` for a
  /// body that returns nothing and cannot throw, kept as it is given (no wrapper, no boxed
  /// result), as ``addOperation(name:priority:_:)->QueueOperation<Void>`` keeps it.
  @discardableResult
  public nonisolated func addOperationWaitingForCapacity(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait] = [],
    _ body: @escaping @Sendable () async -> Void
  ) async throws(CancellationError) -> QueueOperation<Void> {
    try await submitWaitingForCapacity(
      name: name, priority: priority, traits: traits, .void(body), as: QueueOperation<Void>.self)
  }

  /// Adds an operation that runs `body` if this queue has space (see ``capacity``), and returns
  /// its handle; returns `nil`, adding nothing, when the queue is full or submitters wait for
  /// space before it. Otherwise the same as ``addOperation(name:priority:traits:_:)->QueueOperation<Success>``.
  ///
  /// ```swift
  /// guard let refresh = queue.tryAddOperation(body: { try await refreshFeed() }) else {
  ///   return  // busy: drop this refresh, the next timer tick asks again
  /// }
  /// ```
  ///
  /// Cost: what `addOperation` costs; when full, one hold of the scheduler's lock and nothing
  /// created (with traits: the operation is created, then dropped).
  @discardableResult
  public nonisolated func tryAddOperation<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait] = [],
    _ body: @escaping @Sendable () async throws -> Success
  ) -> QueueOperation<Success>? {
    trySubmit(name: name, priority: priority, traits: traits, .typed(body), as: QueueOperation<Success>.self)
  }

  /// ``tryAddOperation(name:priority:traits:_:)->QueueOperation<Success>?`` for a body that
  /// returns nothing and cannot throw, kept as it is given.
  @discardableResult
  public nonisolated func tryAddOperation(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait] = [],
    _ body: @escaping @Sendable () async -> Void
  ) -> QueueOperation<Void>? {
    trySubmit(name: name, priority: priority, traits: traits, .void(body), as: QueueOperation<Void>.self)
  }

  /// A capacity as stored (`Int.max`: none); values below 1 are misuse, refused in every build
  /// configuration with a message that says what to do.
  static func validatedCapacity(_ capacity: Int?) -> Int {
    guard let capacity else { return .max }
    if capacity < 1 {
      fatalError(
        "ActorQueue: capacity must be at least 1 (or nil for no bound); got \(capacity). "
          + "To stop a queue from starting operations, set isSuspended = true instead.")
    }
    return capacity
  }

  private nonisolated func submitWaitingForCapacity<Success: Sendable>(
    name: String?, priority: OperationPriority, traits: [OperationTrait], _ work: OperationWork,
    as type: QueueOperation<Success>.Type
  ) async throws(CancellationError) -> QueueOperation<Success> {
    if Task.isCancelled { throw CancellationError() }
    let index = index
    let operation: QueueOperation<Success>
    if traits.isEmpty {
      // Created and added (or lined up) in one hold of the lock, as `addOperation` does.
      var effects = SchedulerEffects()
      let (created, submission) = Engine.scheduler.withLock { scheduler in
        let operation = scheduler.newOperation(name: name, priority: priority, work: work, as: type)
        return (operation, scheduler.submitOrLineUp(operation, to: index, now: Engine.now, &effects))
      }
      operation = created
      switch submission {
      case .added(let spawn?): Engine.start(spawn)
      case .added(nil), .lined: effects.perform()
      }
      if case .added = submission { return operation }
    } else {
      // Prepared with its traits (its conditions asked outside the lock), then added or lined up.
      operation = QueueOperation<Success>(name: name, priority: priority, work: work)
      operation.setTraits(traits)
      let submission = Engine.run { $0.submitOrLineUp(operation, to: index, now: Engine.now, &$1) }
      if case .added(let spawn) = submission {
        // An idle queue's start: its worker, claimed for the operation, starts here.
        if let spawn { Engine.start(spawn) }
        return operation
      }
    }
    let record = operation.recordIndex
    let added = await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        Engine.run { $0.waitForSpace(continuation, of: record, in: index, &$1) }
      }
    } onCancel: {
      Engine.run { $0.stopWaitingForSpace(of: record, in: index, &$1) }
    }
    guard added else { throw CancellationError() }
    return operation
  }

  private nonisolated func trySubmit<Success: Sendable>(
    name: String?, priority: OperationPriority, traits: [OperationTrait], _ work: OperationWork,
    as type: QueueOperation<Success>.Type
  ) -> QueueOperation<Success>? {
    let index = index
    guard traits.isEmpty else {
      let operation = QueueOperation<Success>(name: name, priority: priority, work: work)
      operation.setTraits(traits)
      let added = Engine.run { scheduler, effects in
        guard scheduler.hasSpace(in: index) else { return false }
        scheduler.submit(operation, to: index, now: Engine.now, &effects)
        return true
      }
      return added ? operation : nil
    }
    var effects = SchedulerEffects()
    let added: (QueueOperation<Success>, Spawn?)? = Engine.scheduler.withLock { scheduler in
      guard scheduler.hasSpace(in: index) else { return nil }
      let operation = scheduler.newOperation(name: name, priority: priority, work: work, as: type)
      return (operation, scheduler.submitNew(operation, to: index, now: Engine.now, &effects))
    }
    guard let (operation, spawn) = added else { return nil }
    if let spawn { Engine.start(spawn) } else { effects.perform() }
    return operation
  }
}

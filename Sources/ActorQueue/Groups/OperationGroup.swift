/// An operation group as its children see it: the queue they run in, and the group's identity.
///
/// ``ActorQueue/addOperationGroup(name:priority:traits:maxConcurrentOperationCount:onChildFailure:_:)``
/// passes one to its build closure; a child reaches its own with ``current`` (ProcedureKit's
/// children could not reach their group: its issue 736).
///
/// ```swift
/// let sync = queue.addOperationGroup(name: "sync", maxConcurrentOperationCount: 3) { group in
///   for album in albums {
///     group.queue.addOperation(name: album.name) { try await download(album) }
///   }
///   return albums.count
/// }
/// let count = try await sync.value  // after every download has ended
/// ```
public struct OperationGroup: Sendable {
  /// The queue the group's children run in: add children here, from the build closure or from a
  /// running child. Its limit is the group's, and its operations hold none of the parent queue's
  /// slots. Once the group ended it refuses children (``ActorQueueError/groupEnded``).
  public let queue: ActorQueue

  /// The group operation's identifier, as in ``AnyQueueOperation/id`` and ``QueueEvent``s.
  public var id: OperationID { identity.id }

  /// The group operation's name, if it has one.
  public var name: String? { queue.name }

  private var identity: GroupIdentity { queue.groupIdentity! }

  init(queue: ActorQueue) {
    precondition(
      queue.groupIdentity != nil, "Internal inconsistency: a group made of a queue that is not a group's")
    self.queue = queue
  }

  /// Cancels the group operation, as its handle's ``AnyQueueOperation/cancel()`` does: its
  /// waiting children end `.cancelled` at once, its executing ones have their tasks cancelled,
  /// and the group ends `.cancelled` once the last of them has ended. A child may call it.
  public func cancel() {
    let identity = identity
    Engine.run { $0.cancelGroup(identity.operation, id: identity.id, now: Engine.now, &$1) }
  }

  /// The group of the child whose body runs on the calling task, or `nil` outside a group's
  /// child: the group of ``ActorQueue/current``, with the same reach (the body's own task only).
  public static var current: OperationGroup? {
    guard let queue = ActorQueue.current, queue.groupIdentity != nil else { return nil }
    return OperationGroup(queue: queue)
  }
}

/// What a group queue's `ActorQueue` keeps of its group.
struct GroupIdentity: Sendable {
  /// The group operation's record and identifier.
  let operation: Int
  let id: OperationID
  /// The exclusivity domain its children name by default: that of the queue its outermost
  /// group is in.
  let domain: ExclusivityDomain
}

/// What a group does when one of its children fails (ends `.failed`).
///
/// A struct with static members rather than an enum, so that new policies never break a `switch`.
public struct GroupFailurePolicy: Sendable, Hashable, CustomStringConvertible {
  private let code: UInt8

  /// The first failure cancels every other child (waiting ones end at once, executing ones have
  /// their tasks cancelled, later ones end `.cancelled` as they are added); the group ends
  /// `.failed` with a ``GroupFailedError``. The default, as a `TaskGroup` that throws.
  public static let cancelSiblings = GroupFailurePolicy(code: 0)

  /// Every child runs; once all have ended, the group ends `.failed` with a ``GroupFailedError``
  /// listing every failure, if there was one.
  public static let collectAll = GroupFailurePolicy(code: 1)

  /// Failures are left to the children's handles: the group ends with its build closure's value.
  public static let ignore = GroupFailurePolicy(code: 2)

  /// `cancelSiblings`, `collectAll` or `ignore`.
  public var description: String {
    switch code {
    case 0: "cancelSiblings"
    case 1: "collectAll"
    default: "ignore"
    }
  }
}

/// The error of a group whose children failed (``GroupFailurePolicy/cancelSiblings`` and
/// ``GroupFailurePolicy/collectAll``): each child that ended `.failed`, in the order they ended.
///
/// A child cancelled by its group ends `.cancelled`, never `.failed`, even when its body throws
/// an error of its own after the cancellation; so the cancellations the group caused are never
/// listed (ProcedureKit's `GroupProcedure` listed them: its PR 532).
///
/// ```swift
/// do {
///   try await sync.value
/// } catch let error as GroupFailedError {
///   for failure in error.failures { print("\(failure.name ?? "a child") failed: \(failure.error)") }
/// }
/// ```
public struct GroupFailedError: Error, Sendable, CustomStringConvertible {
  /// A child that failed.
  public struct Failure: Sendable {
    /// The child's identifier.
    public let id: OperationID
    /// The child's name, if it has one.
    public let name: String?
    /// The error it failed with (a ``DependencyFailedError`` for a child that never ran because
    /// an input of it failed).
    public let error: any Error
  }

  /// The children that failed, in the order they ended.
  public let failures: [Failure]

  /// The number of failures and each child's name and error.
  public var description: String {
    let list = failures.map { "\($0.name.map { "'\($0)' " } ?? "")(\($0.id)): \($0.error)" }
    return "GroupFailedError: \(failures.count) child\(failures.count == 1 ? "" : "ren") failed: "
      + list.joined(separator: "; ")
  }
}

extension ActorQueue {
  /// Adds an operation group: one operation of this queue, holding one slot, whose `build`
  /// closure adds children to the group's own queue (``OperationGroup/queue``), and which ends
  /// once `build` has returned and every child has ended — children added later by a running
  /// child included. Its value is `build`'s.
  ///
  /// ```swift
  /// let sync = queue.addOperationGroup(name: "sync", maxConcurrentOperationCount: 3) { group in
  ///   for album in albums {
  ///     group.queue.addOperation(name: album.name) { try await download(album) }
  ///   }
  ///   return albums.count
  /// }
  /// ```
  ///
  /// - The children run in the group's queue, at most `maxConcurrentOperationCount` at once,
  ///   holding none of this queue's slots: a group on a serial queue cannot deadlock waiting for
  ///   a slot its children need. `build` runs in the group's body, on this queue's slot.
  /// - A child that fails: see `onChildFailure`. The group ends `.failed` with a
  ///   ``GroupFailedError`` listing the failures (``GroupFailurePolicy/ignore``: with `build`'s
  ///   value). `build` throwing cancels the children, and the group fails with `build`'s error.
  /// - Cancelling the group (its handle's `cancel()`, ``OperationGroup/cancel()``, its queue's
  ///   `cancelAllOperations()`) cancels its children; it ends `.cancelled` after the last of them.
  /// - Its traits are the group's own: a deadline bounds every child too (each child's is the
  ///   earlier of its own and the group's; once it passes, the group fails with the timeout after
  ///   its last child, whatever `build` returned); a key it holds is its children's as well (a child on
  ///   that key runs while the group holds it, and does not exclude its siblings on it); an
  ///   operation outside the group waits for the group's keys as usual.
  /// - A child that waits for its group (`addDependency`, an input) is a cycle: refused with
  ///   ``ActorQueueError/dependencyCycle``. A child added after the group ended is refused with
  ///   ``ActorQueueError/groupEnded``.
  ///
  /// Cost: a queue of its own (an actor and its record) and a few holds of the scheduler's lock
  /// per group; each child costs what an operation of a plain queue costs, less the idle start's
  /// shortcut.
  /// ProcedureKit's `GroupProcedure` and PSOperations' `GroupOperation`; Foundation has none.
  @discardableResult
  public nonisolated func addOperationGroup<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait] = [],
    maxConcurrentOperationCount: Int = defaultMaxConcurrentOperationCount,
    onChildFailure: GroupFailurePolicy = .cancelSiblings,
    _ build: @escaping @Sendable (OperationGroup) async throws -> Success
  ) -> QueueOperation<Success> {
    let limit = Self.validated(maxConcurrentOperationCount)
    let settings = GroupSettings(
      name: name, limit: limit, policy: onChildFailure, taskPriority: taskPriority,
      taskExecutor: taskExecutor,
      clock: clock, domain: exclusivityDomain)
    let operation = QueueOperation<Success>(name: name, priority: priority) {
      try await Self.runGroup(settings, build)
    }
    operation.setTraits(traits)
    let index = index
    Engine.run { scheduler, effects in
      // A time state, where the group's deadline, once armed, is kept for its children.
      scheduler.modifyTime(of: operation.recordIndex) { _ in }
      scheduler.submit(operation, to: index, now: Engine.now, &effects)
    }
    return operation
  }

  /// The body of a group operation: `build`, then a wait for every child, then the outcome.
  private static func runGroup<Success: Sendable>(
    _ settings: GroupSettings, _ build: @Sendable (OperationGroup) async throws -> Success
  ) async throws -> Success {
    let queue = ActorQueue(groupOf: settings)
    let group = OperationGroup(queue: queue)
    return try await withTaskCancellationHandler {
      let built: Result<Success, any Error>
      do { built = .success(try await build(group)) } catch { built = .failure(error) }
      if case .failure = built { queue.cancelChildren() }
      let (failures, cancelled) = await queue.sealWhenChildrenEnded()
      if cancelled || Task.isCancelled { throw CancellationError() }
      let value = try built.get()
      guard settings.policy == .ignore || failures.isEmpty else { throw GroupFailedError(failures: failures) }
      return value
    } onCancel: {
      queue.cancelChildren()
    }
  }

  /// The group cancels its children (and those added later).
  private nonisolated func cancelChildren() {
    Engine.run { [reference] in $0.cancelGroupChildren(reference, now: Engine.now, &$1) }
  }

  /// Waits until every child has ended, then takes no more; returns the children that failed
  /// and whether the group's task was cancelled by then.
  private nonisolated func sealWhenChildrenEnded() async -> (
    failures: [GroupFailedError.Failure], cancelled: Bool
  ) {
    while true {
      await waitUntilAllOperationsAreFinished()
      if let sealed = Engine.mutate({ [index] in $0.sealGroup(index) }) { return sealed }
    }
  }

  /// The group of this queue, if it is an ``OperationGroup/queue``.
  public nonisolated var group: OperationGroup? {
    groupIdentity == nil ? nil : OperationGroup(queue: self)
  }
}

/// What a group's body needs of its parent queue and its call.
struct GroupSettings: Sendable {
  let name: String?
  let limit: Int
  let policy: GroupFailurePolicy
  let taskPriority: TaskPriority?
  let taskExecutor: (any TaskExecutor)?
  let clock: QueueClock
  let domain: ExclusivityDomain
}

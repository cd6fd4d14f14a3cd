extension ActorQueue {
  /// Adds an operation under `key`, or joins the one already waiting or executing in this queue
  /// under an equal key: "a second request for a URL already loading joins it".
  ///
  /// Every caller gets a handle of its own, usable as a dependency and awaitable like any
  /// operation; the work runs once, and counts once in ``operations``, ``operationCount`` and
  /// ``events`` (there it is one operation, named by the first caller). Each handle mirrors the
  /// work's state and ends with its outcome. Cancelling one handle ends that handle at once
  /// (`.cancelled`); the work itself is cancelled only once every handle that joined it has been
  /// cancelled. It runs at the highest priority any caller still waiting for it asked for.
  /// ``AnyQueueOperation/pause()`` and ``AnyQueueOperation/resume()`` on a handle act on the
  /// shared work (every caller's handle shows it paused). A handle that joined coalesced work
  /// takes no dependencies of its own (``ActorQueueError/joinedSharedWork``).
  ///
  /// A handle waits for the shared work, and so for everything that work waits for: the
  /// barriers of this queue that had not ended when the work was added, and through them what
  /// was unfinished in this queue when each was added. An operation any of those wait for
  /// cannot depend on the handle: ``AnyQueueOperation/addDependency(_:)`` throws
  /// ``ActorQueueError/dependencyCycle``, whose ``ActorQueueError/cycle`` names the shared work
  /// and the barrier on the way:
  ///
  /// ```swift
  /// queue.isSuspended = true
  /// let x = queue.addOperation(name: "x") { 1 }
  /// queue.addBarrierBlock(name: "flush") {}
  /// let h = queue.addOperation(name: "h", coalescingBy: "k") { 2 }
  /// try x.addDependency(h)  // throws: 'x' → 'h' → shared work 'h' → 'flush' → 'x'
  /// ```
  ///
  /// Once the work has ended, the next call with an equal key adds new work (cache results
  /// yourself if you want them kept). Keys are per queue. Joining work of the same key whose
  /// body returns another type is a programming error: it stops with a message that names both
  /// types.
  ///
  /// `key`'s `hash(into:)` and `==` run on the calling thread, outside any lock of the
  /// scheduler's. Cost: one hash of the key, the comparisons with the keys of equal hash, and
  /// about two `addOperation` calls. Foundation has no equivalent: apps keep a dictionary of
  /// in-flight operations by hand and attach completion blocks to them.
  ///
  /// ```swift
  /// let image = loads.addOperation(coalescingBy: url) { try await download(url) }
  /// ```
  @discardableResult
  public nonisolated func addOperation<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal, coalescingBy key: some Hashable & Sendable,
    _ body: @escaping @Sendable () async throws -> Success
  ) -> QueueOperation<Success> {
    addCoalesced(name: name, priority: priority, traits: [], key: key, body)
  }

  /// ``addOperation(name:priority:coalescingBy:_:)`` with traits, which are the caller's: a
  /// deadline ends this caller's handle alone (`.failed` with ``OperationTimeoutError``), and the
  /// shared work goes on for the others, cancelled only once no caller waits for it. An
  /// execution timeout or a condition is refused (precondition, in every build configuration): the work is
  /// shared, so no one caller's limit can stop it; give the handle a deadline instead.
  @discardableResult
  public nonisolated func addOperation<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait],
    coalescingBy key: some Hashable & Sendable, _ body: @escaping @Sendable () async throws -> Success
  ) -> QueueOperation<Success> {
    for trait in traits {
      switch trait.kind {
      case .timeout:
        fatalError(
          "ActorQueue: addOperation(traits: [\(trait)], coalescingBy: \(key)): an execution timeout cannot apply "
            + "to shared work, which other callers may still wait for; give this caller's handle a "
            + ".deadline(in:) instead")
      case .condition:
        fatalError(
          "ActorQueue: addOperation(traits: [\(trait)], coalescingBy: \(key)): a condition cannot apply to "
            + "shared work, which other callers wait for whatever one caller's condition says; check it "
            + "before adding, or inside the body")
      default:
        continue
      }
    }
    return addCoalesced(name: name, priority: priority, traits: traits, key: key, body)
  }

  private nonisolated func addCoalesced<Success: Sendable>(
    name: String?, priority: OperationPriority, traits: [OperationTrait], key: some Hashable & Sendable,
    _ body: @escaping @Sendable () async throws -> Success
  ) -> QueueOperation<Success> {
    let key = CoalescingKey(key)
    let hash = key.hashValue
    let work = OperationWork.typed(body)
    let type = QueueOperation<Success>.self
    let index = index
    while true {
      let bucket = Engine.read { $0.coalescingBucket(hash, in: index) }
      let match = bucket.entries.first { $0.key == key }
      let outcome = Engine.run { scheduler, effects in
        scheduler.submitCoalesced(
          key: key, hash: hash, version: bucket.version, match: match, resultType: Success.self, name: name,
          priority: priority, traits: traits, work: work, to: index,
          makeHandle: { id, record in type.init(id: id, name: name, recordIndex: record) },
          now: Engine.now, &effects)
      }
      switch outcome {
      case .handle(let handle):
        guard let operation = handle as? QueueOperation<Success> else {
          preconditionFailure("Internal inconsistency: a coalesced handle of another type")
        }
        return operation
      case .resultTypeMismatch(let existing):
        fatalError(
          "ActorQueue: addOperation(coalescingBy: \(key.base)) expects \(Success.self), but the work already "
            + "added under this key in queue '\(self.name ?? "unnamed")' returns \(existing). Use a key "
            + "per result type (for instance a struct holding the URL and the kind of result).")
      case .retry:
        continue
      }
    }
  }
}

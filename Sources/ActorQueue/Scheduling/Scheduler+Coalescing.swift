/// Coalescing: callers that add work under a key already waiting or executing in the queue join
/// it instead of adding it again.
///
/// The shared work is one operation of the queue (it counts once in its operations, its count
/// and its events); every caller, the first included, gets a handle of its own, a *follower*
/// (``OperationRecord/leader``), which is in no queue: it mirrors the shared operation's state
/// and ends with its outcome. So cancelling one caller's handle ends that handle at once and
/// cancels the shared work only once every caller has cancelled, and each handle can be a
/// dependency and be awaited like any operation.
///
/// Keys are user values: their `hash(into:)` and `==` run outside the lock. The scheduler keeps
/// the keys by hash value (``CoalescingBucket``); the caller hashes its key, copies the bucket,
/// compares keys in the copy, and submits what it found with the bucket's version; if the bucket
/// changed meanwhile, it looks again.
extension Scheduler {
  /// What adding coalesced work did.
  enum CoalescingOutcome: Sendable {
    /// The caller's handle, which joined work already in the queue or new work added for it.
    case handle(Handle)
    /// The key's work in this queue returns another type: the caller's misuse.
    case resultTypeMismatch(existing: Any.Type)
    /// The bucket changed since the caller looked: look again.
    case retry
  }

  /// A copy of the bucket of `hash` in `queue` (empty, version 0, if there is none).
  func coalescingBucket(_ hash: Int, in queue: Int) -> CoalescingBucket {
    queues[queue].coalesced[hash] ?? CoalescingBucket()
  }

  /// Joins the work `match` (an entry of the bucket of `hash`, found by the caller in the copy
  /// it took at `version`), or, with no match, adds `work` under `key` as new shared work.
  /// Returns the caller's handle, made by `makeHandle` from its record's identifier and index.
  mutating func submitCoalesced(
    key: CoalescingKey, hash: Int, version: UInt64, match: CoalescingBucket.Entry?, resultType: Any.Type,
    name: String?, priority: OperationPriority, traits: [OperationTrait] = [], work: OperationWork,
    to queue: Int, makeHandle: (OperationID, Int) -> Handle, now: () -> SchedulerInstant,
    _ effects: inout Effects
  ) -> CoalescingOutcome {
    guard (queues[queue].coalesced[hash]?.version ?? 0) == version else { return .retry }
    let leader: Int
    if let match {
      // The bucket is as the caller saw it, so the work is still waiting or executing.
      guard operations[match.leader].extras?.coalescing?.resultType == ObjectIdentifier(resultType) else {
        return .resultTypeMismatch(
          existing: operations[match.leader].extras?.coalescingResultType ?? Any.self)
      }
      leader = match.leader
    } else {
      let id = OperationID()
      let index = createOperation(id: id, name: name, priority: priority, work: work)
      let shared = makeHandle(id, index)
      var extras = OperationExtras()
      extras.coalescing = (hash, ObjectIdentifier(resultType))
      extras.coalescingResultType = resultType
      operations[index].extras = extras
      queues[queue].coalesced[hash, default: CoalescingBucket()].entries.append(
        CoalescingBucket.Entry(key: key, leader: index, leaderID: id))
      queues[queue].coalesced[hash]!.version = nextCoalescingVersion()
      // The shared work retries as the call that creates it asks; later callers' policies do not apply.
      if !traits.isEmpty {
        let folded = TimeTraits(traits)
        if let policy = folded.retry { beginRetries(of: index, policy) }
        // So do its keys.
        if !folded.exclusive.isEmpty { beginExclusive(index, folded.exclusive, on: queue) }
        // Its tags are shown, not listed: a tag reaches the callers' handles.
        setTags(folded.tags, of: index, isListed: false)
      }
      enqueue(shared, into: queue, now: now, &effects)
      leader = index
    }
    let id = OperationID()
    let follower = createOperation(id: id, name: name, priority: priority, work: .follower)
    let handle = makeHandle(id, follower)
    var extras = OperationExtras()
    extras.leader = leader
    operations[follower].extras = extras
    operations[follower].wasEnqueued = true
    transition(follower, to: .following(shown: operations[leader].phase.state), &effects)
    if !traits.isEmpty {
      // A caller's deadline is its handle's: it ends that handle alone.
      setTraits(traits, of: follower)
      armDeadline(of: follower, on: queue, now: now)
      if operations[follower].isTagged { listTags(of: follower) }
    }
    operations[leader].extras!.followers.append(
      DependentEntry(index: follower, id: id, requiresSuccess: false))
    operations[leader].extras!.followerHandles.append(handle)
    raiseLeaderPriority(leader)
    settle(now: now, &effects)
    return .handle(handle)
  }

  /// Versions are unique in the process, so a bucket removed and made again never repeats one.
  private mutating func nextCoalescingVersion() -> UInt64 {
    nextSubmission += 1
    return nextSubmission
  }

  /// The shared work `leader` ended: its key leaves its bucket (the key itself is released after
  /// unlocking).
  @inline(never)  // rare: kept out of the hot paths that test for it
  mutating func releaseCoalescingKey(of leader: Int, hash: Int, in queue: Int, _ effects: inout Effects) {
    guard var bucket = queues[queue].coalesced[hash],
      let position = bucket.entries.firstIndex(where: {
        $0.leader == leader && $0.leaderID == operations[leader].id
      })
    else { preconditionFailure("Internal inconsistency: coalesced work left no key behind") }
    queues[queue].coalesced[hash] = nil
    effects.garbage.releaseLater(bucket.entries.remove(at: position).key)
    if !bucket.entries.isEmpty {
      bucket.version = nextCoalescingVersion()
      queues[queue].coalesced[hash] = bucket
    }
  }

  /// The shared work runs at the highest priority any caller still waiting for it asked for.
  mutating func raiseLeaderPriority(_ leader: Int) {
    var highest: OperationPriority?
    for entry in operations[leader].extras?.followers ?? [] where isUnfinished(entry) {
      let priority = operations[entry.index].priority
      if highest == nil || priority > highest! { highest = priority }
    }
    if let highest { setPriority(highest, of: leader) }
  }

  /// Cancels a caller's handle: it ends `.cancelled` at once; the shared work is cancelled once
  /// no caller waits for it any more.
  mutating func cancelFollower(_ index: Int, _ effects: inout Effects) {
    operations[index].cancelRequested = true
    endFollower(index, as: .cancelled, error: cancellationError, &effects)
  }

  /// Ends a caller's handle to coalesced work alone (cancelled, or its deadline passed); the
  /// work goes on for the others, and is cancelled when no caller waits for it any more.
  mutating func endFollower(
    _ index: Int, as terminal: OperationState, error: any Error, _ effects: inout Effects
  ) {
    let leader = operations[index].leader
    keepAttempts(ofFollower: index, leader: leader)
    terminate(index, as: terminal, error: error, &effects)
    if let position = operations[leader].extras!.followerHandles.firstIndex(where: { $0.recordIndex == index }
    ) {
      effects.garbage.releaseLater(handle: operations[leader].extras!.followerHandles.remove(at: position))
    }
    if operations[leader].extras!.followers.contains(where: isUnfinished) {
      raiseLeaderPriority(leader)
    } else {
      cancelOne(leader, &effects)
    }
  }

  /// The shared work `leader` moved to `state`: so do the handles of the callers that wait for it.
  @inline(never)  // rare: kept out of the hot paths that test for it
  mutating func mirrorToFollowers(_ leader: Int, _ state: OperationState, _ effects: inout Effects) {
    for entry in operations[leader].extras!.followers where isUnfinished(entry) {
      transition(entry.index, to: .following(shown: state), &effects)
    }
  }

  /// The shared work `leader` ended: every caller's handle still waiting ends with its outcome
  /// (appended to the work list of ``terminate(_:as:error:_:)``).
  @inline(never)  // rare: kept out of the hot paths that test for it
  mutating func endFollowers(
    of leader: Int, as terminal: OperationState, into work: inout [PendingEnd], _ effects: inout Effects
  ) {
    let followers = operations[leader].extras!.followers
    operations[leader].extras!.followers = []
    // Each handle the work kept goes with its end (through the work list, maybe in a later
    // slice): released after it has ended, so that a handle its caller dropped still ends.
    var kept: [Int: Handle] = [:]
    for handle in operations[leader].extras!.followerHandles { kept[handle.recordIndex] = handle }
    operations[leader].extras!.followerHandles = []
    for entry in followers where isUnfinished(entry) {
      operations[entry.index].outcome = operations[leader].outcome
      operations[entry.index].thrownError = operations[leader].thrownError
      if terminal == .cancelled { operations[entry.index].cancelRequested = true }
      keepAttempts(ofFollower: entry.index, leader: leader)
      work.append(
        PendingEnd(
          index: entry.index, id: entry.id, terminal: terminal, error: nil,
          keeps: kept.removeValue(forKey: entry.index)
        ))
    }
    for handle in kept.values { effects.garbage.releaseLater(handle: handle) }
  }
}

/// A coalescing key, type-erased: made only from `Hashable & Sendable` values, so it is
/// `Sendable` as checked (an `AnyHashable` is not, as it may hold any value). Its `==` and
/// `hash(into:)` are the key's own, and run only outside the scheduler's lock.
struct CoalescingKey: Hashable, Sendable {
  let base: any Hashable & Sendable

  init(_ key: some Hashable & Sendable) {
    base = key
  }

  static func == (lhs: CoalescingKey, rhs: CoalescingKey) -> Bool {
    AnyHashable(lhs.base) == AnyHashable(rhs.base)
  }

  func hash(into hasher: inout Hasher) {
    AnyHashable(base).hash(into: &hasher)
  }
}

/// The coalesced work of one queue whose keys have one hash value.
///
/// Keys are compared outside the lock (their `==` is user code): a caller copies the bucket,
/// finds its key in the copy, and submits what it found with the bucket's version; a bucket
/// changed meanwhile makes it look again.
struct CoalescingBucket: Sendable {
  struct Entry: Sendable {
    let key: CoalescingKey
    let leader: Int
    let leaderID: OperationID
  }

  /// Changes whenever an entry is added or removed.
  var version: UInt64 = 0
  var entries: [Entry] = []
}

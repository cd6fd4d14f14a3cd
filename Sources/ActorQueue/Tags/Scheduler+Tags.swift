/// An operation's tags.
struct OperationTags: Sendable {
  /// Interned numbers, without repeats.
  var tags: [UInt64]
  /// Coalesced work shows its first caller's tags but is never listed: a tag reaches the
  /// callers' handles, and the work is cancelled once no caller waits for it.
  var isListed = true
  /// It was listed (added to a queue, or joined coalesced work): its end leaves the lists.
  var isInLists = false
}

/// The unfinished operations listed under one tag, in creation order: what a call reaches
/// without sorting, and walks in slices from where it stopped.
struct TagMembers: Sendable {
  struct Entry: Sendable {
    let id: OperationID
    let index: Int
    /// When it was listed (`Scheduler.nextTagListing`): a call leaves out what was listed after
    /// it began.
    let listing: UInt64
  }

  /// Every listing, by identifier (creation order). An entry whose operation has ended (or whose
  /// record was freed, or reused by another) is dead; the dead are dropped once they are most.
  var order: [Entry] = []
  var dead = 0

  /// No entry is live: the tag lists nothing.
  var isEmpty: Bool { dead == order.count }

  /// Whether `entry`'s operation is still listed: it has not ended (an operation leaves the lists
  /// when it ends, and only then).
  static func isLive(_ entry: Entry, in operations: [OperationRecord]) -> Bool {
    operations[entry.index].isLive && operations[entry.index].id == entry.id
      && !operations[entry.index].phase.hasEnded
  }

  /// The position of the first entry after `id` (all of them: `nil`). O(log k).
  func position(after id: OperationID?) -> Int {
    guard let id else { return 0 }
    var low = 0
    var high = order.count
    while low < high {
      let middle = (low + high) / 2
      if order[middle].id <= id { low = middle + 1 } else { high = middle }
    }
    return low
  }

  mutating func insert(_ entry: Entry) {
    if let last = order.last, last.id > entry.id {
      // A prepared operation added after newer ones: in its place (rare).
      order.insert(entry, at: position(after: OperationID(rawValue: entry.id.rawValue - 1)))
    } else {
      order.append(entry)
    }
  }

  /// An operation listed here ended: one more dead entry; the dead are dropped once they are most
  /// of the entries (O(1) amortized per end).
  mutating func noteEnded(in operations: [OperationRecord]) {
    dead += 1
    guard dead * 2 > order.count, order.count > 32, !isEmpty else { return }
    order.removeAll { !TagMembers.isLive($0, in: operations) }
    dead = 0
  }
}

/// The tail of a cancel-by-tag call: where it is in its tag's members (the last identifier it
/// reached), which queue it cancels in (every queue: `nil`), and the listings it leaves out (those
/// made after it began). Cancelled in slices (see `BulkWork`).
struct TagCancel: Sendable {
  let tag: UInt64
  let queue: Int?
  let listedBefore: UInt64
  var after: OperationID?
}

/// Tags: labels on operations, indexed so that a call reaches the operations it names at a cost
/// in proportion to them, not to their queues.
extension Scheduler {
  /// Gives `index` (not yet in a queue, or a caller's handle to coalesced work) its tags;
  /// `isListed: false` for coalesced work.
  mutating func setTags(_ tags: [UInt64], of index: Int, isListed: Bool = true) {
    guard !tags.isEmpty else { return }
    operations[index].isTagged = true
    operationTags[index] = OperationTags(tags: tags, isListed: isListed)
  }

  /// Lists tagged `index` under each of its tags: it was added to a queue (a caller's handle to
  /// coalesced work: it joined the work), once.
  @inline(never)  // rare: kept out of the submission's line
  mutating func listTags(of index: Int) {
    guard let entry = operationTags[index], entry.isListed, !entry.isInLists else { return }
    operationTags[index]!.isInLists = true
    nextTagListing += 1
    let member = TagMembers.Entry(id: operations[index].id, index: index, listing: nextTagListing)
    for tag in entry.tags { taggedOperations[tag, default: TagMembers()].insert(member) }
  }

  /// `index` ended: it leaves the lists (its tags stay readable until its record is freed). One
  /// that was never listed (ended before it was added) is in none.
  @inline(never)  // rare: kept out of the end's line
  mutating func unlistTags(of index: Int) {
    guard let entry = operationTags[index], entry.isInLists else { return }
    for tag in entry.tags {
      guard let position = taggedOperations.index(forKey: tag) else { continue }
      taggedOperations.values[position].noteEnded(in: operations)
      if taggedOperations.values[position].isEmpty { taggedOperations.remove(at: position) }
    }
  }

  /// `index`'s record is being freed: its tags go (it ended, or was never added to a queue).
  @inline(never)  // rare: kept out of the free's line
  mutating func forgetTags(of index: Int) {
    operationTags.removeValue(forKey: index)
    operations[index].isTagged = false
  }

  /// The tags of `index` (none when it has none).
  func tags(of index: Int) -> [UInt64] {
    operations[index].isTagged ? operationTags[index]?.tags ?? [] : []
  }

  /// The unfinished operations tagged `tag` in `queue` (every queue: `nil`; a caller's handle to
  /// coalesced work counts in its work's queue), with their identifiers, in creation order.
  /// O(k) in the k operations listed with the tag, on every queue.
  func tagged(_ tag: UInt64, in queue: Int?) -> [(index: Int, id: OperationID)] {
    guard let members = taggedOperations[tag] else { return [] }
    var found: [(index: Int, id: OperationID)] = []
    found.reserveCapacity(members.order.count - members.dead)
    for entry in members.order where TagMembers.isLive(entry, in: operations) {
      if let queue, self.queue(ofTagged: entry.index) != queue { continue }
      found.append((entry.index, entry.id))
    }
    return found
  }

  /// The queue a tagged operation counts in: its own, or its coalesced work's.
  private func queue(ofTagged index: Int) -> Int {
    let leader = operations[index].leader
    return leader >= 0 ? operations[leader].queue : operations[index].queue
  }

  /// The handles of ``tagged(_:in:)`` (a caller's handle to coalesced work: the one its work
  /// keeps; a record whose queue let go of its handle has none to list).
  func taggedHandles(_ tag: UInt64, in queue: Int) -> [Handle] {
    tagged(tag, in: queue).compactMap { index, _ in
      if let handle = operations[index].enqueuedHandle { return handle }
      let leader = operations[index].leader
      guard leader >= 0 else { return nil }
      return operations[leader].extras?.followerHandles.first { $0.recordIndex == index }
    }
  }

  /// `cancelOperations(tagged:)`: cancels each unfinished operation tagged `tag` in `queue`
  /// (every queue: `nil`), in creation order, as `cancel()` would, in slices of the lock (see
  /// `BulkWork`): each slice walks at most the slice's limit of the tag's listings (on every
  /// queue), from where the last stopped. Operations added meanwhile are not part of the call.
  mutating func cancelTagged(
    _ tag: UInt64, in queue: Int?, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    guard taggedOperations[tag] != nil else { return }
    bulk.tagCancels.append(TagCancel(tag: tag, queue: queue, listedBefore: nextTagListing + 1))
    markBulk()
    drainBulk(&effects)
    settle(now: now, &effects)
  }

  /// Cancels the next operations of the last cancel-by-tag call left in the bulk work, within
  /// the slice's limit (each listing looked at is a unit). Stops early when a cancellation left
  /// releases or ends, which are done first.
  mutating func cancelSomeTagged(_ effects: inout Effects) {
    var work = bulk.tagCancels.removeLast()
    while sliceWork < sliceLimit, bulk.releases.isEmpty, bulk.ends.isEmpty {
      // Found again from the last identifier reached: a cancellation may have dropped dead entries.
      guard let members = taggedOperations[work.tag] else { return }
      let position = members.position(after: work.after)
      guard position < members.order.count else { return }
      let entry = members.order[position]
      work.after = entry.id
      sliceWork += 1
      guard TagMembers.isLive(entry, in: operations), entry.listing < work.listedBefore,
        work.queue.map({ queue(ofTagged: entry.index) == $0 }) ?? true
      else { continue }
      cancelOne(entry.index, &effects)
    }
    bulk.tagCancels.append(work)
  }
}

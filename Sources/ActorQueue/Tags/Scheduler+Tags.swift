/// An operation's tags.
struct OperationTags: Sendable {
  /// Interned numbers, without repeats.
  var tags: [UInt64]
  /// Coalesced work shows its first caller's tags but is never listed: a tag reaches the
  /// callers' handles, and the work is cancelled once no caller waits for it.
  var isListed = true
}

/// The tail of a cancel-by-tag call: the operations it found, in creation order, cancelled in
/// slices (see `BulkWork`).
struct TagCancel: Sendable {
  let targets: [(index: Int, id: OperationID)]
  var next = 0
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
    guard let entry = operationTags[index], entry.isListed else { return }
    for tag in entry.tags { taggedOperations[tag, default: []].insert(index) }
  }

  /// `index` ended: it leaves the lists (its tags stay readable until its record is freed). One
  /// that was never listed is in none, and removing it changes nothing.
  @inline(never)  // rare: kept out of the end's line
  mutating func unlistTags(of index: Int) {
    guard let entry = operationTags[index], entry.isListed else { return }
    for tag in entry.tags {
      guard let position = taggedOperations.index(forKey: tag) else { continue }
      taggedOperations.values[position].remove(index)
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
  /// O(k log k) in the k unfinished operations with the tag, on every queue.
  func tagged(_ tag: UInt64, in queue: Int?) -> [(index: Int, id: OperationID)] {
    guard let members = taggedOperations[tag] else { return [] }
    var found: [(index: Int, id: OperationID)] = []
    found.reserveCapacity(members.count)
    for index in members {
      if let queue {
        let leader = operations[index].extrasBox == nil ? -1 : operations[index].leader
        guard (leader >= 0 ? operations[leader].queue : operations[index].queue) == queue else { continue }
      }
      found.append((index, operations[index].id))
    }
    found.sort { $0.id < $1.id }
    return found
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
  /// `BulkWork`). Operations added meanwhile are not part of the call. O(k log k) in the k found.
  mutating func cancelTagged(
    _ tag: UInt64, in queue: Int?, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    let targets = tagged(tag, in: queue)
    guard !targets.isEmpty else { return }
    bulk.tagCancels.append(TagCancel(targets: targets))
    markBulk()
    drainBulk(&effects)
    settle(now: now, &effects)
  }

  /// Cancels the next operations of the last cancel-by-tag call left in the bulk work, within
  /// the slice's limit. Stops early when a cancellation left releases or ends, which are done
  /// first.
  mutating func cancelSomeTagged(_ effects: inout Effects) {
    var work = bulk.tagCancels.removeLast()
    while work.next < work.targets.count, sliceWork < sliceLimit, bulk.releases.isEmpty, bulk.ends.isEmpty {
      let (index, id) = work.targets[work.next]
      work.next += 1
      sliceWork += 1
      // Ended since and freed, or freed and reused: not part of the call any more.
      guard operations[index].isLive, operations[index].id == id else { continue }
      cancelOne(index, &effects)
    }
    if work.next < work.targets.count { bulk.tagCancels.append(work) }
  }
}

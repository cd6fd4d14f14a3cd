/// The ready operations of one queue: highest priority first, then lowest submission order.
///
/// One lane per priority. Operations usually become ready in submission order, so each lane
/// keeps a FIFO array for entries that arrive in order (O(1) append and pop) and a min-heap for
/// the few that arrive out of order (after a dependency, or a priority change): O(log k) in the
/// number of such entries. Removal (cancellation, re-prioritisation, a new dependency) is O(1):
/// the entry is marked by its stamp and skipped when it surfaces; marks are compacted away when
/// they outnumber the live entries, so memory stays proportional to the live entries.
///
/// A lone entry (the one operation of an idle queue, the commonest case) is kept aside, in
/// `solo`, not in a lane: it goes in and out without the lanes' arrays. It joins its lane when a
/// second entry arrives.
struct ReadyQueue<Element> {
  /// Identifies one insertion; needed to withdraw it.
  typealias Stamp = UInt64

  struct Entry {
    var order: UInt64
    var stamp: Stamp
    var element: Element
  }

  fileprivate struct Lane {
    var fifo: [Entry] = []
    var head = 0
    var heap: [Entry] = []
    var live = 0

    var lastFIFOOrder: UInt64? { head < fifo.count ? fifo[fifo.count - 1].order : nil }

    mutating func insert(_ entry: Entry) {
      if let last = lastFIFOOrder, entry.order < last {
        heap.append(entry)
        siftUp(heap.count - 1)
      } else {
        fifo.append(entry)
      }
      live += 1
    }

    /// The entry with the lowest order, live or marked, left in place.
    var lowest: Entry? {
      let fifoHead: Entry? = head < fifo.count ? fifo[head] : nil
      if let top = heap.first, fifoHead == nil || top.order < fifoHead!.order { return top }
      return fifoHead
    }

    /// Removes and returns the entry with the lowest order, live or marked.
    mutating func popLowest() -> Entry? {
      let fifoHead: Entry? = head < fifo.count ? fifo[head] : nil
      if let top = heap.first, fifoHead == nil || top.order < fifoHead!.order {
        let last = heap.removeLast()
        if !heap.isEmpty {
          heap[0] = last
          siftDown(0)
        }
        return top
      }
      guard let fifoHead else { return nil }
      head += 1
      if head == fifo.count {
        // Often one entry: `removeLast()` costs a few instructions where
        // `removeAll(keepingCapacity:)` runs a general range replacement.
        if head == 1 { fifo.removeLast() } else { fifo.removeAll(keepingCapacity: true) }
        head = 0
      } else if head >= 1024 && head * 2 >= fifo.count {
        fifo.removeFirst(head)
        head = 0
      }
      return fifoHead
    }

    mutating func compact(removing marked: Set<Stamp>) {
      fifo = fifo[head...].filter { !marked.contains($0.stamp) }
      head = 0
      heap = heap.filter { !marked.contains($0.stamp) }
      for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private mutating func siftUp(_ index: Int) {
      var child = index
      while child > 0 {
        let parent = (child - 1) / 2
        guard heap[child].order < heap[parent].order else { return }
        heap.swapAt(child, parent)
        child = parent
      }
    }

    private mutating func siftDown(_ index: Int) {
      var parent = index
      while true {
        let left = 2 * parent + 1
        guard left < heap.count else { return }
        var smallest = left
        if left + 1 < heap.count && heap[left + 1].order < heap[left].order { smallest = left + 1 }
        guard heap[smallest].order < heap[parent].order else { return }
        heap.swapAt(smallest, parent)
        parent = smallest
      }
    }
  }

  /// One lane per priority, made when a second entry arrives: a ready queue that never holds two
  /// (a lock's waiters, mostly) allocates nothing.
  private var lanes: [Lane] = []
  /// The only live entry, and the rank of its lane, while there is exactly one and it arrived
  /// when there was none (every lane then holds no live entry). Counted in `count`, not in a
  /// lane's `live`. An idle queue's start then touches no lane.
  private var solo: (entry: Entry, rank: Int)?
  private var marked: Set<Stamp> = []
  private var nextStamp: Stamp = 0

  /// The number of live entries.
  private(set) var count = 0

  var isEmpty: Bool { count == 0 }

  /// Adds `element`; returns the stamp that withdraws it.
  mutating func insert(_ element: Element, order: UInt64, priority: OperationPriority) -> Stamp {
    nextStamp &+= 1
    let entry = Entry(order: order, stamp: nextStamp, element: element)
    if count == 0 {
      solo = (entry, priority.rank)
    } else {
      if lanes.isEmpty { lanes = [Lane](repeating: Lane(), count: OperationPriority.allCases.count) }
      if let alone = solo.take() { lanes[alone.rank].insert(alone.entry) }
      lanes[priority.rank].insert(entry)
    }
    count += 1
    return nextStamp
  }

  /// Withdraws the entry inserted with `stamp` at `priority`. O(1).
  mutating func remove(stamp: Stamp, priority: OperationPriority) {
    precondition(count > 0, "Internal inconsistency: removing from an empty ready queue")
    if let alone = solo {
      precondition(
        alone.entry.stamp == stamp, "Internal inconsistency: removing an entry the ready queue does not hold")
      solo = nil
      count = 0
      return
    }
    lanes[priority.rank].live -= 1
    count -= 1
    // The lane's next entry (cancelling a queue's operations in submission order meets them so):
    // taken out at once, leaving no mark to skip and compact later.
    if lanes[priority.rank].lowest?.stamp == stamp {
      _ = lanes[priority.rank].popLowest()
      if count == 0 { removeAll() }
      return
    }
    marked.insert(stamp)
    if count == 0 {
      removeAll()
    } else if marked.count > 64 && marked.count > count {
      for rank in lanes.indices { lanes[rank].compact(removing: marked) }
      marked.removeAll()
    }
  }

  /// Removes and returns the highest-priority, lowest-order live element.
  mutating func popFirst() -> Element? {
    guard count > 0 else { return nil }
    if let alone = solo.take() {
      count = 0
      return alone.entry.element
    }
    for rank in lanes.indices.reversed() where lanes[rank].live > 0 {
      while let entry = lanes[rank].popLowest() {
        if !marked.isEmpty, marked.remove(entry.stamp) != nil { continue }
        lanes[rank].live -= 1
        count -= 1
        return entry.element
      }
      preconditionFailure("Internal inconsistency: a lane counted live entries it does not hold")
    }
    preconditionFailure("Internal inconsistency: the ready count is \(count) but every lane is empty")
  }

  /// The highest-priority, lowest-order live element, left in place (withdrawn entries met on
  /// the way are dropped).
  mutating func peekFirst() -> Element? {
    guard count > 0 else { return nil }
    if let alone = solo { return alone.entry.element }
    for rank in lanes.indices.reversed() where lanes[rank].live > 0 {
      while let entry = lanes[rank].lowest {
        if !marked.isEmpty, marked.contains(entry.stamp) {
          _ = lanes[rank].popLowest()
          marked.remove(entry.stamp)
          continue
        }
        return entry.element
      }
      preconditionFailure("Internal inconsistency: a lane counted live entries it does not hold")
    }
    preconditionFailure("Internal inconsistency: the ready count is \(count) but every lane is empty")
  }

  /// Drops every entry.
  mutating func removeAll() {
    solo = nil
    for rank in lanes.indices { lanes[rank] = Lane() }
    marked.removeAll()
    count = 0
  }
}

extension ReadyQueue: Sendable where Element: Sendable {}
extension ReadyQueue.Entry: Sendable where Element: Sendable {}
extension ReadyQueue.Lane: Sendable where Element: Sendable {}

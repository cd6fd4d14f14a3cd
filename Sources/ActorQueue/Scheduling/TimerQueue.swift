/// Something that happens to an operation at an instant of its clock.
struct TimerEntry: Sendable {
  enum Action: UInt8, Sendable {
    /// The operation's deadline passed.
    case deadline
    /// Its body ran past its execution timeout.
    case executionTimeout
    /// A caller's `waitUntilFinished(timeout:)` gives up (``token`` says which).
    case waitTimeout
  }

  /// The instant, in nanoseconds of the entry's clock.
  var at: Int64
  /// Arming order: entries due at the same instant fire in the order they were armed.
  var sequence: UInt64 = 0
  /// The operation's identifier (`OperationID.rawValue`), or for ``Action/waitTimeout`` the
  /// waiter's token (unique in the process, so it identifies the operation's record too).
  var key: UInt64
  /// The operation's record (an `Int32`, so that an entry is 32 bytes: a heap moves them).
  var index: Int32
  var action: Action

  init(at: Int64, index: Int, id: OperationID, action: Action) {
    self.at = at
    self.key = id.rawValue
    self.index = Int32(truncatingIfNeeded: index)
    self.action = action
  }

  init(at: Int64, index: Int, waiter token: UInt64) {
    self.at = at
    self.key = token
    self.index = Int32(truncatingIfNeeded: index)
    self.action = .waitTimeout
  }

  /// Earlier first; armed first among equal instants.
  func precedes(_ other: TimerEntry) -> Bool {
    at != other.at ? at < other.at : sequence < other.sequence
  }
}

/// The timers of one clock: a binary min-heap of entries, removed lazily.
///
/// An entry that no longer applies (its operation ended, its waiter was resumed) stays in the
/// heap and is skipped when it surfaces, as the ready set skips withdrawn stamps: removing it at
/// once would cost a search. `live` counts the entries that still apply; when stale ones
/// outnumber them, the heap is rebuilt from the live ones (``compact(keeping:)``).
struct TimerHeap: Sendable {
  private(set) var entries: [TimerEntry] = []
  /// Entries that still apply (the owner keeps this count as entries are armed, fire or go
  /// stale).
  var live = 0

  var isEmpty: Bool { entries.isEmpty }
  var count: Int { entries.count }
  /// The earliest entry, live or stale.
  var first: TimerEntry? { entries.first }

  /// O(log n).
  mutating func insert(_ entry: TimerEntry) {
    entries.append(entry)
    var child = entries.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard entries[child].precedes(entries[parent]) else { break }
      entries.swapAt(child, parent)
      child = parent
    }
  }

  /// Removes and returns the earliest entry. O(log n).
  mutating func popFirst() -> TimerEntry? {
    guard !entries.isEmpty else { return nil }
    entries.swapAt(0, entries.count - 1)
    let first = entries.removeLast()
    siftDown(from: 0)
    return first
  }

  /// Whether stale entries outnumber live ones enough to rebuild.
  var needsCompaction: Bool { entries.count > 64 && entries.count > 2 * live }

  /// An empty heap.
  init() {}

  /// A heap of `entries` (in any order), all live. O(n).
  init(rebuilding entries: [TimerEntry]) {
    self.entries = entries
    live = entries.count
    if entries.count > 1 {
      for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }
  }

  private mutating func siftDown(from start: Int) {
    var parent = start
    while true {
      let left = 2 * parent + 1
      guard left < entries.count else { return }
      var best = left
      if left + 1 < entries.count, entries[left + 1].precedes(entries[left]) { best = left + 1 }
      guard entries[best].precedes(entries[parent]) else { return }
      entries.swapAt(parent, best)
      parent = best
    }
  }
}

/// One clock's timers, and a manual clock's current instant.
struct ClockTimers: Sendable {
  /// A manual clock's current instant (nanoseconds since it was made); unused for the system
  /// clock, which is read.
  var now: Int64 = 0
  var heap = TimerHeap()
}

/// What an operation's deadlines and timeouts need, in its record's extras.
struct OperationTime: Sendable {
  /// Traits as given: an absolute deadline (nanoseconds of `requestedClock`), and one relative
  /// to the submission (nanoseconds).
  var requestedDeadline: Int64?
  var requestedClock: UInt64 = 0
  var deadlineAfterSubmission: Int64?
  /// The execution timeout, in nanoseconds.
  var timeout: Int64?
  /// The clock its timers are on: its queue's, from its submission.
  var clock: UInt64 = 0
  /// Armed entries (nanoseconds of `clock`), until they fire or the operation ends.
  var armedDeadline: Int64?
  var armedTimeout: Int64?
  /// Which limit passed while it ran, and whether it had started: its end is `.failed` with an
  /// ``OperationTimeoutError`` of that kind, whatever its body throws (a value still finishes
  /// it). The error is made when read, so that this state holds no string to copy.
  var timedOut: (kind: OperationTimeoutError.Kind, started: Bool)?
  /// Callers in `waitUntilFinished(timeout:)`.
  var timedWaiters: [TimedWaiter] = []

  /// Folds traits: the earliest deadline and the shortest timeout win. Two absolute deadlines
  /// of different clocks are refused (`QueueDeadline`'s `<` says so).
  mutating func add(_ traits: [OperationTrait]) {
    for trait in traits {
      switch trait.kind {
      case .deadline(let deadline):
        if let current = requestedDeadline {
          let earliest = min(
            QueueDeadline(clock: QueueClock(id: requestedClock), nanoseconds: current), deadline)
          requestedDeadline = earliest.nanoseconds
        } else {
          requestedDeadline = deadline.nanoseconds
          requestedClock = deadline.clock.id
        }
      case .deadlineIn(_, let nanoseconds):
        deadlineAfterSubmission = min(deadlineAfterSubmission ?? nanoseconds, nanoseconds)
      case .timeout(_, let nanoseconds):
        timeout = min(timeout ?? nanoseconds, nanoseconds)
      }
    }
  }

  /// Whether it has a deadline or timeout to arm (a waiter needs no more than its own entry).
  var hasTraits: Bool { requestedDeadline != nil || deadlineAfterSubmission != nil || timeout != nil }
}

/// A caller in `waitUntilFinished(timeout:)`.
struct TimedWaiter: Sendable {
  let token: UInt64
  /// The clock its entry is on.
  let clock: UInt64
  let continuation: CheckedContinuation<Bool, Never>
}

/// What the process's one timer task should do, decided under the lock (see `TimerTask`).
enum TimerCommand: Sendable {
  /// Sleep until `at` (nanoseconds of `SchedulerInstant`), replacing any earlier command's task.
  case arm(at: Int64, generation: UInt64)
  /// No timer is armed: end the task.
  case disarm(generation: UInt64)
}

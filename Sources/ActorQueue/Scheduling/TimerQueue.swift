/// Something that happens to an operation at an instant of its clock. 24 bytes: the timers
/// move entries, and a waiting operation with a deadline keeps one.
struct TimerEntry: Sendable {
  enum Action: UInt8, Sendable {
    /// The operation's deadline passed.
    case deadline
    /// Its body ran past its execution timeout.
    case executionTimeout
    /// A caller's `waitUntilFinished(timeout:)` gives up (``key`` says which).
    case waitTimeout
    /// A retried operation's backoff ended: it competes for a slot again.
    case retry
    /// The permits that a queue's head waits for conform (``key`` is ``permitKey(_:)`` of the
    /// queue, ``index`` the queue's record).
    case permits
  }

  /// The instant, in nanoseconds of the entry's clock.
  var at: Int64
  /// The operation's identifier (`OperationID.rawValue`), or for ``Action/waitTimeout`` the
  /// waiter's token (unique in the process, so it identifies the operation's record too).
  var key: UInt64
  /// The operation's record.
  var index: Int32
  var action: Action

  init(at: Int64, index: Int, id: OperationID, action: Action) {
    self.at = at
    self.key = id.rawValue
    self.index = Int32(truncatingIfNeeded: index)
    self.action = action
  }

  /// A queue's permit timer (`Scheduler+RateLimits.swift`).
  init(at: Int64, queue: Int, generation: UInt64) {
    self.at = at
    self.key = Self.permitKey(generation)
    self.index = Int32(truncatingIfNeeded: queue)
    self.action = .permits
  }

  /// The key of the permit timer of the queue of `generation`: after every operation's key, so
  /// that at one instant deadlines, timeouts and backoffs act before permits are granted.
  static func permitKey(_ generation: UInt64) -> UInt64 { 1 << 63 | generation }

  init(at: Int64, index: Int, waiter token: UInt64) {
    self.at = at
    self.key = token
    self.index = Int32(truncatingIfNeeded: index)
    self.action = .waitTimeout
  }

  /// Earlier first; among equal instants, by key (operations in the order they were made),
  /// then action (a deadline before a timeout): the same order on every run.
  func precedes(_ other: TimerEntry) -> Bool {
    if at != other.at { return at < other.at }
    if key != other.key { return key < other.key }
    return action.rawValue < other.action.rawValue
  }
}

/// The timers of one clock, removed lazily: entries armed in order in a run, the rest in a heap.
///
/// Most timers arrive in order: a deadline `in:` a fixed duration from each submission, a
/// timeout from each start. Those go to ``run``, where adding and taking the earliest are
/// O(1), and where the operations that end in the order they were added drop their own entries
/// from its front (``dropFrontOfRun()``); an entry earlier than the run's last goes to a binary
/// min-heap, O(log n). An entry that no longer applies (its operation ended, its waiter was
/// resumed) and is not at the run's front stays, and is skipped when it surfaces, as the ready
/// set skips withdrawn stamps. `live` counts the entries that still apply; when stale ones
/// outnumber them, both parts are rebuilt from the live ones (``init(rebuilding:)``).
struct TimerQueue: Sendable {
  /// In order from `runStart` (the entries before it were taken).
  private var run: [TimerEntry] = []
  private var runStart = 0
  private var heap: [TimerEntry] = []
  /// Entries that still apply (the owner keeps this count as entries are armed, fire or go
  /// stale).
  var live = 0

  var isEmpty: Bool { runStart == run.count && heap.isEmpty }
  var count: Int { run.count - runStart + heap.count }
  /// The run's entries, in order, live or stale.
  var runEntries: ArraySlice<TimerEntry> { run[runStart...] }
  /// The heap's entries, live or stale, in no particular order.
  var heapEntries: [TimerEntry] { heap }
  /// The run's earliest entry, live or stale.
  var frontOfRun: TimerEntry? { runStart < run.count ? run[runStart] : nil }

  /// The earliest entry, live or stale.
  var first: TimerEntry? {
    guard let top = heap.first else { return frontOfRun }
    guard let front = frontOfRun else { return top }
    return top.precedes(front) ? top : front
  }

  /// O(1) for an entry no earlier than the run's last; O(log n) otherwise.
  mutating func insert(_ entry: TimerEntry) {
    if runStart == run.count || !entry.precedes(run[run.count - 1]) {
      run.append(entry)
      return
    }
    heap.append(entry)
    var child = heap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].precedes(heap[parent]) else { break }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  /// Removes and returns the earliest entry.
  mutating func popFirst() -> TimerEntry? {
    if let top = heap.first, frontOfRun.map({ top.precedes($0) }) ?? true {
      heap.swapAt(0, heap.count - 1)
      heap.removeLast()
      siftDown(from: 0)
      return top
    }
    guard let front = frontOfRun else { return nil }
    dropFrontOfRun()
    return front
  }

  /// Removes the run's earliest entry. Amortised O(1): the taken prefix is let go once it is
  /// half the run.
  mutating func dropFrontOfRun() {
    runStart += 1
    if runStart == run.count {
      run.removeAll(keepingCapacity: run.capacity <= 1_024)
      runStart = 0
    } else if runStart >= 512, runStart * 2 >= run.count {
      run.removeFirst(runStart)
      runStart = 0
    }
  }

  /// Whether stale entries outnumber live ones enough to rebuild.
  var needsCompaction: Bool { count > 64 && count > 2 * live }

  /// An empty set.
  init() {}

  /// Live entries: `run` in order, `heap` in any order. O(n).
  init(run: [TimerEntry], heap: [TimerEntry]) {
    self.run = run
    self.heap = heap
    live = run.count + heap.count
    if heap.count > 1 {
      for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }
  }

  private mutating func siftDown(from start: Int) {
    var parent = start
    while true {
      let left = 2 * parent + 1
      guard left < heap.count else { return }
      var best = left
      if left + 1 < heap.count, heap[left + 1].precedes(heap[left]) { best = left + 1 }
      guard heap[best].precedes(heap[parent]) else { return }
      heap.swapAt(parent, best)
      parent = best
    }
  }
}

/// One clock's timers, and a manual clock's current instant.
struct ClockTimers: Sendable {
  /// A manual clock's current instant (nanoseconds since it was made); unused for the system
  /// clock, which is read.
  var now: Int64 = 0
  var timers = TimerQueue()
  /// The instant an advance in slices is moving it to, between its stops: a body that starts
  /// meanwhile counts its timeout from there (its first line runs after the advance, as far as
  /// the clock can tell), whichever slice its task's report falls in.
  var advancingTo: Int64?
}

/// An operation's time traits, folded: the earliest deadline and the shortest timeout win.
/// Made from the caller's `[OperationTrait]` before the lock is taken.
struct TimeTraits: Sendable {
  /// An absolute deadline (nanoseconds of `deadlineClock`).
  var deadline: Int64?
  var deadlineClock: UInt64 = 0
  /// A deadline relative to the submission (nanoseconds).
  var deadlineAfterSubmission: Int64?
  /// The execution timeout (nanoseconds).
  var timeout: Int64?
  /// The retry policy (the last `.retry` trait given).
  var retry: RetryPolicy?
  /// The `.exclusive` traits, as given (resolved against the queue when it is added).
  var exclusive = ExclusiveRequests()
  /// The permits one start costs (`.cost`; 1 when not given).
  var cost: Int64?
  /// The `.condition` traits, in order, kept until the operation ends (evaluated at each start).
  var conditions: [any OperationCondition] = []
  /// The `.tags` traits' tags, interned numbers without repeats, in the order first given.
  var tags: [UInt64] = []
  /// The `.progressWeight` trait's weight (the last given), folded only where the operation is made.
  var progressWeight: Int?

  init() {}

  /// Two absolute deadlines of different clocks are refused (`QueueDeadline`'s `<` says so).
  init(_ traits: [OperationTrait]) {
    add(traits)
  }

  mutating func add(_ traits: [OperationTrait]) {
    for trait in traits {
      switch trait.kind {
      case .deadline(let new):
        if let current = deadline {
          deadline =
            min(QueueDeadline(clock: QueueClock(id: deadlineClock), nanoseconds: current), new).nanoseconds
        } else {
          deadline = new.nanoseconds
          deadlineClock = new.clock.id
        }
      case .deadlineIn(_, let nanoseconds):
        deadlineAfterSubmission = min(deadlineAfterSubmission ?? nanoseconds, nanoseconds)
      case .timeout(_, let nanoseconds):
        timeout = min(timeout ?? nanoseconds, nanoseconds)
      case .retry(let policy):
        retry = policy
      case .exclusive(let request):
        if !request.keys.isEmpty { exclusive.append(request) }
      case .cost(let permits):
        cost = permits
      case .condition(let box):
        conditions.append(box.condition)
      case .progressWeight(let weight):
        progressWeight = weight
      case .tags(_, let ids):
        if tags.isEmpty {
          tags = ids
        } else {
          for id in ids where !tags.contains(id) { tags.append(id) }
        }
      }
    }
  }

  /// Whether it has a deadline to arm when the operation is added.
  var hasDeadline: Bool { deadline != nil || deadlineAfterSubmission != nil }

  /// Refuses an absolute deadline of another clock than `clock`, the operation's queue's.
  func checkClock(_ clock: UInt64, operation name: @autoclosure () -> String, queue queueName: String?) {
    guard deadline != nil, deadlineClock != clock else { return }
    let queue = queueName.map { " \"\($0)\"" } ?? ""
    fatalError(
      "ActorQueue: \(name()) has a deadline of the \(QueueClock(id: deadlineClock)) clock, but its queue\(queue) "
        + "runs on the \(QueueClock(id: clock)) clock; make the deadline with that queue's deadline(in:)")
  }
}

/// What an operation's time needs beyond its record's ``TimeMarks``: kept in
/// `Scheduler.timeStates` only for an operation with an execution timeout, a timed waiter, or
/// traits given before it was added (a prepared operation's, a caller's handle to coalesced
/// work). An operation added with only a deadline has none: its entry holds the instant.
struct OperationTime: Sendable {
  /// Traits as given, read when it is added and when its body starts.
  var traits = TimeTraits()
  /// The clock its timers are on: its queue's, from its submission.
  var clock: UInt64 = 0
  /// The armed execution timeout (nanoseconds of `clock`), until it fires or the operation ends.
  var armedTimeout: Int64?
  /// Callers in `waitUntilFinished(timeout:)`.
  var timedWaiters: [TimedWaiter] = []
  /// Its conditions' produced dependencies, until it is added to a queue (then linked).
  var produced: [Handle] = []
  /// The condition that answered "not yet", while it waits for its next evaluation.
  var deferredBy: String?
  /// With conditions, once its released queue let go of it (held by `pause()`): its handle,
  /// weakly, for their evaluation.
  var conditionsHandle: WeakHandle<Handle>?
  /// The instant its deadline was armed for (the earlier of its own and its group's), if any: a
  /// group's queue takes it for its children.
  var deadline: Int64?
}

/// What time left in an operation's record: one byte, in padding the record has anyway.
struct TimeMarks: OptionSet, Sendable {
  let rawValue: UInt8

  /// It has an ``OperationTime`` (`OperationRecord.timeSlot`).
  static let hasState = TimeMarks(rawValue: 1 << 0)
  /// Its deadline is armed: its entry, in its clock's timers, holds the instant.
  static let deadlineArmed = TimeMarks(rawValue: 1 << 1)
  /// A limit passed before it ended: it ends `.failed` with an ``OperationTimeoutError``, whatever
  /// its body throws (a value still finishes it). The error is made when read, from these marks.
  static let timedOut = TimeMarks(rawValue: 1 << 2)
  /// The limit that passed was its execution timeout (otherwise its deadline).
  static let byExecutionTimeout = TimeMarks(rawValue: 1 << 3)
  /// Its body had started when the limit passed.
  static let timedOutAfterStart = TimeMarks(rawValue: 1 << 4)
  /// It waits out a retry's backoff: its entry, in its queue's clock's timers, holds the
  /// instant; it is `.pending` and does not become ready before the entry fires.
  static let inBackoff = TimeMarks(rawValue: 1 << 5)
  /// It has a retry state (`OperationRecord.retrySlot`), whose user-owned parts go at its end.
  static let retries = TimeMarks(rawValue: 1 << 6)
  /// It takes exclusivity keys: its state is in `Scheduler.exclusiveStates` until it ends.
  static let exclusive = TimeMarks(rawValue: 1 << 7)
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

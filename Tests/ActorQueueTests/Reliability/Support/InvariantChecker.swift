import ActorQueue
import TestSupport

/// Checks the invariants of one or more queues from their lossless `events` streams, ordered by
/// the global `sequence`. What the events cannot show (dependencies, priorities, which ops were
/// cancelled while waiting) the executor registers, stamped with the script step it happened in;
/// a "fence" queue whose suspension the executor toggles after each step marks the steps in the
/// global sequence.
///
/// Fails on: a start with as many ops executing as the limit in force (or more); a start before
/// every dependency ended; a start while suspended; a start of an op cancelled while waiting; zero
/// or two terminal states; a start of a lower-priority op while a higher one was ready in the
/// same queue, or of a later-submitted one of the same priority (FIFO); any event after a terminal one;
/// an event whose executing count differs from the ops the events show executing (a paused op
/// holds no slot); a start (a slot given) of an op cancelled while paused; a start in or after the
/// step its deadline passed in; a detail event (a timer acted) where the model's timers did not
/// act, of another kind, or twice, and none where they did; a retry detail, or a condition's "not
/// yet", other than once for each the model rescheduled or deferred, or while the op holds a slot
/// or is ready; a group's end before one of its children's.
final class InvariantChecker: Sendable {
  /// The queue index of the fence queue.
  static let fence = -1

  struct Snapshot: Sendable {
    var latest: [OperationID: OperationState] = [:]
    var queueOf: [OperationID: Int] = [:]
    var fenceEvents = 0
    /// Retries scheduled (`OperationDetail.retryScheduled`), by op.
    var retries: [OperationID: Int] = [:]
    /// Conditions' "not yet" (`OperationDetail.conditionNotYet`), by op.
    var deferrals: [OperationID: Int] = [:]

    func executing(in queue: Int) -> Set<OperationID> {
      Set(latest.filter { $0.value == .executing && queueOf[$0.key] == queue }.keys)
    }
  }

  private struct State {
    var events: [(queue: Int, event: QueueEvent)] = []
    var snapshot = Snapshot()
    var registrations: [Registration] = []
    var ids: [Int: OperationID] = [:]
    var waiters: [(condition: @Sendable (Snapshot) -> Bool, continuation: CheckedContinuation<Void, Never>)] =
      []
  }

  private let state = LockedValue(State())
  private let consumers = LockedValue<[Task<Void, Never>]>([])

  init() {}

  /// Consumes a queue's lossless event stream (index ``fence`` for the fence queue).
  func attach(_ stream: AsyncStream<QueueEvent>, queue: Int) {
    let task = Task { [state] in
      for await event in stream {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
          state.events.append((queue, event))
          if queue == Self.fence {
            state.snapshot.fenceEvents += 1
          } else if let id = event.operationID, let new = event.operationState {
            state.snapshot.latest[id] = new
            state.snapshot.queueOf[id] = queue
          } else if case .detail(let id, _, let detail) = event.kind, detail.retryAttempt != nil {
            state.snapshot.retries[id, default: 0] += 1
          } else if case .detail(let id, _, let detail) = event.kind, detail.conditionName != nil {
            state.snapshot.deferrals[id, default: 0] += 1
          }
          var ready: [CheckedContinuation<Void, Never>] = []
          let snapshot = state.snapshot
          state.waiters.removeAll { waiter in
            guard waiter.condition(snapshot) else { return false }
            ready.append(waiter.continuation)
            return true
          }
          return ready
        }
        for continuation in ready { continuation.resume() }
      }
    }
    consumers.withLock { $0.append(task) }
  }

  func identify(op: Int, id: OperationID) { state.withLock { $0.ids[op] = id } }

  func register(_ registration: Registration) { state.withLock { $0.registrations.append(registration) } }

  var snapshot: Snapshot { state.withLock { $0.snapshot } }

  /// The last `count` events seen, one line each, ops named by their script numbers.
  func recentEvents(_ count: Int) -> [String] {
    state.withLock { state in
      let names = Dictionary(state.ids.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
      return state.events.suffix(count).map { item in
        let op = item.event.operationID.flatMap { names[$0] }.map { "op\($0) " } ?? ""
        return "\(item.queue == Self.fence ? "fence" : "q\(item.queue)") \(op)\(item.event)"
      }
    }
  }

  /// Suspends until `condition` holds for the events seen so far (no timeout: a child watchdog
  /// turns a wait that never ends into a failure).
  func wait(until condition: @escaping @Sendable (Snapshot) -> Bool) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state in
        if condition(state.snapshot) { return true }
        state.waiters.append((condition, continuation))
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Re-evaluates the waiting conditions: for conditions that also read what is not an event (a
  /// body's progress), called when that changes.
  func poke() {
    let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      var ready: [CheckedContinuation<Void, Never>] = []
      let snapshot = state.snapshot
      state.waiters.removeAll { waiter in
        guard waiter.condition(snapshot) else { return false }
        ready.append(waiter.continuation)
        return true
      }
      return ready
    }
    for continuation in ready { continuation.resume() }
  }

  /// Suspends until every attached stream has ended (for finite, hand-made streams).
  func waitUntilStreamsEnd() async {
    for task in consumers.withLock({ $0 }) { await task.value }
  }

  func stop() {
    for task in consumers.withLock({ $0 }) { task.cancel() }
  }

  /// Replays every event seen, in sequence order, and returns the invariants broken.
  func violations() -> [String] {
    let (events, registrations, ids) = state.withLock { ($0.events, $0.registrations, $0.ids) }
    let names = Dictionary(ids.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
    func name(_ id: OperationID) -> String { names[id].map { "op\($0)" } ?? "\(id)" }

    let sorted = events.sorted { $0.event.sequence < $1.event.sequence }
    // An op that ended before it was submitted has no events: nothing waits for its end event.
    let seen = Set(sorted.compactMap(\.event.operationID))
    let fences = sorted.filter { $0.queue == Self.fence }.map(\.event.sequence)

    var limits: [Int: Int] = [:]
    var priorities: [OperationID: [(step: Int, priority: Int)]] = [:]
    var edges: [OperationID: [(dependency: OperationID, from: Int, until: Int)]] = [:]
    var cancelledAt: [OperationID: Int] = [:]
    var cancelledPausedAt: [OperationID: Int] = [:]
    var deadlinePassedAt: [OperationID: Int] = [:]
    var timedOut: [OperationID: [OperationDetail]] = [:]
    var rescheduled: [OperationID: Int] = [:]
    var deferred: [OperationID: Int] = [:]
    var locksOf: [OperationID: [Int]] = [:]
    var mayTimeOut: Set<OperationID> = []
    var childrenOf: [OperationID: [OperationID]] = [:]
    for registration in registrations {
      switch registration {
      case .queue(let queue, let limit): limits[queue] = limit == -1 ? .max : limit
      case .operation(let op, _, let priority, let step):
        if let id = ids[op] { priorities[id, default: []].append((step, priority)) }
      case .priority(let op, let priority, let step):
        if let id = ids[op] { priorities[id, default: []].append((step, priority)) }
      case .edge(let dependent, let dependency, let step):
        if let id = ids[dependent], let other = ids[dependency] {
          edges[id, default: []].append((other, step, .max))
        }
      case .edgeRemoved(let dependent, let dependency, let step):
        if let id = ids[dependent], let other = ids[dependency],
          let index = edges[id]?.lastIndex(where: {
            $0.dependency == other && $0.until == .max
          })
        {
          edges[id]![index].until = step
        }
      case .cancelledWhileWaiting(let op, let step):
        if let id = ids[op], cancelledAt[id] == nil { cancelledAt[id] = step }
      case .cancelledWhilePaused(let op, let step):
        if let id = ids[op], cancelledPausedAt[id] == nil { cancelledPausedAt[id] = step }
      case .timedOut(let op, let deadline, _):
        if let id = ids[op] { timedOut[id, default: []].append(deadline ? .deadlineExpired : .timedOut) }
      case .rescheduled(let op, _):
        if let id = ids[op] { rescheduled[id, default: 0] += 1 }
      case .deferred(let op, _):
        if let id = ids[op] { deferred[id, default: 0] += 1 }
      case .keys(let op, let ops, _):
        if let id = ids[op] { locksOf[id] = ops }
      case .mayTimeOut(let op, _):
        if let id = ids[op] { mayTimeOut.insert(id) }
      case .deadlinePassed(let op, let step):
        if let id = ids[op], deadlinePassedAt[id] == nil { deadlinePassedAt[id] = step }
      case .groupChild(let op, let group, _):
        if let id = ids[op], let groupID = ids[group] { childrenOf[groupID, default: []].append(id) }
      }
    }
    func priority(_ id: OperationID, at step: Int) -> Int {
      priorities[id]?.last(where: { $0.step <= step })?.priority ?? priorities[id]?.first?.priority ?? 2
    }

    var problems: [String] = []
    var suspended: [Int: Bool] = [:]
    var executing: [Int: Set<OperationID>] = [:]
    var ready: [Int: Set<OperationID>] = [:]
    var submitted: [OperationID: UInt64] = [:]
    var terminals: [OperationID: Int] = [:]
    var endedAt: [OperationID: UInt64] = [:]
    var started: Set<OperationID> = []
    var details: [OperationID: [OperationDetail]] = [:]
    // Keys: each lock's holder, from its start until it ends or goes back to pending (a retry);
    // a paused holder keeps them.
    var holding: [Int: OperationID] = [:]
    var holds: [OperationID: [Int]] = [:]
    func release(_ id: OperationID) {
      for lock in holds.removeValue(forKey: id) ?? [] where holding[lock] == id { holding[lock] = nil }
    }
    var fenceIndex = 0
    for (queue, event) in sorted where queue != Self.fence {
      while fenceIndex < fences.count && fences[fenceIndex] < event.sequence { fenceIndex += 1 }
      let step = fenceIndex
      let at = "#\(event.sequence) (step \(step))"
      switch event.kind {
      case .suspended: suspended[queue] = true
      case .resumed: suspended[queue] = false
      case .limitChanged(let limit): limits[queue] = limit
      case .eventsDropped(let count): problems.append("\(at): a lossless stream dropped \(count) events")
      case .detail(let id, _, let detail):
        if terminals[id, default: 0] > 0 {
          problems.append("\(at): \(name(id)) \(detail) after its terminal state")
        }
        details[id, default: []].append(detail)
        if detail.retryAttempt != nil || detail.conditionName != nil,
          executing[queue, default: []].contains(id) || ready[queue, default: []].contains(id)
        {
          problems.append("\(at): \(name(id)) \(detail) while it holds a slot or is ready")
        }
      case .operation(let id, _, let new):
        if terminals[id, default: 0] > 0 {
          problems.append("\(at): \(name(id)) \(new) after its terminal state")
        }
        if submitted[id] == nil { submitted[id] = event.sequence }
        switch new {
        case .pending, .finished, .failed, .cancelled: release(id)
        case .executing:
          if holds[id] == nil, let locks = locksOf[id] {
            for lock in locks {
              if let other = holding[lock], other != id {
                problems.append("\(at): \(name(id)) started while \(name(other)) holds key \(lock)")
              }
              holding[lock] = id
            }
            holds[id] = locks
          }
        case .ready, .paused: break
        }
        switch new {
        case .pending, .paused:
          ready[queue, default: []].remove(id)
          // Paused in its body, or (pending again) a retried attempt that failed: no slot held.
          executing[queue, default: []].remove(id)
        case .ready:
          ready[queue, default: []].insert(id)
        case .executing:
          let limit = limits[queue] ?? .max
          if executing[queue, default: []].count >= limit {
            problems.append(
              "\(at): \(name(id)) started with \(executing[queue, default: []].count) executing, limit \(limit)"
            )
          }
          if event.executingCount > event.maxConcurrentOperationCount {
            problems.append(
              "\(at): \(name(id)) started: event says \(event.executingCount) executing, limit "
                + "\(event.maxConcurrentOperationCount)")
          }
          if suspended[queue] == true {
            problems.append("\(at): \(name(id)) started while its queue was suspended")
          }
          for edge in edges[id] ?? []
          where edge.from <= step && edge.until > step && seen.contains(edge.dependency) {
            if let end = endedAt[edge.dependency], end < event.sequence { continue }
            problems.append("\(at): \(name(id)) started before its dependency \(name(edge.dependency)) ended")
          }
          if let cancelled = cancelledAt[id], cancelled <= step, !started.contains(id) {
            problems.append(
              "\(at): \(name(id)) started after it was cancelled while waiting (step \(cancelled))")
          }
          if let passed = deadlinePassedAt[id], passed <= step {
            problems.append("\(at): \(name(id)) got a slot after its deadline passed (step \(passed))")
          }
          if let cancelled = cancelledPausedAt[id], cancelled <= step {
            problems.append(
              "\(at): \(name(id)) got a slot after it was cancelled while paused (step \(cancelled))")
          }
          let mine = priority(id, at: step)
          let order = submitted[id] ?? event.sequence
          for other in ready[queue, default: []] where other != id {
            let theirs = priority(other, at: step)
            if theirs > mine {
              problems.append(
                "\(at): \(name(id)) (priority \(mine)) started while \(name(other)) (\(theirs)) was ready")
            } else if theirs == mine, let otherOrder = submitted[other], otherOrder < order {
              problems.append("\(at): \(name(id)) started before \(name(other)), submitted earlier (FIFO)")
            }
          }
          started.insert(id)
          ready[queue, default: []].remove(id)
          executing[queue, default: []].insert(id)
        case .finished, .failed, .cancelled:
          terminals[id, default: 0] += 1
          if endedAt[id] == nil { endedAt[id] = event.sequence }
          ready[queue, default: []].remove(id)
          executing[queue, default: []].remove(id)
        }
      }
      // Every event carries the queue's executing count: the ops holding a slot, which a paused
      // op does not.
      if event.executingCount != executing[queue, default: []].count {
        let shown = executing[queue, default: []].map(name).sorted()
        problems.append(
          "\(at): the event says \(event.executingCount) executing, the events show \(shown.count) \(shown)")
      }
    }
    for id in submitted.keys.sorted(by: { submitted[$0]! < submitted[$1]! })
    where terminals[id, default: 0] != 1 {
      problems.append("\(name(id)) reached \(terminals[id, default: 0]) terminal states (must be exactly 1)")
    }
    // A group ends after each of its children (one that ended before it was added has no events).
    for (group, children) in childrenOf.sorted(by: { name($0.key) < name($1.key) }) {
      guard let groupEnd = endedAt[group] else { continue }
      for child in children where seen.contains(child) {
        guard let childEnd = endedAt[child], childEnd < groupEnd else {
          problems.append("\(name(group)) ended (#\(groupEnd)) before its child \(name(child)) did")
          continue
        }
      }
    }
    // Timers: a detail exactly where the model's acted, of its kind; allowed where one may have.
    // Retries: a retry detail for each attempt the model rescheduled.
    for id in Set(details.keys).union(timedOut.keys).union(rescheduled.keys).union(deferred.keys).sorted(by: {
      name($0) < name($1)
    }) {
      let retries = details[id]?.filter { $0.retryAttempt != nil }.count ?? 0
      if retries != rescheduled[id, default: 0] {
        problems.append("\(name(id)): \(retries) retries scheduled, expected \(rescheduled[id, default: 0])")
      }
      let deferrals = details[id]?.filter { $0.conditionName != nil }.count ?? 0
      if deferrals != deferred[id, default: 0] {
        problems.append(
          "\(name(id)): \(deferrals) conditions said not yet, expected \(deferred[id, default: 0])")
      }
      let seen = details[id]?.filter { $0.retryAttempt == nil && $0.conditionName == nil } ?? []
      if let expected = timedOut[id] {
        if seen != expected { problems.append("\(name(id)): details \(seen), expected \(expected)") }
      } else if seen.count > 1 || (!seen.isEmpty && !mayTimeOut.contains(id)) {
        problems.append("\(name(id)): details \(seen), expected none (no timer acted on it)")
      }
    }
    return problems
  }
}

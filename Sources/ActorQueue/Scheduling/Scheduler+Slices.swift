/// Work of one call too long for one hold of the lock, done in slices.
///
/// Every queue shares the scheduler's lock, so a call that holds it for an amount of work that
/// grows with the queue (cancelling, pausing or resuming 100,000 operations, releasing a queue,
/// an end that releases 100,000 dependents, escalating a chain of 100,000) would stall every
/// other queue's callers for its whole length. Such work goes in slices of at most
/// ``Scheduler/defaultSliceLimit`` units (an operation walked or escalated, a dependent released,
/// a dependent ended) per hold: what is left is handed to the caller in its effects, and the
/// caller's thread takes the lock again for the next slice once it has performed the effects of
/// this one, until nothing is left. So the call still returns only once all its work is done,
/// and performs its effects (handlers, events, waiters) in the same order; other callers take
/// the lock between slices.
///
/// Between two slices other events may change anything. The work left names records by index
/// and identifier (a record freed and reused meanwhile is told apart), a queue by generation,
/// and a walk's place in its queue by a cursor that the queue's list keeps valid as operations
/// leave it. A whole-queue call whose contract forbids a start in between (cancelling, pausing
/// or resuming every operation) stops its queue's starts until it ends
/// (``QueueStartRule/beginWalk()``), and so does every queue the call changes while it
/// has work left (``held``): their starts are decided once it ends, as if it had been one event
/// (by priority, among everything it made ready). Other queues go on, and other callers' events
/// run between the slices. A dependent left to end in a later slice keeps its count of
/// unfinished dependencies, so no event between the slices (a submission, `resume()`, an edge
/// removed) makes it ready.
struct BulkWork: Sendable {
  /// The dependents of an ended operation still to release, from `next` on.
  struct Release: Sendable {
    /// The operation that ended.
    let dependency: Int
    let dependencyID: OperationID
    let terminal: OperationState
    /// The error of a dependent that required the operation to finish (it did not).
    let failure: (any Error)?
    let entries: [DependentEntry]
    var next: Int
    /// Entries before this one were looked at for a queue with keys (``BulkWork/touchesArbitration``).
    var scannedTo = 0
    /// The last entry looked at whose dependent was in a queue with keys (-1: none).
    var lastArbitrated = -1
    /// ``Scheduler/arbitrationEpoch`` when it was looked at: an older look is stale.
    var scanEpoch: UInt64 = 0
  }

  /// A whole-queue call's walk over the queue's operations, in submission order.
  struct Walk: Sendable {
    enum Kind: Sendable {
      /// `cancelAllOperations()`: starts stopped until it ends.
      case cancel
      /// `pauseAllOperations()`: starts stopped until it ends.
      case pause
      /// `resumeAllOperations()`: starts stopped until it ends, so that what it resumes starts
      /// by priority, as if resumed at once.
      case resume
      /// The queue's `ActorQueue` was released: the queue lets go of what `pause()` holds, and,
      /// suspended, cancels what waits.
      case release

      var stopsStarts: Bool {
        switch self {
        case .cancel, .pause, .resume: true
        case .release: false
        }
      }
    }

    let kind: Kind
    let queue: QueueReference
    /// Identifies the walk's cursor in its queue's record.
    let token: UInt64
    /// The submission order of the last operation it acts on: operations added meanwhile are
    /// not part of the call.
    let through: UInt64
  }

  /// An escalation still to spread: the operations to raise to `priority`, with what they wait for.
  struct Escalation: Sendable {
    let priority: UInt8
    var work: [OperationReference]
  }

  var releases: [Release] = []
  var ends: [PendingEnd] = []
  var walks: [Walk] = []
  /// Cancel-by-tag calls' operations still to cancel.
  var tagCancels: [TagCancel] = []
  var escalations: [Escalation] = []
  /// The queues this call changed while it had work left: they start nothing until it ends,
  /// when their starts are decided as if the call had been one event.
  var held: [QueueReference] = []
  /// Whether what is left may change a queue with keys or limiters (``Scheduler/arbitratedCallsInSlices``).
  var touchesArbitration = false
  /// ``Scheduler/arbitrationEpoch`` when it was handed out.
  var epoch: UInt64 = 0

  /// Whether nothing is left to do but let the held queues start again.
  var isDone: Bool {
    releases.isEmpty && ends.isEmpty && walks.isEmpty && tagCancels.isEmpty && escalations.isEmpty
  }

  /// Adds `other`'s work (both callers' work is now this caller's).
  mutating func merge(_ other: consuming BulkWork) {
    releases += other.releases
    ends += other.ends
    walks += other.walks
    tagCancels += other.tagCancels
    escalations += other.escalations
    for queue in other.held where !held.contains(queue) { held.append(queue) }
    touchesArbitration = touchesArbitration || other.touchesArbitration
    epoch = min(epoch, other.epoch)
  }
}

/// A dependent to end because an operation it required to finish did not.
struct PendingEnd: Sendable {
  let index: Int
  let id: OperationID
  let terminal: OperationState
  /// Its error; `nil` when its outcome was recorded already (a caller's handle to coalesced
  /// work, which ends with the work's outcome).
  let error: (any Error)?
  /// The handle kept alive until this end is done (a caller's handle that the coalesced work
  /// kept), then released after unlocking.
  var keeps: AnyQueueOperation? = nil
}

/// An operation's record, told apart from a later operation's that reuses it by its identifier.
struct OperationReference: Sendable {
  let index: Int
  let id: OperationID
}

/// Where a walk is in its queue: the next operation it acts on (-1: none left). Kept by the
/// queue's record, which advances it when that operation leaves the queue.
struct WalkCursor: Sendable {
  let token: UInt64
  var next: Int
}

extension Scheduler {
  /// The most units of bulk work (an operation walked or escalated, a dependent released or ended) one hold
  /// of the lock does before it hands the rest to its caller (``sliceLimit``, which tests lower).
  static let defaultSliceLimit = 1_000

  // MARK: Walks

  /// Starts a whole-queue walk of `kind` over `queue`'s unfinished operations (those added
  /// until now), and does its first slice.
  mutating func beginWalk(_ kind: BulkWork.Walk.Kind, in queue: Int, _ effects: inout Effects) {
    addWalk(kind, in: queue)
    drainBulk(&effects)
  }

  /// Leaves a whole-queue walk of `kind` over `queue`'s unfinished operations to the bulk work,
  /// stopping the queue's starts until it ends if `kind` does: done when the event settles, as
  /// far as its slice has room, the rest in the caller's next slices.
  mutating func addWalk(_ kind: BulkWork.Walk.Kind, in queue: Int) {
    nextWalkToken += 1
    let walk = BulkWork.Walk(
      kind: kind, queue: QueueReference(index: queue, generation: queues[queue].generation),
      token: nextWalkToken,
      through: nextSubmission)
    queues[queue].walkCursors.append(WalkCursor(token: walk.token, next: queues[queue].first))
    if kind.stopsStarts { queues[queue].machine.beginWalk() }
    bulk.walks.append(walk)
    markBulk()
  }

  /// Does the bulk work left, until the slice's limit: releases and ends first (so that what a
  /// walk's step ended has ended before the walk goes on), then cancellations by tag, then the
  /// walks.
  mutating func drainBulk(_ effects: inout Effects) {
    while sliceWork < sliceLimit {
      if drainReleasesAndEnds(&effects) {
        continue
      } else if !bulk.tagCancels.isEmpty {
        cancelSomeTagged(&effects)
      } else if var escalation = bulk.escalations.popLast() {
        spreadEscalation(to: escalation.priority, &escalation.work, &effects)
        if !escalation.work.isEmpty { bulk.escalations.append(escalation) }
      } else if let walk = bulk.walks.last {
        walkSome(walk, &effects)
      } else {
        return
      }
    }
  }

  /// One step of the releases and ends left, within the slice's limit; false when none is left.
  private mutating func drainReleasesAndEnds(_ effects: inout Effects) -> Bool {
    if !bulk.releases.isEmpty {
      var release = bulk.releases.removeLast()
      var work: [PendingEnd] = []
      release.next = releaseEntries(
        release.entries, from: release.next, of: release.dependency, id: release.dependencyID,
        terminal: release.terminal, failure: release.failure, deferred: true, into: &work, &effects)
      if release.next < release.entries.count { bulk.releases.append(release) }
      finishEnds(&work, &effects)
      return true
    }
    guard !bulk.ends.isEmpty else { return false }
    var work = bulk.ends
    bulk.ends = []
    finishEnds(&work, &effects)
    return true
  }

  /// Does every release and end left now, past the slice's limit: a manual clock's timer's
  /// ends are done before its next timer fires, so that what an advance does does not depend
  /// on the slice limit (a test clock's advance is one event; see `fireDue`).
  mutating func finishReleasesAndEnds(_ effects: inout Effects) {
    while !bulk.releases.isEmpty || !bulk.ends.isEmpty {
      largestSlice = max(largestSlice, sliceWork)
      sliceWork = 0
      while sliceWork < sliceLimit, drainReleasesAndEnds(&effects) {}
    }
  }

  /// The caller's next slice of `work`, left by its previous event.
  mutating func continueBulk(
    _ work: consuming BulkWork, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    uncountCall(work)  // counted again at the end if this slice hands out more
    bulk = work
    markBulk()
    drainBulk(&effects)
    settle(now: now, &effects)
  }

  /// Ends every end in `work`, transitively, within the slice's limit; what is left goes to the
  /// bulk work.
  mutating func finishEnds(_ work: inout [PendingEnd], _ effects: inout Effects) {
    while let end = work.popLast() {
      if sliceWork >= sliceLimit {
        bulk.ends.append(end)
        bulk.ends += work
        work = []
        markBulk()
        return
      }
      sliceWork += 1
      let dependent = end.index
      if let handle = end.keeps { effects.garbage.releaseLater(handle: handle) }
      guard operations[dependent].isLive, operations[dependent].id == end.id,
        !operations[dependent].phase.hasEnded, !operations[dependent].phase.isDetached
      else { continue }
      precondition(
        end.error == nil || operations[dependent].phase.state == .pending,
        "Internal inconsistency: \(operations[dependent].id) was \(operations[dependent].phase.state) when its required input's end reached it"
      )
      if end.terminal == .cancelled, startsWhenCancelled(dependent) {
        cancelWaiting(dependent, &effects)
        continue
      }
      endOne(dependent, as: end.terminal, error: end.error, into: &work, &effects)
    }
  }

  /// Releases `entries` from `start` on (dependents of `dependency`, which ended `terminal`),
  /// within the slice's limit; returns where it stopped. `deferred`: it ended in an earlier
  /// slice, so each dependent's requirement is read from its edge, which may have changed since.
  mutating func releaseEntries(
    _ entries: [DependentEntry], from start: Int, of dependency: Int, id dependencyID: OperationID,
    terminal: OperationState, failure: (any Error)?, deferred: Bool, into work: inout [PendingEnd],
    _ effects: inout Effects
  ) -> Int {
    var position = start
    while position < entries.count {
      if sliceWork >= sliceLimit { return position }
      sliceWork += 1
      let entry = entries[position]
      position += 1
      guard isUnfinished(entry) else { continue }
      let dependent = entry.index
      precondition(
        operations[dependent].phase.state == .pending && operations[dependent].unfinishedDependencies > 0,
        "Internal inconsistency: \(operations[dependent].id) was \(operations[dependent].phase.state) with an unfinished dependency"
      )
      let requiresSuccess =
        deferred ? edgeRequiresSuccess(dependent, on: dependency, id: dependencyID) : entry.requiresSuccess
      if requiresSuccess && terminal != .finished, let failure {
        // Its count stays up: it must not become ready (submitted, resumed, an edge removed)
        // before this end, which a later slice may do.
        work.append(
          PendingEnd(
            index: dependent, id: entry.id, terminal: terminal == .cancelled ? .cancelled : .failed,
            error: failure))
      } else {
        operations[dependent].unfinishedDependencies -= 1
        if operations[dependent].unfinishedDependencies == 0, operations[dependent].queue >= 0 {
          makeReady(dependent, &effects)
        }
      }
    }
    return position
  }

  /// Whether `dependent` still requires `dependency` (operation `id`) to finish: the edge may
  /// have been removed since the dependency ended (then its record may even be another
  /// operation's by now).
  private mutating func edgeRequiresSuccess(_ dependent: Int, on dependency: Int, id: OperationID) -> Bool {
    guard operations[dependency].isLive, operations[dependency].id == id,
      let position = edgePosition(of: dependency, in: dependent)
    else { return false }
    return operations[dependent].dependencies[position].requiresSuccess
  }

  /// The current call has work beyond this slice: the queues it changed so far are held.
  mutating func markBulk() {
    hasBulk = true
    var queue = firstTouched
    while queue >= 0 {
      holdForBulk(queue)
      queue = queues[queue].nextTouched
    }
  }

  /// While the current call has work left, a queue it changes starts nothing (not even a
  /// worker's next claim in the same event) until the call ends.
  @inline(never)  // rare: only while a call goes on in slices
  mutating func holdForBulk(_ queue: Int) {
    guard !bulk.isDone else { return }
    let reference = QueueReference(index: queue, generation: queues[queue].generation)
    guard !bulk.held.contains(reference) else { return }
    queues[queue].machine.beginWalk()
    bulk.held.append(reference)
  }

  /// At the end of an event with bulk work: the slice's room is used first (a failed child's
  /// siblings' cancel, say, ends in its event when small), then the queues are held or let go of.
  @inline(never)  // rare: kept out of `settle`'s line
  mutating func drainAndHoldQueues(_ effects: inout Effects) {
    drainBulk(&effects)
    holdOrLetGoQueues()
  }

  /// At the end of a slice, before starts are decided: while the call has work left, the queues
  /// it changed stay held instead of being settled; once it has none, they are let go of, to be
  /// settled now.
  @inline(never)  // rare: kept out of `settle`'s line
  mutating func holdOrLetGoQueues() {
    if bulk.isDone {
      let held = bulk.held
      bulk.held = []
      for queue in held where isLive(queue) {
        queues[queue.index].machine.endWalk()
        touch(queue.index)
      }
      return
    }
    while firstTouched >= 0 { holdForBulk(takeFirstTouched()) }
  }

  /// The end of an event that did bulk work: what is left goes to the caller, and the next
  /// hold of the lock starts a slice of its own.
  @inline(never)  // rare: kept out of `settle`'s line
  mutating func endSlice(_ effects: inout Effects) {
    if sliceWork > largestSlice { largestSlice = sliceWork }
    sliceWork = 0
    guard hasBulk else { return }
    hasBulk = false
    guard !bulk.isDone else { return }
    bulk.touchesArbitration = bulkTouchesArbitration()
    bulk.epoch = arbitrationEpoch
    // Counted once per hold that hands work out: a second hand-out in it merges with the first.
    if let handed = effects.bulk { uncountCall(handed) }
    effects.addBulk(bulk)
    bulk = BulkWork()
    countCall(effects.bulk!)
  }

  /// `work` is handed out: its call is in slices, and may hold up arbitration.
  private mutating func countCall(_ work: borrowing BulkWork) {
    callsInSlices += 1
    if work.touchesArbitration {
      arbitratedCallsInSlices += 1
    } else if work.epoch != arbitrationEpoch {
      staleCallsInSlices += 1
    }
  }

  /// `work`, handed out, came back (or merged with more).
  private mutating func uncountCall(_ work: borrowing BulkWork) {
    callsInSlices -= 1
    if work.touchesArbitration {
      arbitratedCallsInSlices -= 1
    } else if work.epoch != arbitrationEpoch {
      staleCallsInSlices -= 1
    }
  }

  /// Whether the work left may change a queue with keys or limiters: a walk or a hold of one, a
  /// dependent in one still to release (looked for ahead of the release, at most four slices'
  /// worth of entries per hold, so the look ends well before the release; one not looked at yet
  /// counts), or what is not told apart (ends, cancels by tag). A call that may not leaves
  /// arbitration free to decide between its slices.
  private mutating func bulkTouchesArbitration() -> Bool {
    if !exclusiveQueues.isEmpty {
      // An escalation reorders waiting operations wherever its chain leads.
      if !bulk.ends.isEmpty || !bulk.tagCancels.isEmpty || !bulk.escalations.isEmpty { return true }
      for walk in bulk.walks where isLive(walk.queue) && queues[walk.queue.index].isArbitrated { return true }
      for queue in bulk.held where isLive(queue) && queues[queue.index].isArbitrated { return true }
    }
    // Looked at even with no queue with keys yet: a dependent added later to one is found so.
    var touches = false
    var budget = 4 * sliceLimit
    for position in bulk.releases.indices {
      var release = bulk.releases[position]
      if release.scanEpoch != arbitrationEpoch {
        // A queue took keys since: what was looked at is looked at again.
        release.scanEpoch = arbitrationEpoch
        release.scannedTo = release.next
        release.lastArbitrated = -1
      }
      release.scannedTo = max(release.scannedTo, release.next)
      while release.scannedTo < release.entries.count, budget > 0 {
        let entry = release.entries[release.scannedTo]
        // A dependent not in a queue yet may be added to one with keys before its release.
        if isUnfinished(entry),
          operations[entry.index].queue < 0 || queues[operations[entry.index].queue].isArbitrated
        {
          release.lastArbitrated = release.scannedTo
        }
        release.scannedTo += 1
        budget -= 1
      }
      bulk.releases[position] = release
      if release.scannedTo < release.entries.count || release.lastArbitrated >= release.next {
        touches = true
      }
    }
    return touches
  }

  /// `index` leaves `queue`'s list: a walk whose next operation it was goes on from `next`.
  @inline(never)  // rare: only while a whole-queue call is in progress
  mutating func advanceWalkCursors(in queue: Int, past index: Int, to next: Int) {
    for position in queues[queue].walkCursors.indices where queues[queue].walkCursors[position].next == index
    {
      queues[queue].walkCursors[position].next = next
    }
  }

  /// Walks on: acts on the next operations of `walk`'s queue within the slice's limit, and ends
  /// the walk once none is left. Stops early when a step left releases or ends, which are done
  /// first.
  private mutating func walkSome(_ walk: BulkWork.Walk, _ effects: inout Effects) {
    let queue = walk.queue.index
    guard isLive(walk.queue),
      let cursor = queues[queue].walkCursors.firstIndex(where: { $0.token == walk.token })
    else {
      // The queue's record was freed (a released queue that finished): nothing left to walk.
      bulk.walks.removeAll { $0.token == walk.token }
      return
    }
    let endsInBulk = walk.kind == .cancel || walk.kind == .release
    isEndingInBulk = endsInBulk
    defer { isEndingInBulk = false }
    var index = queues[queue].walkCursors[cursor].next
    while index >= 0, sliceWork < sliceLimit, bulk.releases.isEmpty, bulk.ends.isEmpty {
      guard operations[index].order <= walk.through else {
        index = -1
        break
      }
      // The cursor moves first: the step may take `index` out of the queue.
      queues[queue].walkCursors[cursor].next = operations[index].nextInQueue
      sliceWork += 1
      switch walk.kind {
      case .cancel:
        cancelOne(index, &effects)
      case .pause:
        pauseOne(index, &effects)
      case .resume:
        resumeOne(index, &effects)
      case .release:
        if operations[index].pauseHeld { letGo(index, &effects) }
        if queues[queue].machine.isSuspended,
          operations[index].phase.hasNotStarted || operations[index].phase.isPausedInBody
        {
          cancelOne(index, &effects)
        }
      }
      // The step may have freed the queue's record (its last operation ended).
      guard isLive(walk.queue) else {
        bulk.walks.removeAll { $0.token == walk.token }
        return
      }
      index = queues[queue].walkCursors[cursor].next
    }
    guard index < 0 else { return }
    queues[queue].walkCursors.remove(at: cursor)
    bulk.walks.removeAll { $0.token == walk.token }
    if walk.kind.stopsStarts { queues[queue].machine.endWalk() }
    touch(queue)
  }
}

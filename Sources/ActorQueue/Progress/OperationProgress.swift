import Synchronization

/// How far one operation has got: what its body reported (``ProgressReporter``), a group's
/// children or a multi-block operation's blocks rolled up, or, for an operation that reports
/// nothing, 0 until it ends.
///
/// **Foundation:** an `Operation` has no progress of its own; `OperationQueue.progress` counts
/// finished operations, and only once `totalUnitCount` is set by hand.
public struct OperationProgress: Sendable, Hashable, CustomStringConvertible {
  /// Units completed (clamped to `total`); for a group, its children that ended.
  public let completed: Int
  /// The units of the whole; `nil` while indeterminate (no total reported, or one of 0 or less).
  public let total: Int?
  /// How much is done, from 0 to 1: `completed / total`, plus the shares' fractions by the units
  /// they stand for; weighted by ``OperationTrait/progressWeight(_:)`` for a group; 0 while
  /// indeterminate; 1 once the operation finished.
  public let fraction: Double
  /// The operation ended (finished, failed or cancelled): nothing changes any more. A failed or
  /// cancelled child counts as complete in its group's roll-up.
  public let isFinished: Bool

  /// A value with these fields, as the library reports them (for tests of code that reads them).
  public init(completed: Int, total: Int?, fraction: Double, isFinished: Bool) {
    self.completed = completed
    self.total = total
    self.fraction = fraction
    self.isFinished = isFinished
  }

  /// `3/10 (30%)`; `0/? (0%)` while indeterminate; ` finished` once ended.
  public var description: String {
    "\(completed)/\(total.map(String.init) ?? "?") (\(Int((fraction * 100).rounded()))%)\(isFinished ? " finished" : "")"
  }

  /// An operation that reported nothing, in `state`.
  static func unreported(_ state: OperationState) -> OperationProgress {
    state == .finished
      ? OperationProgress(completed: 1, total: 1, fraction: 1, isFinished: true)
      : OperationProgress(completed: 0, total: nil, fraction: 0, isFinished: state.isTerminal)
  }
}

/// What an operation's body reports its progress through: a total, units completed, and shares
/// handed to parts of the work. Reports take no lock, only a few atomic instructions (the bench's
/// `progress` row times them), and are read through ``AnyQueueOperation/progress`` and
/// ``AnyQueueOperation/progressUpdates``.
///
/// A body gets one as the argument of ``ActorQueue/addOperation(name:priority:traits:reportingProgress:)``,
/// or from ``current`` inside any body. Bad input is tolerated: `completed` beyond the total is
/// clamped, a total of 0 or less is indeterminate, units of 0 or less complete nothing, and
/// reports after the operation ended are ignored. A retry's new attempt starts from nothing.
///
/// **Foundation:** `Progress` (`totalUnitCount`, `completedUnitCount`, `addChild(_:withPendingUnitCount:)`),
/// which takes a lock on every report and is observed through KVO.
public final class ProgressReporter: Sendable {
  let cell: ProgressCell

  init(_ cell: ProgressCell) {
    self.cell = cell
  }

  /// Sets the total of the current attempt, in units of the body's choosing; 0 or less:
  /// indeterminate.
  @inline(__always)
  public func setTotal(_ units: Int) { cell.setTotal(units) }

  /// Adds `units` completed (1 by default); 0 or less is ignored.
  @inline(__always)
  public func complete(_ units: Int = 1) { cell.complete(units) }

  /// A reporter for one part of the work standing for `units` of this one's total: its fraction,
  /// times `units`, counts as completed here. For a part that reports in its own units (a
  /// download in bytes inside a job counted in files).
  public func subprogress(assigning units: Int) -> ProgressReporter {
    ProgressReporter(cell.share(assigning: units))
  }

  /// What this reporter's part reads as now (for a body that wants to log it).
  public var progress: OperationProgress {
    cell.snapshot(isFinished: cell.ending.load(ordering: .acquiring) != 0)
  }

  /// The reporter of the operation whose body runs on the calling task; `nil` outside a body (or
  /// in a task the body created). Takes the scheduler's lock once: get it once per body, report
  /// through it many times.
  public static var current: ProgressReporter? {
    let address = currentTaskAddress()
    guard address != 0, let found = Engine.read({ $0.operationRunning(onTask: address) }) else { return nil }
    let cell = found.handle.observedProgressCell()
    if cell.attempts.load(ordering: .relaxed) < found.attempt { cell.beginAttempt() }
    return ProgressReporter(cell)
  }
}

extension ActorQueue {
  /// Adds an operation whose body reports its progress through the ``ProgressReporter`` it is
  /// given; otherwise ``addOperation(name:priority:traits:_:)->QueueOperation<Success>``. Read it
  /// with ``AnyQueueOperation/progress`` or follow it with ``AnyQueueOperation/progressUpdates``.
  ///
  /// ```swift
  /// let upload = queue.addOperation(name: "upload") { progress in
  ///   progress.setTotal(chunks.count)
  ///   for chunk in chunks {
  ///     try await send(chunk)
  ///     progress.complete()
  ///   }
  /// }
  /// ```
  ///
  /// Cost: what `addOperation` costs, plus the progress cell (one allocation) and a completion
  /// handler that freezes it at the end. With ``OperationTrait/retry(_:)``, each attempt starts
  /// from nothing.
  @discardableResult
  public nonisolated func addOperation<Success: Sendable>(
    name: String? = nil, priority: OperationPriority = .normal, traits: [OperationTrait] = [],
    reportingProgress body: @escaping @Sendable (ProgressReporter) async throws -> Success
  ) -> QueueOperation<Success> {
    let time = TimeTraits(traits)
    let reporter = ProgressReporter(ProgressCell(weight: time.progressWeight ?? 1))
    return submit(
      name: name, priority: priority, traits: traits, progress: reporter.cell,
      .typed {
        reporter.cell.beginAttempt()
        return try await body(reporter)
      }, as: QueueOperation<Success>.self)
  }
}

extension AnyQueueOperation {
  /// How far the operation has got (see ``OperationProgress``): what its body reported, or its
  /// children's roll-up for a group; for one that reports nothing, 0 until it ends and 1 once it
  /// finished. O(1) under the scheduler's lock (a group: O(its unfinished children)).
  ///
  /// **Foundation:** no per-operation progress; a `Progress` object wired up by hand.
  public var progress: OperationProgress {
    let (state, group) = Engine.read {
      ($0.state(of: recordIndex), $0.groupProgress(ofOperation: recordIndex))
    }
    if var group {
      if state == .finished {
        group = OperationProgress(
          completed: group.completed, total: group.total, fraction: 1, isFinished: true)
      }
      return group
    }
    guard let cell = progressStorage.load() else { return .unreported(state) }
    if state.isTerminal { cell.finish(state) }
    return cell.snapshot(isFinished: state.isTerminal)
  }

  /// The operation's progress, each time it changes: the current progress first, then the newest
  /// after each change, coalesced (a consumer that falls behind gets the latest). Within an
  /// attempt its fraction never goes down (a lower one, after a larger total was set, waits
  /// until it passes the last one given); a retry's attempt starts again from 0. The stream
  /// finishes after the value with `isFinished`.
  ///
  /// Each access creates a new subscriber, which keeps the operation's handle until the stream
  /// finishes or is released. Cost: nothing on the report path while nobody follows; while one
  /// does, a wake-up per report.
  public var progressUpdates: AsyncStream<OperationProgress> {
    let cell = observedProgressCell()
    let follower = ProgressFollower(operation: self, cell: cell)
    return AsyncStream(unfolding: { await follower.next() })
  }

  /// Gives the operation `cell`, unless it has one (its reporter's, or a weight's).
  func attachProgress(_ cell: ProgressCell) {
    if progressStorage.storeIfNil(cell) === cell {
      Engine.mutate { [recordIndex] in $0.tieProgress(cell, of: recordIndex) }
    }
  }

  /// Its progress cell, made (and tied to the end of the operation and to its group) if it has
  /// none yet.
  func observedProgressCell() -> ProgressCell {
    if let cell = progressStorage.load() { return cell }
    let made = ProgressCell()
    let cell = progressStorage.storeIfNil(made)
    if cell === made { Engine.mutate { [recordIndex] in $0.tieProgress(cell, of: recordIndex) } }
    return cell
  }
}

/// One `progressUpdates` stream's consumer side.
private final class ProgressFollower: Sendable {
  private struct State {
    var last: OperationProgress?
    var attempt = 0
    var done = false
  }

  let operation: AnyQueueOperation
  let cell: ProgressCell
  private let state = LockedValue(State())

  init(operation: AnyQueueOperation, cell: ProgressCell) {
    self.operation = operation
    self.cell = cell
    cell.watchers.wrappingAdd(1, ordering: .relaxed)
  }

  deinit { cell.watchers.wrappingSubtract(1, ordering: .relaxed) }

  func next() async -> OperationProgress? {
    while true {
      let seen = cell.currentVersion
      let now = operation.progress
      let attempt = cell.attempts.load(ordering: .relaxed)
      let give: Bool? = state.withLock { state in
        if state.done { return nil }
        guard let last = state.last, !now.isFinished, attempt == state.attempt else {
          state.last = now
          state.attempt = attempt
          state.done = now.isFinished
          return true
        }
        if now == last || now.fraction < last.fraction { return false }
        state.last = now
        return true
      }
      switch give {
      case nil: return nil
      case true?: return now
      case false?: if await !cell.waitForChange(after: seen) { return nil }
      }
    }
  }
}

extension Scheduler {
  /// The operation whose body runs on the task at `address`, and its attempts so far.
  func operationRunning(onTask address: Int) -> (handle: Handle, attempt: Int)? {
    guard let (_, index) = bodyRunning(onTask: address), let handle = operations[index].enqueuedHandle else {
      return nil
    }
    return (handle, max(attemptCount(of: index), 1))
  }

  /// Gives `operation`, just made under this lock, `cell`.
  mutating func attachProgress(_ cell: ProgressCell, to operation: Handle) {
    if operation.progressStorage.storeIfNil(cell) === cell { tieProgress(cell, of: operation.recordIndex) }
  }

  /// Ties `cell`, just made for `index`, to the operation's end (it freezes then) and to its
  /// group, if it is a child of one.
  mutating func tieProgress(_ cell: ProgressCell, of index: Int) {
    if operations[index].phase.hasEnded {
      cell.finish(operations[index].phase.state)
      return
    }
    operations[index].completionHandlers.append { outcome in
      switch outcome {
      case .success: cell.finish(.finished)
      case .failure(let error): cell.finish(error is CancellationError ? .cancelled : .failed)
      }
    }
    let queue = operations[index].queue
    if queue >= 0, queues[queue].isGroup { linkToGroup(cell, in: queue) }
  }

  /// A new child's cell, if it has one, tells its group's streams of its changes.
  mutating func linkChildProgress(_ index: Int, in queue: Int) {
    guard let cell = operations[index].enqueuedHandle?.progressStorage.load() else { return }
    linkToGroup(cell, in: queue)
  }

  private mutating func linkToGroup(_ cell: ProgressCell, in queue: Int) {
    guard let handle = groupHandle(of: queue) else { return }
    let made = ProgressCell()
    let groupCell = handle.progressStorage.storeIfNil(made)
    if groupCell === made { tieProgress(groupCell, of: handle.recordIndex) }
    cell.setParent(groupCell)
  }

  /// A child of the group of `queue` ended: its weight counts as complete from now on, and the
  /// group's streams hear it.
  mutating func noteChildEnded(_ index: Int, in queue: Int, _ effects: inout Effects) {
    let weight = operations[index].enqueuedHandle?.progressStorage.load()?.weight ?? 1
    guard let (group, id) = groupRecords[queue]?.countEnded(weight: weight),
      hasOperationRecord(group, id: id),
      let groupCell = operations[group].enqueuedHandle?.progressStorage.load(),
      groupCell.watchers.load(ordering: .relaxed) > 0
    else { return }
    effects.complete { groupCell.wake() }
  }

  /// If `index` is a group's operation with a cell, the cell keeps the roll-up of this moment to
  /// end with (its group's record may be freed before it ends). The children have all ended when
  /// the group ends or its record goes, so the moment is theirs.
  @inline(never)
  func keepGroupProgress(of index: Int) {
    guard let cell = operations[index].enqueuedHandle?.progressStorage.load(),
      let rollUp = groupProgress(ofOperation: index)
    else { return }
    cell.keepRollUp(rollUp)
  }

  /// The handle of the group operation of `queue`, while it is unfinished.
  private func groupHandle(of queue: Int) -> Handle? {
    guard let record = groupRecords[queue], hasOperationRecord(record) else { return nil }
    return operations[record.operation].enqueuedHandle
  }

  /// Whether `group`'s operation still has its record: once it ended and its handle went, the
  /// record is freed, and its index may be reused or gone with the storage.
  func hasOperationRecord(_ group: GroupRecord) -> Bool {
    hasOperationRecord(group.operation, id: group.operationID)
  }

  /// Whether record `index` exists, is live and is operation `id`'s.
  func hasOperationRecord(_ index: Int, id: OperationID) -> Bool {
    index < operations.count && operations[index].isLive && operations[index].id == id
  }

  /// The roll-up of the group whose operation is `index`: its children by weight, the ended ones
  /// as complete; `nil` if `index` is no group's operation. O(groups + unfinished children).
  func groupProgress(ofOperation index: Int) -> OperationProgress? {
    guard liveGroups > 0 || !groupRecords.isEmpty,
      let (queue, record) = groupRecords.first(where: {
        $0.value.operation == index && $0.value.operationID == operations[index].id
      })
    else { return nil }
    var weight = record.endedWeight
    var done = Double(record.endedWeight)
    var children = record.endedChildren
    var child = queues[queue].first
    while child >= 0 {
      let cell = operations[child].enqueuedHandle?.progressStorage.load()
      let childWeight = cell?.weight ?? 1
      weight += childWeight
      done += Double(childWeight) * (cell?.fraction ?? 0)
      children += 1
      child = operations[child].nextInQueue
    }
    return OperationProgress(
      completed: record.endedChildren, total: children > 0 ? children : nil,
      fraction: weight > 0 ? min(done / Double(weight), 1) : 0, isFinished: operations[index].phase.hasEnded)
  }
}

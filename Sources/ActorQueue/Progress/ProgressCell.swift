import Synchronization

/// One operation's progress (or one share of it, from ``ProgressReporter/subprogress(assigning:)``):
/// what its reporters write and its readers read. The report path touches atomics only, never a
/// lock; a reader takes this cell's list of shares (a leaf lock) when it has some.
final class ProgressCell: Sendable {
  /// Units completed in the current attempt (never below 0).
  let completed = Atomic<Int>(0)
  /// The attempt's total; 0 or less: indeterminate.
  let total = Atomic<Int>(0)
  /// Non-zero once the operation ended: reports are ignored, readers read `final`.
  let ending = Atomic<Int>(0)
  /// What the cell reads as after the end, taken once.
  private let final = LockedValue<OperationProgress?>(nil)
  /// A group operation's children rolled up, kept when its group's record goes: what it ends as.
  private let rollUp = LockedValue<OperationProgress?>(nil)
  /// Attempts begun (a retry's new attempt starts from nothing).
  let attempts = Atomic<Int>(0)
  /// Its weight among a group's children (``OperationTrait/progressWeight(_:)``).
  let weight: Int
  /// The units of its parent's total it stands for, when it is a share.
  let units: Int
  /// Where a change is also told: the share's reporter, or the operation group the operation is a
  /// child of. Set once.
  let parent = LazyReference<ProgressCell>()
  /// `parent` is set: a report reads this flag, not the reference (a load of which retains it).
  private let hasParent = Atomic<Bool>(false)
  /// Its shares, for the roll-up; `hasShares` spares readers the lock when there are none.
  private let shares = LockedValue<[ProgressCell]>([])
  private let hasShares = Atomic<Bool>(false)
  /// Progress streams following this cell; reports wake them only while there are some.
  let watchers = Atomic<Int>(0)
  /// Bumped on each change while watched; a stream waits for it to move.
  private let version = Atomic<UInt64>(0)
  private let waiters = LockedValue<[UInt64: CheckedContinuation<Bool, Never>]>([:])
  private let nextWaiter = Atomic<UInt64>(0)

  init(weight: Int = 1, units: Int = 0) {
    self.weight = weight
    self.units = units
  }

  // MARK: Reports (no lock)
  // A report after the end changes counters nobody reads any more: reads then return `final`.

  @inline(__always)
  func setTotal(_ units: Int) {
    total.store(units, ordering: .relaxed)
    changed()
  }

  @inline(__always)
  func complete(_ units: Int) {
    guard units > 0 else { return }
    completed.wrappingAdd(units, ordering: .relaxed)
    changed()
  }

  /// Tells the streams of this cell and of its parents, if any follow them.
  @inline(__always)
  private func changed() {
    if watchers.load(ordering: .relaxed) > 0 { wake() }
    if hasParent.load(ordering: .relaxed) { parent.load()?.childChanged() }
  }

  /// ``changed()`` for a parent, out of the report's line.
  @inline(never)
  private func childChanged() { changed() }

  /// Ties this cell to `parent` (a share's reporter, or its operation's group), once.
  func setParent(_ parent: ProgressCell) {
    _ = self.parent.storeIfNil(parent)
    hasParent.store(true, ordering: .releasing)
  }

  /// A new attempt: what the last one reported is dropped.
  func beginAttempt() {
    attempts.wrappingAdd(1, ordering: .relaxed)
    guard ending.load(ordering: .relaxed) == 0 else { return }
    completed.store(0, ordering: .relaxed)
    total.store(0, ordering: .relaxed)
    shares.withLock { $0 = [] }
    hasShares.store(false, ordering: .relaxed)
    changed()
  }

  /// A share standing for `units` of this cell's total.
  func share(assigning units: Int) -> ProgressCell {
    let share = ProgressCell(units: max(units, 0))
    share.setParent(self)
    shares.withLock { $0.append(share) }
    hasShares.store(true, ordering: .releasing)
    return share
  }

  // MARK: Reads

  /// Its fraction now, 0 to 1 (0 while indeterminate); 1 once it ended finished.
  var fraction: Double { snapshot(isFinished: false).fraction }

  /// What it reads as now; `isFinished` is the operation's (a share's is its parent's).
  func snapshot(isFinished: Bool) -> OperationProgress {
    if ending.load(ordering: .acquiring) != 0, let final = final.withLock({ $0 }) { return final }
    let total = total.load(ordering: .relaxed)
    var completed = completed.load(ordering: .relaxed)
    guard total > 0 else {
      return OperationProgress(completed: completed, total: nil, fraction: 0, isFinished: isFinished)
    }
    completed = min(completed, total)
    var done = Double(completed)
    if hasShares.load(ordering: .acquiring) {
      for share in shares.withLock({ $0 }) { done += share.fraction * Double(share.units) }
    }
    return OperationProgress(
      completed: completed, total: total, fraction: min(done / Double(total), 1), isFinished: isFinished)
  }

  /// The operation ended in `state`: later reports are ignored, and it reads as it did now (a
  /// finished one as complete). The first call decides.
  func finish(_ state: OperationState) {
    guard ending.load(ordering: .acquiring) == 0 else { return }
    let live = rollUp.withLock { $0 } ?? snapshot(isFinished: true)
    let finished = state == .finished
    finish(
      as: OperationProgress(
        completed: finished ? live.total ?? max(live.completed, 1) : live.completed, total: live.total,
        fraction: finished ? 1 : live.fraction, isFinished: true))
  }

  /// Keeps a group operation's roll-up for its end (its group's record may go first).
  func keepRollUp(_ progress: OperationProgress) {
    rollUp.withLock { $0 = progress }
  }

  private func finish(as ended: OperationProgress) {
    final.withLock { if $0 == nil { $0 = ended } }
    ending.store(1, ordering: .releasing)
    wake()
    if hasParent.load(ordering: .relaxed) { parent.load()?.childChanged() }
  }

  // MARK: Streams

  /// Wakes every stream waiting for a change.
  func wake() {
    version.wrappingAdd(1, ordering: .releasing)
    let woken = waiters.withLock { waiters in
      defer { waiters = [:] }
      return Array(waiters.values)
    }
    for waiter in woken { waiter.resume(returning: true) }
  }

  /// The version to wait past.
  var currentVersion: UInt64 { version.load(ordering: .acquiring) }

  /// Waits until the cell changed after `seen`; `false` when the calling task is cancelled.
  func waitForChange(after seen: UInt64) async -> Bool {
    let id = nextWaiter.wrappingAdd(1, ordering: .relaxed).newValue
    return await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let now: Bool? = waiters.withLock { waiters in
          if version.load(ordering: .acquiring) != seen { return true }
          // Read under the lock the cancellation handler takes: one of the two sees the other.
          if Task.isCancelled { return false }
          waiters[id] = continuation
          return nil
        }
        if let now { continuation.resume(returning: now) }
      }
    } onCancel: {
      waiters.withLock { $0.removeValue(forKey: id) }?.resume(returning: false)
    }
  }
}

/// What each running body (or condition) awaits, for ``ActorQueueTesting``'s `settle()`: a body
/// that awaits an operation or a queue that cannot move without the clock counts as still, not
/// as moving. Kept only while a manual clock exists (a test): production waits register nothing.
///
/// An entry is keyed by the awaiting operation's record and names its identifier, so an entry of
/// a record reused by another operation is stale and ignored. An entry is never removed when its
/// wait ends: the awaited operation has ended (or the queue emptied) by then, which tells
/// `settle()` that the body is moving again, and the body's next wait replaces it.
struct AwaitRegistry: Sendable {
  /// What one body awaits.
  struct Entry: Sendable {
    /// The awaiting operation, and the task its body runs on.
    let awaiter: OperationID
    let task: Int
    let target: Target
  }

  enum Target: Sendable {
    /// `value`, `result`, `waitUntilFinished()` of an operation (its record and identifier);
    /// `timed`: `waitUntilFinished(timeout:)`, which ends when its clock passes the timeout.
    case operation(index: Int, id: OperationID, timed: Bool)
    /// `waitUntilAllOperationsAreFinished()` of a queue (a group's body waits for its children so).
    case queue(Int)
  }

  private var entries: [Int: Entry] = [:]

  /// `awaiter`, record `index`, running on `task`, now awaits `target`.
  mutating func note(_ index: Int, awaiter: OperationID, task: Int, awaits target: Target) {
    entries[index] = Entry(awaiter: awaiter, task: task, target: target)
  }

  /// What the operation of record `index`, identified `id`, last registered awaiting.
  func entry(of index: Int, id: OperationID) -> Entry? {
    guard let entry = entries[index], entry.awaiter == id else { return nil }
    return entry
  }
}

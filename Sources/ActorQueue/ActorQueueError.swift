/// Misuse of a queue or an operation that ActorQueue refuses, leaving everything as it was.
///
/// Match it by its static members, as you would an enum case, wherever the error is an
/// `any Error`:
///
/// ```swift
/// do {
///   try parse.addDependency(fetch)
/// } catch ActorQueueError.dependencyCycle {
///   // the edge would make an operation wait for itself; nothing changed
/// } catch ActorQueueError.alreadyStarted {
///   // parse has started; add dependencies before adding it to a queue
/// }
/// ```
///
/// `switch error { case ActorQueueError.alreadyEnqueued: … }` works the same way, and so do
/// `catch let error as ActorQueueError where error == .alreadyEnqueued` and, in a Swift Testing
/// suite, `#expect(throws: ActorQueueError.dependencyCycle) { … }`. It is a struct with static
/// members rather than an enum so that new codes may be added without breaking your code (a
/// `switch` over it needs a `default`). ``description`` says what to do instead.
///
/// Two errors are equal when their codes are: what a refused dependency carries beyond its code
/// (the operations on the ``cycle``) takes no part in `==` or in matching.
public struct ActorQueueError: Error, Equatable, Sendable, CustomStringConvertible {
  private enum Code: Equatable, Sendable {
    case dependencyCycle
    case alreadyEnqueued
    case alreadyStarted
    case joinedSharedWork
    case groupEnded
    case awaitsItself
  }

  private let code: Code

  /// For ``dependencyCycle``, thrown by a refused call: the operations on the cycle the refused
  /// edge would have closed, in order, each waiting for the next and the last for the first.
  ///
  /// The first is the operation that was to wait (the one `addDependency` was called on, or the
  /// operation added to a queue whose unfinished barrier already waits for it); the second is
  /// what it was to wait for (the dependency, or that barrier); then each operation that one
  /// already waits for, up to one that waits for the first. A dependency on itself is a cycle
  /// of one. The members may be in several queues, and may include barriers and coalesced work
  /// that no caller holds a handle to (``CycleMember/isSharedWork``).
  ///
  /// For ``awaitsItself``, thrown by a refused wait: the operation whose body (or condition) made
  /// the wait, then what it awaited when that is another operation (its group, or the handle of
  /// its own shared work).
  ///
  /// Empty for every other code, and for the static values you match against.
  public let cycle: [CycleMember]

  private init(_ code: Code, cycle: [CycleMember] = []) {
    self.code = code
    self.cycle = cycle
  }

  /// Compares the codes only: a thrown ``dependencyCycle`` equals the static one, whatever its
  /// ``cycle``.
  public static func == (lhs: ActorQueueError, rhs: ActorQueueError) -> Bool {
    lhs.code == rhs.code
  }

  /// `addDependency` would close a cycle (an operation waiting on itself, directly or not).
  /// Foundation hangs both operations forever instead.
  ///
  /// The error thrown names the operations on the cycle, in its ``cycle`` and its
  /// ``description``; it still matches this value (`catch ActorQueueError.dependencyCycle`).
  public static let dependencyCycle = ActorQueueError(.dependencyCycle)

  /// A ``dependencyCycle`` that names the operations on the cycle, in order.
  static func dependencyCycle(_ cycle: [CycleMember]) -> ActorQueueError {
    ActorQueueError(.dependencyCycle, cycle: cycle)
  }

  /// A body or a condition awaited its own operation (``QueueOperation/value``,
  /// ``QueueOperation/result``, ``QueueOperation/cancellableValue``), a coalesced handle of its
  /// own shared work, or, as a group's child, its own group: a wait nothing could end. Thrown at
  /// once instead of hanging (`result` returns it as its failure); the non-throwing
  /// `waitUntilFinished()` and `waitUntilFinished(timeout:)` stop the program with this message.
  /// Foundation hangs the thread instead. Detected for the body's own task, not for a child task
  /// or an unstructured task it created.
  public static let awaitsItself = ActorQueueError(.awaitsItself)
  /// An ``awaitsItself`` that names the operations.
  static func awaitsItself(_ members: [CycleMember]) -> ActorQueueError {
    ActorQueueError(.awaitsItself, cycle: members)
  }
  /// An operation was added to a queue (this one or another) a second time, or twice in one call.
  public static let alreadyEnqueued = ActorQueueError(.alreadyEnqueued)

  /// A dependency was added to an operation that has already started or ended (also one that
  /// ended without starting: cancelled, or an input it required failed).
  public static let alreadyStarted = ActorQueueError(.alreadyStarted)

  /// A dependency was added to a handle that joined coalesced work
  /// (``ActorQueue/addOperation(name:priority:coalescingBy:_:)``): the shared work started, or
  /// may start, for the callers that joined it before, so no caller's dependency can hold it
  /// back.
  public static let joinedSharedWork = ActorQueueError(.joinedSharedWork)

  /// An operation was added to the queue of an operation group (``OperationGroup/queue``) after
  /// the group had ended: a group ends once its last child has, and takes no child after that.
  /// (ProcedureKit's `GroupProcedure` accepted the child and never ran it.)
  public static let groupEnded = ActorQueueError(.groupEnded)

  /// What went wrong and what to do instead.
  public var description: String {
    switch code {
    case .dependencyCycle where cycle.isEmpty:
      "ActorQueueError.dependencyCycle: this dependency would make an operation wait for itself; "
        + "nothing was changed. Remove one of the edges that form the cycle."
    case .dependencyCycle:
      "ActorQueueError.dependencyCycle: this dependency would make an operation wait for itself; "
        + "nothing was changed. The cycle, the refused edge first (\"→\": waits for): "
        + (cycle + [cycle[0]]).map(\.description).joined(separator: " → ")
        + ". Remove one of the other edges first (a barrier's ordering, and a handle's wait for "
        + "its shared work, stay until they end)."
    case .alreadyEnqueued:
      "ActorQueueError.alreadyEnqueued: an operation runs at most once and belongs to one queue; "
        + "nothing was enqueued. Create a new operation for each run."
    case .alreadyStarted:
      "ActorQueueError.alreadyStarted: dependencies can only be added before an operation starts or "
        + "ends; nothing was changed. Add dependencies before adding the operation to a queue, or while "
        + "the queue is suspended."
    case .joinedSharedWork:
      "ActorQueueError.joinedSharedWork: this handle joined work shared by every caller of its "
        + "coalescing key, which no single caller's dependency may hold back; nothing was changed. "
        + "Make the shared work wait inside its body, or add the dependency to an operation that "
        + "runs after this one."
    case .awaitsItself where cycle.isEmpty:
      "ActorQueueError.awaitsItself: a body or condition awaited its own operation, which cannot end before "
        + "the wait does. Return the value instead, or await the work from outside the operation."
    case .awaitsItself:
      "ActorQueueError.awaitsItself: the body or condition of \(cycle[0]) awaited "
        + (cycle.count == 1 ? "its own operation" : "\(cycle[cycle.count - 1])")
        + ", which cannot end before the wait does. Return the value instead, or await the work from outside "
        + "the operation (a group's child: let the group's caller await the group)."
    case .groupEnded:
      "ActorQueueError.groupEnded: this operation group has ended (its last child had ended), so it takes no "
        + "child; nothing ran. Add children from the group's build closure or from a child that is still "
        + "running, or start a new group."
    }
  }
}

extension ActorQueueError {
  /// An operation on the cycle a refused dependency would have closed (``ActorQueueError/cycle``).
  public struct CycleMember: Sendable, Hashable, CustomStringConvertible {
    /// The operation's identifier, as in ``AnyQueueOperation/id`` and ``QueueEvent``s.
    public let id: OperationID
    /// The operation's name, if it has one.
    public let name: String?
    /// Whether this is the work shared by the callers of
    /// ``ActorQueue/addOperation(name:priority:coalescingBy:_:)``, which is named by its first
    /// caller: no caller holds a handle to it (each holds a handle that waits for it), and it is
    /// reachable only through ``ActorQueue/operations``.
    public let isSharedWork: Bool

    /// `'name' (op#N)`, `op#N` without a name; shared work reads `shared work 'name' (op#N)`.
    public var description: String {
      let operation = name.map { "'\($0)' (\(id))" } ?? "\(id)"
      return isSharedWork ? "shared work \(operation)" : operation
    }
  }

  /// Whether `error` is an `ActorQueueError` with this code: what makes
  /// `catch ActorQueueError.dependencyCycle` and `case ActorQueueError.alreadyEnqueued:` match
  /// an `any Error`. An error of any other type never matches.
  public static func ~= (pattern: ActorQueueError, error: any Error) -> Bool {
    (error as? ActorQueueError) == pattern
  }
}

/// The error of an operation that never ran because an input it required did not finish.
///
/// A data dependency (``ActorQueue/addOperation(name:priority:after:_:operation:)``) or an
/// ordering dependency added with ``DependencyRequirement/success`` ends its dependent with this
/// error when the input failed. (When the input was cancelled, the dependent is cancelled.)
/// It propagates transitively, and flat: three steps down a chain, the error names the input
/// that failed for this operation and carries the error of the operation where the failure
/// began (its ``originID``), never an error nested three deep — so a failure at the head of a
/// 100,000-operation chain costs no deeper structure than one at its tail.
///
/// It carries data rather than a code, so match it by its type and its fields:
///
/// ```swift
/// do {
///   let image = try await filtered.value
/// } catch let failure as DependencyFailedError where failure.underlyingError is URLError {
///   showOffline()   // the download at the head of the pipeline failed
/// } catch let failure as DependencyFailedError {
///   print("\(failure.originName ?? "an input") failed: \(failure.underlyingError)")
/// }
/// ```
///
/// In a Swift Testing suite: `#expect(throws: DependencyFailedError.self) { … }`.
public struct DependencyFailedError: Error, Sendable, CustomStringConvertible {
  /// The input of this operation that did not finish.
  public let dependencyID: OperationID
  /// That input's name, if it had one.
  public let dependencyName: String?
  /// The operation whose body failed, where the failure began (`dependencyID` itself when the
  /// input failed on its own).
  public let originID: OperationID
  /// The origin's name, if it had one.
  public let originName: String?
  /// The error the origin's body threw (never a `DependencyFailedError`).
  public let underlyingError: any Error

  /// The error for a dependent of the input `inputID`, which ended with `failure`.
  init(inputID: OperationID, inputName: String?, failure: any Error) {
    dependencyID = inputID
    dependencyName = inputName
    if let inherited = failure as? DependencyFailedError {
      originID = inherited.originID
      originName = inherited.originName
      underlyingError = inherited.underlyingError
    } else {
      originID = inputID
      originName = inputName
      underlyingError = failure
    }
  }

  /// Names the input, and the origin when it is another operation, and the error.
  public var description: String {
    let input = "dependency \(dependencyName.map { "'\($0)' " } ?? "")(\(dependencyID)) failed"
    guard originID != dependencyID else { return "\(input): \(underlyingError)" }
    return "\(input) because \(originName.map { "'\($0)' " } ?? "")(\(originID)) failed: \(underlyingError)"
  }
}

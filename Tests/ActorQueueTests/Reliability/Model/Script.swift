/// A script for the model-based random tester: a list of steps over 2–3 queues, each step one
/// public action. Operations are named by the index of the step that created them (`op`), queues
/// by their index in ``queueLimits``. A step that refers to something a shrunk script no longer
/// creates is skipped by the model (and so by every executor): any subsequence of a script is a
/// valid script.
struct Script: Codable, Sendable, CustomStringConvertible {
  var seed: UInt64
  /// Initial `maxConcurrentOperationCount` of each queue (-1: unlimited).
  var queueLimits: [Int]
  var steps: [Step]

  var description: String {
    var lines = ["script seed \(seed), queues (limits) \(queueLimits):"]
    for (index, step) in steps.enumerated() { lines.append("  \(index): \(step)") }
    return lines.joined(separator: "\n")
  }
}

/// How an operation's body behaves. Every body first waits for its own gate, which only the
/// executor opens (a script step, or at once when the op is `auto` or already opened and the
/// model says it is executing): so which ops run at the same time is decided by the script alone.
struct BodySpec: Codable, Sendable, Hashable, CustomStringConvertible {
  /// Ends as soon as it starts (the executor opens its gate when the model starts it).
  var auto: Bool
  /// After its gate: `try Task.checkCancellation()`.
  var checksCancellation: Bool
  /// After its gate: throws ``ScriptError`` instead of returning a value.
  var throwing: Bool
  /// The body captures the box that owns this queue (index), keeping it alive while the body is.
  var capturesQueue: Int?
  /// An `onCompletion` handler that captures the box that owns this queue (index).
  var handlerCapturesQueue: Int?

  /// The queues whose owner box this op keeps alive until it ends.
  var captures: [Int] { [capturesQueue, handlerCapturesQueue].compactMap { $0 } }

  var description: String {
    var text = auto ? "auto" : "gated"
    if checksCancellation { text += "+checks" }
    text += throwing ? " throws" : " returns"
    if let capturesQueue { text += " captures q\(capturesQueue)" }
    if let handlerCapturesQueue { text += " handler captures q\(handlerCapturesQueue)" }
    return text
  }
}

struct PreparedSpec: Codable, Sendable, Hashable {
  var op: Int
  var priority: Int
  var body: BodySpec
}

/// One public action.
enum Step: Codable, Sendable, Hashable, CustomStringConvertible {
  /// `queue.addOperation(priority:) { body }`
  case add(op: Int, queue: Int, priority: Int, body: BodySpec)
  /// `queue.addOperation(after: inputs...) { values in body }` (one or two inputs)
  case addAfter(op: Int, queue: Int, priority: Int, inputs: [Int], body: BodySpec)
  /// `QueueOperation(...)` for each, the listed dependencies between them (and to existing ops)
  /// added with `addDependency` before submission, then `addOperation(_:)` (one) or
  /// `addOperations(_:)` (several).
  case batch(queue: Int, ops: [PreparedSpec], dependencies: [Dependency])
  /// `queue.addBarrierBlock { body }`
  case barrier(op: Int, queue: Int, body: BodySpec)
  /// `dependent.addDependency(dependency, requiring: mustSucceed ? .success : .completion)`
  case depend(Dependency)
  /// `dependent.removeDependency(dependency)`
  case undepend(dependent: Int, dependency: Int)
  /// `queue.addOperation(op)` of an op already added: must throw `.alreadyEnqueued`.
  case addAgain(op: Int, queue: Int)
  case cancel(op: Int)
  case cancelAll(queue: Int)
  case setLimit(queue: Int, limit: Int)
  case setSuspended(queue: Int, suspended: Bool)
  case setPriority(op: Int, priority: Int)
  /// Opens the op's gate (if it is executing it ends now; if waiting, it ends as soon as it starts).
  case open(op: Int)
  /// The script drops its strong reference to the op (it keeps its gate).
  case dropHandle(op: Int)
  /// The script drops its strong reference to the queue's owner box.
  case releaseQueue(queue: Int)

  var description: String {
    switch self {
    case .add(let op, let queue, let priority, let body):
      "op\(op) = q\(queue).addOperation(priority: \(priority.priorityName)) { \(body) }"
    case .addAfter(let op, let queue, let priority, let inputs, let body):
      "op\(op) = q\(queue).addOperation(priority: \(priority.priorityName), after: "
        + inputs.map { "op\($0)" }.joined(separator: ", ") + ") { \(body) }"
    case .batch(let queue, let ops, let dependencies):
      "q\(queue).addOperations(["
        + ops.map { "op\($0.op) \($0.priority.priorityName) { \($0.body) }" }.joined(separator: ", ")
        + "]) with " + dependencies.map(\.description).joined(separator: ", ")
    case .barrier(let op, let queue, let body): "op\(op) = q\(queue).addBarrierBlock { \(body) }"
    case .depend(let dependency): "try \(dependency)"
    case .undepend(let dependent, let dependency): "op\(dependent).removeDependency(op\(dependency))"
    case .addAgain(let op, let queue): "try q\(queue).addOperation(op\(op)) (again)"
    case .cancel(let op): "op\(op).cancel()"
    case .cancelAll(let queue): "q\(queue).cancelAllOperations()"
    case .setLimit(let queue, let limit): "q\(queue).maxConcurrentOperationCount = \(limit)"
    case .setSuspended(let queue, let suspended): "q\(queue).isSuspended = \(suspended)"
    case .setPriority(let op, let priority): "op\(op).queuePriority = \(priority.priorityName)"
    case .open(let op): "open gate of op\(op)"
    case .dropHandle(let op): "drop handle op\(op)"
    case .releaseQueue(let queue): "release q\(queue)"
    }
  }
}

struct Dependency: Codable, Sendable, Hashable, CustomStringConvertible {
  var dependent: Int
  var dependency: Int
  var mustSucceed: Bool

  var description: String {
    "op\(dependent).addDependency(op\(dependency)\(mustSucceed ? ", requiring: .success" : ""))"
  }
}

/// The error a throwing script body throws.
struct ScriptError: Error, Equatable {
  var op: Int
}

extension Int {
  /// Scripts store priorities as indices into `OperationPriority.allCases` (veryLow ... veryHigh).
  var priorityName: String { ["veryLow", "low", "normal", "high", "veryHigh"][self] }
}

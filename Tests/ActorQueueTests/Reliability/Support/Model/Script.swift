@testable import ActorQueue

/// A script for the model-based random tester: a list of steps over 2–3 queues, each step one
/// public action. Its queues share one manual clock, at zero when the script starts. Operations are named by the index of the step that created them (`op`), queues
/// by their index in ``queueLimits``. A step that refers to something a shrunk script no longer
/// creates is skipped by the model (and so by every executor): any subsequence of a script is a
/// valid script.
struct Script: Codable, Sendable, CustomStringConvertible {
  var seed: UInt64
  /// Initial `maxConcurrentOperationCount` of each queue (-1: unlimited).
  var queueLimits: [Int]
  var steps: [Step]
  /// The rate limiters its queues may list (`setLimiters`), on its manual clock; nil in scripts
  /// printed before there were any.
  var limiters: [LimiterSpec]?

  var description: String {
    var lines = ["script seed \(seed), queues (limits) \(queueLimits), limiters \(limiters ?? []):"]
    for (index, step) in steps.enumerated() { lines.append("  \(index): \(step)") }
    return lines.joined(separator: "\n")
  }
}

/// How an operation's body behaves. A body is a row of stages, each behind a permit of its own
/// that only the executor gives (when a script step opened it, or at once when the op is
/// `auto`, and only when the model says the body may move): so which ops run at the same time,
/// where each body is and in which order they end is decided by the script alone.
///
/// The stages: a permit, then for each of ``checkpoints`` `try await ActorQueue.checkpoint()`
/// (the body reports each one it passes, so the executor can wait for it) and another permit;
/// then the end. A checkpoint that throws (the op was cancelled) makes the body wait for one more
/// permit before it rethrows, so that the ends of several paused bodies cancelled in one step
/// come in the model's order.
struct BodySpec: Codable, Sendable, Hashable, CustomStringConvertible {
  /// Every permit is given as soon as the body may move (the script opens none of them).
  var auto: Bool
  /// How many checkpoints (0–2) the body passes, each behind its own permit.
  var checkpoints: Int = 0
  /// Its checkpoints are `checkpoint(onPause:onResume:)`: the executor counts the handlers' runs.
  var pauseHandlers = false
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
    if checkpoints > 0 { text += "+\(checkpoints) checkpoint\(checkpoints == 1 ? "" : "s")" }
    if pauseHandlers { text += " with onPause/onResume" }
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
  /// Gives the op's body its next permit (it moves when the model says it may: it reaches its next
  /// checkpoint, or its end).
  case open(op: Int)
  /// Gives the op's body every permit it has left (the drain's open).
  case openFully(op: Int)
  /// `op.pause()`
  case pause(op: Int)
  /// `op.resume()`
  case resume(op: Int)
  /// `queue.pauseAllOperations()`
  case pauseAll(queue: Int)
  /// `queue.resumeAllOperations()`
  case resumeAll(queue: Int)
  /// `queue.setMaxConcurrentOperationCount(limit, pausingExcess: true)`
  case setLimitPausingExcess(queue: Int, limit: Int)
  /// `op = queue.addOperation(priority:, coalescingBy: key) { body }`: joins the work of `key`
  /// waiting or executing in `queue`, or adds it as new shared work, a model op of its own named
  /// `work` (the body is the work's; a caller that joins drops it).
  /// With `tags`, the call's `traits: [.tags(...)]` (the script's tags by number): the caller's
  /// handle carries them, and so does new shared work.
  case addCoalesced(
    op: Int, work: Int, queue: Int, priority: Int, key: Int, body: BodySpec, tags: [Int]? = nil)
  /// The script drops its strong reference to the op (it keeps its gate).
  case dropHandle(op: Int)
  /// The script drops its strong reference to the queue's owner box.
  case releaseQueue(queue: Int)
  /// `queue.addOperation(priority:, traits: [.deadline(in: .seconds(deadline)), .timeout(.seconds(timeout))])
  /// { body }`, each trait only when given, on the script's manual clock.
  case addTimed(op: Int, queue: Int, priority: Int, deadline: Int?, timeout: Int?, body: BodySpec)
  /// `clock.advance(by: .seconds(seconds))` of the script's manual clock (every queue's).
  case advance(seconds: Int)
  /// `queue.addOperation(priority:, traits: [.retry(.attempts(attempts, backoff: .constant(.seconds(backoff)),
  /// jitter: .none))] + the time traits) { body }`: its body throws ``ScriptError`` on its first
  /// `failures` attempts, then does what `body` says.
  case addRetrying(op: Int, queue: Int, priority: Int, retry: RetrySpec, body: BodySpec)
  /// `queue.addOperation(priority:, traits: [.exclusive(keys..., in: shared ? domain : nil)]) { body }`:
  /// keys numbered 0 to 2, in the script's one shared domain or the queue's own.
  case addExclusive(op: Int, queue: Int, priority: Int, keys: [Int], shared: Bool, body: BodySpec)
  /// `queue.rateLimiters = [limiters...]`: the script's limiters by number (a repeat counts once).
  case setLimiters(queue: Int, limiters: [Int])
  /// `queue.addOperation(priority:, traits: [.cost(cost)]) { body }`
  case addCosted(op: Int, queue: Int, priority: Int, cost: Int, body: BodySpec)
  /// `limiter.penalize(for: .seconds(seconds))`
  case penalize(limiter: Int, seconds: Int)
  /// `queue.addOperation(priority:, traits: [.exclusive(keys...)] + [.deadline(in:)] + [.condition(c)]) { body }`:
  /// its condition waits for a permit of its own at each evaluation (given when the model moves
  /// it), then answers the next of `answers` (``ConditionCode``; satisfied once they run out).
  /// With `produced`, its condition's `dependency(for:)` returns a new operation (priority
  /// normal, the script holds its handle), added to the queue with it.
  case addConditional(
    op: Int, queue: Int, priority: Int, answers: [Int], keys: [Int], deadline: Int?, body: BodySpec,
    produced: ProducedSpec? = nil)
  /// `op = (inGroup's queue, or queue).addOperationGroup(priority:, traits: [.deadline(in:),
  /// .exclusive(keys...)], maxConcurrentOperationCount: limit, onChildFailure: policy) { group in
  /// body }`: its body is the build closure (it adds no child itself; `addChild` steps do). Policy
  /// by ``GroupPolicyCode``; keys in its queue's domain (a group's queue: its outermost group's
  /// queue's). Its queue is the model's next queue index once it starts.
  case addGroup(
    op: Int, queue: Int, inGroup: Int?, priority: Int, limit: Int, policy: Int, deadline: Int?,
    body: BodySpec,
    keys: [Int]? = nil)
  /// `op = group.queue.addOperation(priority:, traits: [.exclusive(keys...)]) { body }` of the
  /// group op `group` (once it started): a key an enclosing group holds is taken already.
  case addChild(op: Int, group: Int, priority: Int, body: BodySpec, keys: [Int]? = nil)
  /// `op = queue.addOperation(priority:, traits: tagTraits(tags)) { body }`: the script's tags by
  /// number (none, one, both, or one twice); `queue` may be a group's.
  case addTagged(op: Int, queue: Int, priority: Int, tags: [Int], body: BodySpec)
  /// `queue.cancelOperations(tagged:)`, or with no queue `ActorQueue.cancelOperations(tagged:)`.
  case cancelTagged(queue: Int?, tag: Int)
  /// `queue.capacity = capacity` (nil: no bound).
  case setCapacity(queue: Int, capacity: Int?)
  /// `op = try await queue.addOperationWaitingForCapacity(priority:) { body }`, in a task of its own:
  /// added at once, or lined up until the queue has space (the script holds its handle once added).
  case addWaiting(op: Int, queue: Int, priority: Int, body: BodySpec)
  /// `op = queue.tryAddOperation(priority:) { body }`: nil (no op) when the queue is full.
  case tryAdd(op: Int, queue: Int, priority: Int, body: BodySpec)
  /// Cancels the task of `addWaiting` op `op` while it waits: it throws, and nothing is added.
  case cancelWaiting(op: Int)
  /// `op.escalate(to:)`, what a task of that priority awaiting `op` does: 0 `.low`, 1 `.medium`,
  /// 2 `.high`.
  case escalate(op: Int, priority: Int)
  /// `queue.escalation = reorders ? .taskPriorityAndOrder : .taskPriority`.
  case setEscalation(queue: Int, reorders: Bool)

  var description: String {
    switch self {
    case .addGroup(
      let op, let queue, let inGroup, let priority, let limit, let policy, let deadline, let body, let keys):
      "op\(op) = \(inGroup.map { "group op\($0)" } ?? "q\(queue)").addOperationGroup(priority: \(priority.priorityName), "
        + (deadline.map { "traits: [.deadline(in: \($0) s)], " } ?? "") + keysDescription(keys)
        + "limit: \(limit), onChildFailure: \(GroupPolicyCode.policy(policy))) { \(body) }"
    case .addChild(let op, let group, let priority, let body, let keys):
      "op\(op) = group op\(group).queue.addOperation(priority: \(priority.priorityName)"
        + (keysDescription(keys).isEmpty ? "" : ", " + keysDescription(keys).dropLast(2)) + ") { \(body) }"
    case .addTagged(let op, let queue, let priority, let tags, let body):
      "op\(op) = q\(queue).addOperation(priority: \(priority.priorityName), traits: \(tagTraitsDescription(tags))) "
        + "{ \(body) }"
    case .cancelTagged(let queue, let tag):
      "\(queue.map { "q\($0)" } ?? "ActorQueue").cancelOperations(tagged: t\(tag))"
    case .setCapacity(let queue, let capacity): "q\(queue).capacity = \(capacity.map(String.init) ?? "nil")"
    case .addWaiting(let op, let queue, let priority, let body):
      "op\(op) = try await q\(queue).addOperationWaitingForCapacity(priority: \(priority.priorityName)) { \(body) }"
    case .tryAdd(let op, let queue, let priority, let body):
      "op\(op) = q\(queue).tryAddOperation(priority: \(priority.priorityName)) { \(body) }"
    case .cancelWaiting(let op): "cancel the task waiting to add op\(op)"
    case .escalate(let op, let priority): "op\(op).escalate(to: \(EscalationCode.priority(priority)))"
    case .setEscalation(let queue, let reorders):
      "q\(queue).escalation = .\(reorders ? "taskPriorityAndOrder" : "taskPriority")"
    case .setLimiters(let queue, let limiters):
      "q\(queue).rateLimiters = [" + limiters.map { "l\($0)" }.joined(separator: ", ") + "]"
    case .addCosted(let op, let queue, let priority, let cost, let body):
      "op\(op) = q\(queue).addOperation(priority: \(priority.priorityName), traits: [.cost(\(cost))]) { \(body) }"
    case .penalize(let limiter, let seconds): "l\(limiter).penalize(for: \(seconds) s)"
    case .addConditional(
      let op, let queue, let priority, let answers, let keys, let deadline, let body, let produced):
      "op\(op) = q\(queue).addOperation(priority: \(priority.priorityName), traits: ["
        + ((keys.isEmpty ? [] : [".exclusive(" + keys.map { "k\($0)" }.joined(separator: ", ") + ")"])
        + (deadline.map { [".deadline(in: \($0) s)"] } ?? [])
        + [
          ".condition(answers: " + answers.map { ConditionCode.name($0) }.joined(separator: ", ")
            + (produced.map { ", producing op\($0.op) { \($0.body) }" } ?? "") + ")"
        ])
        .joined(separator: ", ") + "]) { \(body) }"
    case .addExclusive(let op, let queue, let priority, let keys, let shared, let body):
      "op\(op) = q\(queue).addOperation(priority: \(priority.priorityName), traits: [.exclusive("
        + keys.map { "k\($0)" }.joined(separator: ", ") + (shared ? ", in: shared" : "") + ")]) { \(body) }"
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
    case .open(let op): "give op\(op) a permit"
    case .openFully(let op): "give op\(op) every permit"
    case .pause(let op): "op\(op).pause()"
    case .resume(let op): "op\(op).resume()"
    case .pauseAll(let queue): "q\(queue).pauseAllOperations()"
    case .resumeAll(let queue): "q\(queue).resumeAllOperations()"
    case .setLimitPausingExcess(let queue, let limit):
      "q\(queue).setMaxConcurrentOperationCount(\(limit), pausingExcess: true)"
    case .addCoalesced(let op, let work, let queue, let priority, let key, let body, let tags):
      "op\(op) = q\(queue).addOperation(priority: \(priority.priorityName), "
        + (tags.map { "traits: \(tagTraitsDescription($0)), " } ?? "")
        + "coalescingBy: \(key)) { \(body) } (new work: op\(work))"
    case .dropHandle(let op): "drop handle op\(op)"
    case .releaseQueue(let queue): "release q\(queue)"
    case .addTimed(let op, let queue, let priority, let deadline, let timeout, let body):
      "op\(op) = q\(queue).addOperation(priority: \(priority.priorityName), traits: ["
        + ([deadline.map { ".deadline(in: \($0) s)" }, timeout.map { ".timeout(\($0) s)" }].compactMap { $0 })
        .joined(separator: ", ") + "]) { \(body) }"
    case .advance(let seconds): "clock.advance(by: \(seconds) s)"
    case .addRetrying(let op, let queue, let priority, let retry, let body):
      "op\(op) = q\(queue).addOperation(priority: \(priority.priorityName), traits: [\(retry)]) "
        + "{ fails \(retry.failures) times, then \(body) }"
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

/// A rate limiter of a script, in whole seconds of its manual clock, so that every instant it
/// grants at is a whole second: a token bucket of one permit per `seconds` with burst
/// `capacity`, or a sliding window of `capacity` starts per `seconds`.
struct LimiterSpec: Codable, Sendable, Hashable, CustomStringConvertible {
  var window: Bool
  var capacity: Int
  var seconds: Int

  var rule: PermitSchedule.Rule {
    let length = Int64(seconds) * 1_000_000_000
    return window
      ? .slidingWindow(capacity: Int64(capacity), length: length)
      : .tokenBucket(permits: 1, interval: length, burst: Int64(capacity))
  }

  func limiter(clock: QueueClock) -> RateLimiter {
    window
      ? .slidingWindow(maxStarts: capacity, per: .seconds(seconds), clock: clock)
      : .tokenBucket(permits: 1, per: .seconds(seconds), burst: capacity, clock: clock)
  }

  var description: String {
    window ? "window \(capacity)/\(seconds) s" : "bucket 1/\(seconds) s burst \(capacity)"
  }
}

/// The keys of `addExclusive` steps: interned in this order (nothing else uses these names), so
/// the scheduler orders them as the model does.
let scriptKeys = (0..<3).map { ExclusivityKey("random-script-key-\($0)") }

/// `traits: [.exclusive(k0, k1)], ` for a group's or a child's keys (nothing without).
func keysDescription(_ keys: [Int]?) -> String {
  guard let keys, !keys.isEmpty else { return "" }
  return "traits: [.exclusive(" + keys.map { "k\($0)" }.joined(separator: ", ") + ")], "
}

/// The traits of a group's or a child's keys, in its queue's domain (none without keys).
func groupKeyTraits(_ keys: [Int]?) -> [OperationTrait] {
  guard let keys, !keys.isEmpty else { return [] }
  return [.exclusive(keys.map { scriptKeys[$0] })]
}

/// The traits of an `addExclusive` step: its keys in the script's shared domain or the queue's own.
func exclusiveTraits(keys: [Int], shared: Bool, domain: ExclusivityDomain) -> [OperationTrait] {
  let keys = keys.map { scriptKeys[$0] }
  return shared ? [.exclusive(keys, in: domain)] : [.exclusive(keys)]
}

/// The traits of a step's tags (script tag numbers): one `.tags` trait, or, when the first and
/// last differ, a trait each (so both ways of folding them run).
func tagTraits(_ tags: [Int], _ names: [OperationTag]) -> [OperationTrait] {
  guard let first = tags.first, let last = tags.last, first != last else {
    return [.tags(tags.map { names[$0] })]
  }
  return [.tags(tags.dropLast().map { names[$0] }), .tags(names[last])]
}

func tagTraitsDescription(_ tags: [Int]) -> String {
  "[.tags(" + tags.map { "t\($0)" }.joined(separator: ", ") + ")]"
}

/// The traits of an `addTimed` step (seconds on the script's clock).
func timeTraits(deadline: Int?, timeout: Int?) -> [OperationTrait] {
  [deadline.map { .deadline(in: .seconds($0)) }, timeout.map { .timeout(.seconds($0)) }].compactMap { $0 }
}

/// A retried op's policy and time traits (seconds on the script's clock).
struct RetrySpec: Codable, Sendable, Hashable, CustomStringConvertible {
  var attempts: Int
  var backoff: Int
  var failures: Int
  var deadline: Int?
  var timeout: Int?

  var traits: [OperationTrait] {
    [.retry(.attempts(attempts, backoff: .constant(.seconds(backoff)), jitter: .none))]
      + timeTraits(deadline: deadline, timeout: timeout)
  }

  var description: String {
    ([".retry(\(attempts) attempts, \(backoff) s apart)"]
      + [deadline.map { ".deadline(in: \($0) s)" }, timeout.map { ".timeout(\($0) s)" }].compactMap { $0 })
      .joined(separator: ", ")
  }
}

/// The operation an `addConditional` step's condition produces.
struct ProducedSpec: Codable, Sendable, Hashable {
  var op: Int
  var body: BodySpec
}

/// The answers of an `addConditional` step's condition, by code: 0 satisfied, 1 skip, 2 failed,
/// 3 + n not yet, again after n seconds (0 to 2).
enum ConditionCode {
  static func name(_ code: Int) -> String {
    switch code {
    case 0: "satisfied"
    case 1: "skip"
    case 2: "failed"
    default: "notYet(\(code - 3) s)"
    }
  }

  static func result(_ code: Int, op: Int) -> ConditionResult {
    switch code {
    case 0: .satisfied
    case 1: .skip
    case 2: .failed(ScriptError(op: op))
    default: .notYet(retryAfter: .seconds(code - 3))
    }
  }

  /// The condition's name for op `op`.
  static func conditionName(_ op: Int) -> String { "c\(op)" }

  /// The traits of an `addConditional` step, given its condition.
  static func traits(keys: [Int], deadline: Int?, _ condition: some OperationCondition) -> [OperationTrait] {
    (keys.isEmpty ? [] : [.exclusive(keys.map { scriptKeys[$0] })])
      + timeTraits(deadline: deadline, timeout: nil)
      + [.condition(condition)]
  }
}

/// The failure policies of `addGroup` steps, by code: 0 cancel siblings, 1 collect all, 2 ignore.
enum GroupPolicyCode {
  static func policy(_ code: Int) -> GroupFailurePolicy {
    [GroupFailurePolicy.cancelSiblings, .collectAll, .ignore][code]
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

extension BodySpec {
  /// Scripts printed before bodies had checkpoints replay as bodies with none.
  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    auto = try container.decode(Bool.self, forKey: .auto)
    checkpoints = try container.decodeIfPresent(Int.self, forKey: .checkpoints) ?? 0
    pauseHandlers = try container.decodeIfPresent(Bool.self, forKey: .pauseHandlers) ?? false
    checksCancellation = try container.decode(Bool.self, forKey: .checksCancellation)
    throwing = try container.decode(Bool.self, forKey: .throwing)
    capturesQueue = try container.decodeIfPresent(Int.self, forKey: .capturesQueue)
    handlerCapturesQueue = try container.decodeIfPresent(Int.self, forKey: .handlerCapturesQueue)
  }
}

extension Script {
  /// The scheduler's slice limit for this script (see `BulkWork`): in three scripts of four so
  /// small (1 to 3) that every call on more than that many operations or dependents is done in
  /// slices, each slice its own hold of the lock; the default in the others.
  var sliceLimit: Int {
    seed % 4 == 0 ? Scheduler.defaultSliceLimit : Int(seed % 3) + 1
  }
}

/// The priorities a script escalates to, by number.
enum EscalationCode {
  static let priorities: [TaskPriority] = [.low, .medium, .high]

  static func priority(_ code: Int) -> TaskPriority { priorities[min(max(code, 0), priorities.count - 1)] }
}

@testable import ActorQueue

/// A model operation's state: the five the tests tell apart.
enum ModelState: String, Codable, Sendable, Hashable {
  case waiting, executing, finished, failed, cancelled

  var isTerminal: Bool { self == .finished || self == .failed || self == .cancelled }
}

/// What the model expects from one step.
enum StepExpectation: Equatable, Sendable {
  /// The step does not apply (refers to something a shrunk script no longer has, or would make the
  /// outcome depend on timing): executors skip it.
  case skip
  /// The call returns normally.
  case done
  /// The call throws this error and changes nothing.
  case refused(Refusal)
}

enum Refusal: String, Sendable, Equatable {
  case dependencyCycle, alreadyEnqueued, alreadyStarted, joinedSharedWork
}

/// Facts an invariant checker needs and cannot see in the events: dependencies, priorities,
/// explicit cancellations. Each is stamped with the step it happened in.
enum Registration: Sendable, Equatable {
  case queue(Int, limit: Int)
  case operation(Int, queue: Int, priority: Int, step: Int)
  case edge(dependent: Int, dependency: Int, step: Int)
  case edgeRemoved(dependent: Int, dependency: Int, step: Int)
  case priority(op: Int, priority: Int, step: Int)
  case cancelledWhileWaiting(op: Int, step: Int)
  /// Cancelled while its body was paused at a checkpoint: it must not start (get a slot) again.
  case cancelledWhilePaused(op: Int, step: Int)
  /// A timer acted on it (`deadline`: its deadline, else its execution timeout): one detail event.
  case timedOut(op: Int, deadline: Bool, step: Int)
  /// Ended by a dependency's timer in an advance that its own deadline was due in: a detail event
  /// for it is allowed, not required (the scheduler may leave that end to a later slice).
  case mayTimeOut(op: Int, step: Int)
  /// The clock reached its deadline: it must not get a slot from then on.
  case deadlinePassed(op: Int, step: Int)
  /// An attempt failed and its retry policy runs it again: one retry detail event.
  case rescheduled(op: Int, step: Int)
  /// It takes these keys (`ModelLock.id`s): no two ops sharing one may execute (or be paused in
  /// their bodies) at once.
  case keys(op: Int, locks: [Int], step: Int)
  /// Its condition answered "not yet": one condition detail event.
  case deferred(op: Int, step: Int)
  /// It was added to the queue of the group op `group`: the group ends after it.
  case groupChild(op: Int, group: Int, step: Int)
}

/// A key in a domain, ordered as the scheduler orders its locks: the script's shared domain
/// (made before any queue's) first, then each queue's own in creation order; keys by number.
struct ModelLock: Hashable, Comparable, Sendable {
  /// -1: the script's shared domain; otherwise the queue whose own domain it is.
  var domain: Int
  var key: Int

  static func < (lhs: ModelLock, rhs: ModelLock) -> Bool {
    lhs.domain != rhs.domain ? lhs.domain < rhs.domain : lhs.key < rhs.key
  }

  /// One number per lock, for the journal.
  var id: Int { (domain + 1) * 8 + key }
}

/// One move of a body the model lets happen now: the executor gives it `permits` permits and
/// waits for `result`.
struct BodyMove: Sendable, Equatable {
  enum Result: Sendable, Equatable {
    /// It returned from a checkpoint and reports `passed` checkpoints passed in all.
    case passed(Int)
    /// It paused at a checkpoint (`.paused`, no slot).
    case paused
    /// It ended so.
    case ended(ModelState)
    /// Its attempt threw and its retry policy runs it again: `.pending` (a retry detail first),
    /// holding no slot, ready again now or when its backoff's timer fires.
    case rescheduled
    /// Its condition was satisfied: its body runs (and reports that it entered).
    case evaluated
    /// Its condition answered "not yet": `.pending` (a condition detail first), holding no slot,
    /// ready again now or when its timer fires.
    case deferred
    /// A group's build returned (or threw): the group waits for its children, executing.
    case built
  }

  var op: Int
  /// A condition's evaluation, given one permit of the condition's own (`permits` is 0), which
  /// answers `answer` (a ``ConditionCode``).
  var evaluation = false
  var answer = 0
  var permits: Int
  /// The body calls a checkpoint in this move (else it goes to its end, or rethrows what its
  /// checkpoint threw earlier).
  var reachesCheckpoint: Bool
  var result: Result
  /// When it reaches a checkpoint: whether it is asked to pause there (what
  /// `ActorQueue.isPauseRequested` says just before).
  var askedToPause = false
}

/// The reference model: the behaviour the spec promises (spec/operation-model.md, spec/API.md),
/// as a small synchronous value. It decides every outcome of a script, which ops hold a slot at
/// each moment, each op's exact state, where each body is, and what must have been freed.
/// Executors (real queues, the scheduler value) drive it step by step and compare.
///
/// Pause and coalescing, as the scheduler documents them (Scheduler+Pause, Scheduler+Coalescing):
/// - A body pauses only at a checkpoint, when `pause()` held it or an excess request asked it to;
///   paused, it holds no slot. Held by the user it shows `.paused` until `resume()`; paused for
///   the excess (or resumed) it competes for a slot by priority then submission order, showing
///   `.paused` (excess) or `.ready` (resumed), and continues once granted one.
/// - A held waiting op stays `.pending` until resumed.
/// - Excess requests: chosen lowest priority first, then most recently started; recounted
///   whenever the queue is touched, withdrawing those that would have been chosen last. Recounting
///   more often than the scheduler does changes nothing: between two recounts the number needed
///   only falls at events that touch the queue.
/// - Cancelling a paused body makes its checkpoint throw; it runs to its end holding no slot and
///   shows `.paused` until then.
/// - Once its queue is released (and no unfinished op captures its owner), an op held by
///   `pause()` is kept only by references outside the queue: the script's handles, unfinished
///   ops that depend on it, and for shared work its callers' handles. When nothing keeps it, its
///   handle is gone, and an op still held is cancelled (`releaseUnkept`). A step that would leave
///   a held op kept but with no handle to resume it is skipped (nothing could end it).
/// - Time (one manual clock per script, in seconds): an `addTimed` op's deadline is armed when it
///   is enqueued (one already due ends it there), its timeout when its body first starts (not
///   when a paused body gets a slot again). `advance` fires the due timers in instant order, ties
///   in arm order, then moves the clock and starts what may start (timers start nothing). A timer
///   does nothing to an op cancelled first or timed out already. Acting on a waiting op (held,
///   suspended or not), it ends it `.failed` at once (the usual cascade); on an executing one, it
///   marks it timed out: a checkpoint throws, a paused body's throws at once (as `cancel()`), no
///   slot again; it ends `.failed` if its body throws, `.finished` if it returns a value, and a
///   later `cancel()` changes nothing. Tie order is seen only where one timer's act decides
///   another's: two deadlines (an end ends a dependent first) and an op's own deadline and timeout
///   (which error it ends with). Both are armed in the scheduler's order: deadlines at
///   submission, in step order, a timeout later, at its start. Tied timeouts of two ops may fire
///   in either order: acting on an executing op ends nothing, so no check can tell.
/// - Retry (an `addRetrying` op): an attempt whose body throws, with attempts left, not cancelled
///   and no deadline passed (an execution timeout may be retried, whatever the body threw), is
///   rescheduled: `.waiting` again, no slot, its permits and timeout reset, its submission order
///   kept; ready at once for a zero backoff, else when its backoff's timer fires (ties: after a
///   deadline and a timeout of the same op and instant). A backoff that would end at or after its
///   deadline is not waited for: it ends `.failed`, as does an attempt in a queue released while
///   suspended (nothing there gets a slot again).
/// - Exclusivity (an `addExclusive` op), as `Scheduler+Exclusivity.swift` decides it: the starts
///   of queues that ever had an op with locks are made by `arbitrate()` after the other queues':
///   locks released (or unreserved) since the last settle are scanned in lock order (their parked
///   waiters by rank, each unblocked one unparked, until one whose queue has room), then greedy
///   rounds start the best-ranked head across those queues that may start, parking blocked heads;
///   still-free scanned locks are scanned again. A holder keeps its locks while paused and until
///   it ends or is rescheduled; a parked op passed over `agingLimit` times by a worse-ranked start
///   (counted only while its queue has room) reserves its locks, all of them or none (when
///   another reserves one), until it starts, ends, is held, gets a dependency or its queue is
///   suspended.
/// - Conditions (an `addConditional` op): each start (from waiting) begins an evaluation, which
///   holds the slot (and keys) and moves once the script opened it (`open` gives the evaluation
///   its permit before the body's). It then answers the next scripted code, unless the op was
///   cancelled (it ends `.cancelled`) or timed out (`.failed`) meanwhile: satisfied, the body
///   runs; skip ends it `.cancelled`; failed ends it `.failed`; not yet returns it to waiting
///   holding no slot and no key, with its submission order and its body's permits kept, ready at
///   once for 0 s or when its timer fires, and not counted as started for its deadline. An op
///   whose handle is gone when it starts (its released queue let go of it) ends `.cancelled`
///   without its condition being asked; an evaluating op's worker holds its handle. Not yet in a
///   queue released while suspended ends it `.cancelled`.
/// - Coalescing: the shared work is a model op of its own (no handle in the script); each caller
///   is a follower that mirrors its state and ends with its outcome. Cancelling a follower ends it
///   at once; the work is cancelled once every follower is; its priority is the highest of its
///   unfinished followers'. A follower takes no dependencies (`.joinedSharedWork`).
struct ReferenceModel: Sendable {
  struct Op: Sendable {
    var queue: Int
    var priority: Int
    var body: BodySpec
    var isBarrier: Bool
    var state = ModelState.waiting
    /// Submitted while not terminal: it has events on its queue.
    var enqueued = false
    var order = 0
    var cancelRequested = false
    var explicit: [(op: Int, mustSucceed: Bool)] = []
    var inputs: [Int] = []
    /// Implicit barrier edges: a barrier waits for what was before it; an op waits for every
    /// barrier of its queue that had not ended when it was added.
    var barrierDependencies: [Int] = []
    var handleHeld = true
    /// Held by `pause()` in its released queue, the queue let go of it (of its callers' handles,
    /// for shared work): only references outside the queue keep it.
    var letGo = false
    /// Nothing referred to its handle any more while it was unfinished (see `releaseUnkept`).
    var handleGone = false
    /// Failed or cancelled are both correct: two inputs had ended badly when it was added, two
    /// required dependencies ended badly in overlapping calls (see `groupEndsBetweenSlices`), or
    /// it ended so because a required dependency or its shared work did.
    var eitherBadOutcome = false
    /// The step in which it ended.
    var endedStep: Int?
    /// When it was made, among every op (a coalescing step makes new shared work first).
    var creation = 0
    /// Its tags (the script's, by number).
    var tags: Set<Int> = []
    /// Its submitter waits for space in its full queue (`addWaiting`): in the queue's line, not
    /// added, and the script has no handle yet.
    var awaitingSpace = false
    /// The highest priority (`TaskPriority.rawValue`) it was escalated to; 0: never.
    var escalation: UInt8 = 0

    // Bodies
    /// Permits the script gave (every one at once for an auto body).
    var opens = 0
    /// Permits the body took (of those the script gave).
    var stage = 0
    /// Checkpoints it returned from.
    var passed = 0
    /// Executing and holding a slot (else, executing, it is paused at a checkpoint).
    var holdsSlot = false
    /// Its checkpoint threw (cancelled while paused): it ends at its next move.
    var threw = false
    /// Paused and competing for a slot.
    var inReady = false
    /// Paused, competing, and showing `.ready` (it was resumed).
    var showsReady = false
    var startOrder = 0
    /// Times it paused at a checkpoint, and was given a slot again there (so its `onPause` and
    /// `onResume` handlers ran, when it has them).
    var pauses = 0
    var resumes = 0

    // Pause
    var pauseHeld = false
    var excessPaused = false

    // Time
    /// Its deadline (seconds on the clock), kept after it fired; and armed (until it fires or the
    /// op ends).
    var deadline: Int?
    var deadlineAt: Int?
    /// Its execution timeout (seconds); armed at its first start, as the deadline is.
    var timeout: Int?
    var timeoutAt: Int?
    /// A timer acted on it while it executed (before any cancel()).
    var timedOut = false
    /// Which timer acted on it, if one did (true: its deadline).
    var timerActed: Bool?
    /// A dependency's timer ended it in an advance its own deadline was due in (see `mayTimeOut`).
    var mayHaveTimedOut = false
    /// When its body first started.
    var startedAt: Int?
    /// The step in which it last got a slot.
    var slotStep: Int?

    // Retry
    /// Its policy and traits (an `addRetrying` op).
    var retry: RetrySpec?
    /// Attempts started.
    var attempt = 0
    /// The instant its backoff ends (seconds), while it waits one out: `.pending`, not ready.
    var backoffAt: Int?

    // Exclusivity
    /// Its locks, sorted, without repeats (an `addExclusive` op).
    var locks: [ModelLock] = []
    /// It started and holds its locks (until it ends or is rescheduled).
    var holdsLocks = false
    /// Waiting for locks, out of its queue's ready set (see `arbitrate()`).
    var parked = false
    /// Times a start took one of its locks while it was parked with a better rank.
    var passedOver = 0

    // Rate limits
    /// The permits one start takes from each limiter of its queue.
    var cost = 1

    // Conditions
    /// Its condition's answers, in order (an `addConditional` op).
    var answers: [Int]?
    /// The op its condition's `dependency(for:)` returned: the condition (the script's object,
    /// which the op keeps until it ends) holds it, whatever becomes of the edge.
    var producedOp: Int?
    /// Its edge to `producedOp` is the condition's (not removed by the script): the produced op
    /// is cancelled if this op ends without running and no other unfinished op depends on it.
    var producedLinked = false
    /// Evaluations answered so far.
    var evaluations = 0
    /// Its condition is being evaluated (it holds its slot), and whether the script opened it.
    var evaluating = false
    var evaluationOpen = false
    /// It waits for its condition's timer (`backoffAt`), not a retry's.
    var deferred = false
    /// It started with its handle gone: it ends `.cancelled` without its condition being asked.
    var orphanEvaluation = false

    // Coalescing
    /// A caller's handle: the shared work it follows.
    var leader: Int?
    /// Shared work: its callers' handles, in the order they joined.
    var followers: [Int] = []
    /// Shared work: its key.
    var key: Int?

    var allDependencies: [Int] {
      explicit.map(\.op) + inputs + barrierDependencies + (leader.map { [$0] } ?? [])
    }

    func requiresSuccess(of other: Int) -> Bool {
      inputs.contains(other) || explicit.contains { $0.op == other && $0.mustSucceed }
    }

    var captures: [Int] { body.captures }

    var pausedInBody: Bool { state == .executing && !holdsSlot }
    /// A group op (`addGroup`): its children's limit and failure policy (``GroupPolicyCode``).
    var groupLimit: Int?
    var groupPolicy = 0
    /// Its queue, made when it starts.
    var groupQueue: Int?
    /// Its build ended (threw: `buildThrew`); it waits for its children.
    var built = false
    var buildThrew = false
  }

  struct Queue: Sendable {
    var limit: Int
    var suspended = false
    /// An op with locks was added, or it was given limiters (sticky): its starts are decided by
    /// `arbitrate()`.
    var hasKeys = false
    /// Its rate limiters (the script's, by number).
    var limiters: [Int] = []
    /// Its permit timer: the instant (seconds) its head's permits conform, as its last greedy
    /// round decided.
    var armedThrottle: Int?
    var released = false
    /// Released while suspended: nothing in it can get a slot again.
    var releasedSuspended = false
    var barriers: [Int] = []
    /// A group's queue: the group op, whether it takes children (0), cancels them as they come
    /// (1) or refuses them (2, ended), whether a child failed, and the deadline its children get.
    var groupOp: Int?
    var admission = 0
    var childFailed = false
    var groupDeadline: Int?
    /// Its capacity (`Int.max`: none), and the ops of submitters waiting for space, first served first.
    var capacity = Int.max
    var line: [Int] = []
    /// `escalation` is `.taskPriorityAndOrder`.
    var reordersEscalated = false
  }

  /// The queues the script made (a group's queue comes after them).
  let baseQueueCount: Int
  /// Group queues whose children are to be cancelled: by their group's body, after the event (the
  /// group was cancelled, timed out or its build threw); or in the same event, before any start,
  /// by the scheduler's walk (a child failed under `cancelSiblings`).
  private var pendingGroupCancels: [Int] = []
  private var pendingSiblingCancels: [Int] = []

  private(set) var ops: [Int: Op] = [:]
  private(set) var queues: [Queue]
  private(set) var journal: [Registration] = []
  /// Exclusivity: each lock's holder and reserver, the reservers, the locks released or
  /// unreserved since the last settle.
  private var holder: [ModelLock: Int] = [:]
  /// The instant the advance being performed moves the clock to.
  private var advanceTarget: Int?
  private var reservedBy: [ModelLock: Int] = [:]
  private var reservers: [Int] = []
  private var dirty: Set<ModelLock> = []
  /// Rate limits: each limiter's permits (the scheduler's arithmetic, checked on its own in
  /// PermitScheduleTests), each limiter's starts (instant in seconds, cost) for the rate
  /// invariant, and heads found with a cost their limiters never grant (they end at settle).
  private(set) var limiterSpecs: [LimiterSpec]
  private(set) var limiterSchedules: [PermitSchedule]
  private(set) var limiterStarts: [[(at: Int, cost: Int)]]
  private var impossibleHeads: [Int] = []
  /// Grants through a limiter, and heads that waited for permits, so far.
  private(set) var grants = 0
  private(set) var throttles = 0
  /// Passes over after which a parked op reserves its locks (the scheduler's `agingLimit`).
  var agingLimit = 16
  /// Ops parked for locks, and waiters that reserved their locks (aging), so far.
  private(set) var parks = 0
  private(set) var reservations = 0
  private var nextOrder = 0
  private var nextCreation = 0
  /// Unfinished ops a cancel-by-tag step cancelled, so far.
  private(set) var taggedCancels = 0
  /// Submitters lined up in a full queue, served from a line, cancelled in one; `tryAdd`s refused.
  private(set) var linedUp = 0
  private(set) var served = 0
  private(set) var cancelledWaiting = 0
  private(set) var refusedTries = 0
  /// Ops an escalation raised, and those it also moved ahead (`.veryHigh`).
  private(set) var escalatedOps = 0
  private(set) var reorderedOps = 0
  private var nextStart = 0
  private var nextMovable = 0
  /// Bodies that may move, with when they became able to: they move in that order.
  private var movable: [Int: Int] = [:]
  private(set) var step = 0
  /// The real queues' calls go in slices (a script's small slice limit): a group's body, woken in
  /// a step's first slice, may end its group before the step's call has ended every dependent it
  /// ends, so a dependent that requires both may end as either decides first.
  var groupEndsBetweenSlices = false
  /// For a `.batch` step: what each of its `addDependency` calls must do.
  private(set) var lastBatchExpectations: [StepExpectation] = []
  /// The script's manual clock, in seconds.
  private(set) var now = 0
  /// Timers armed so far: ties fire in arm order.
  /// What paused bodies were told since the last `takeCheckpointLog()`: "opN resumed" (granted a
  /// slot), "opN cancelled" (cancelled while paused), as the scheduler value's harness logs them.
  private var checkpointLog: [String] = []

  init(queueLimits: [Int], limiters: [LimiterSpec] = []) {
    limiterSpecs = limiters
    limiterSchedules = limiters.map { PermitSchedule($0.rule) }
    limiterStarts = limiters.map { _ in [] }
    queues = queueLimits.map { Queue(limit: $0 == -1 ? .max : $0) }
    baseQueueCount = queueLimits.count
    for (index, limit) in queueLimits.enumerated() { journal.append(.queue(index, limit: limit)) }
  }

  var sortedOpIndices: [Int] { ops.keys.sorted() }

  func state(of op: Int) -> ModelState? { ops[op]?.state }

  /// The ops of `queue` that hold a slot.
  func executing(in queue: Int) -> Set<Int> {
    Set(
      ops.filter { $0.value.queue == queue && $0.value.state == .executing && $0.value.holdsSlot }.map(\.key))
  }

  func isLive(queue: Int) -> Bool { queue < queues.count && !queues[queue].released }

  func handleHeld(_ op: Int) -> Bool { ops[op]?.handleHeld ?? false }

  /// The op a handle acts on: a follower's shared work while the follower has not ended.
  func target(_ op: Int) -> Int {
    guard let model = ops[op], let leader = model.leader, !model.state.isTerminal else { return op }
    return leader
  }

  func isFollower(_ op: Int) -> Bool { ops[op]?.leader != nil }

  /// Whose body's value a handle ends with.
  func bodyOp(_ op: Int) -> Int { ops[op]?.leader ?? op }

  /// The exact state the op must show.
  func expectedState(_ op: Int) -> OperationState? {
    guard let model = ops[op] else { return nil }
    if model.leader != nil && !model.state.isTerminal { return expectedState(model.leader!) }
    switch model.state {
    case .finished: return .finished
    case .failed: return .failed
    case .cancelled: return .cancelled
    case .waiting: return isReady(model) ? .ready : .pending
    case .executing:
      if model.holdsSlot { return .executing }
      return model.showsReady ? .ready : .paused
    }
  }

  /// What `isPaused` must say: paused at a checkpoint, or held by `pause()` while it waits to
  /// start; not while its body runs on, asked to pause but short of a checkpoint (a caller's
  /// handle says it of its shared work).
  func expectedIsPaused(_ op: Int) -> Bool {
    let target = target(op)
    guard let model = ops[target], !model.state.isTerminal else { return false }
    return expectedState(target) == .paused || (model.pauseHeld && model.state == .waiting)
  }

  /// Whether the worker of an op holding a slot has its pause flag set.
  func pauseRequested(_ op: Int) -> Bool {
    guard let model = ops[op] else { return false }
    return model.pauseHeld || model.excessPaused
  }

  /// Checkpoints the body has returned from (it reports each).
  func checkpointsPassed(_ op: Int) -> Int { ops[op]?.passed ?? 0 }

  mutating func takeCheckpointLog() -> [String] {
    defer { checkpointLog = [] }
    return checkpointLog
  }

  // MARK: Steps

  /// Applies one step (`index` is its position in the run, for the checker's journal).
  mutating func apply(_ step: Step, index: Int) -> StepExpectation {
    self.step = index
    // A step that lets go of a reference may strand a held op: taken back, as a skip.
    let before: ReferenceModel?
    switch step {
    case .dropHandle, .releaseQueue, .cancel, .cancelTagged: before = self
    default: before = nil
    }
    let expectation = perform(step)
    settle()
    if let before, expectation != .skip, strandsHeldOp() {
      self = before
      return .skip
    }
    return expectation
  }

  /// Whether an op of a released queue is held by `pause()`, not cancelled, and no handle of the
  /// script's could resume it, though something keeps it (an unfinished op that depends on it,
  /// or its queue, still captured): nothing would ever end it, and the script could not drain.
  private func strandsHeldOp() -> Bool {
    // A timed-out op ends, unless a retry may run it again (held, it would wait for good).
    ops.contains { op, model in
      model.pauseHeld && !model.cancelRequested && (!model.timedOut || model.retry != nil)
        && !model.state.isTerminal
        && model.leader == nil
        && model.queue < queues.count && queues[model.queue].released
        && !ops.contains { $0.value.handleHeld && target($0.key) == op }
    }
  }

  private mutating func perform(_ step: Step) -> StepExpectation {
    switch step {
    case .addGroup(
      let op, let queue, let inGroup, let priority, let limit, let policy, let deadline, let body, let keys):
      let target: Int
      if let inGroup {
        guard let queue = ops[inGroup]?.groupQueue else { return .skip }
        target = queue
      } else {
        guard isBase(queue) else { return .skip }
        target = queue
      }
      guard isLive(queue: target), ops[op] == nil, validCaptures(body), limit == -1 || limit >= 1,
        (0...2).contains(policy)
      else { return .skip }
      create(op, queue: target, priority: priority, body: body)
      ops[op]!.groupLimit = limit == -1 ? .max : limit
      ops[op]!.groupPolicy = policy
      takeKeys(keys ?? [], op: op, in: target)
      enqueue(op)
      if let deadline, !ops[op]!.state.isTerminal {
        armDeadline(of: op, at: min(now + deadline, queues[target].groupDeadline ?? .max))
      }
      return .done
    case .addChild(let op, let group, let priority, let body, let keys):
      guard let queue = ops[group]?.groupQueue, ops[op] == nil, validCaptures(body) else { return .skip }
      create(op, queue: queue, priority: priority, body: body)
      takeKeys(keys ?? [], op: op, in: queue)
      enqueue(op)
      return .done
    case .addTagged(let op, let queue, let priority, let tags, let body):
      // A group's queue: once its group started (children added after its end are refused).
      guard isBase(queue) ? isLive(queue: queue) : queue < queues.count, ops[op] == nil, validCaptures(body)
      else { return .skip }
      create(op, queue: queue, priority: priority, body: body)
      ops[op]!.tags = Set(tags)
      enqueue(op)
      return .done
    case .cancelTagged(let queue, let tag):
      if let queue { guard isLive(queue: queue) else { return .skip } }
      // In creation order; an op an earlier one's cancellation ended is skipped.
      for op in tagged(tag, in: queue) where !ops[op]!.state.isTerminal {
        taggedCancels += 1
        cancel(op)
      }
      return .done
    case .add(let op, let queue, let priority, let body):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil, validCaptures(body) else { return .skip }
      create(op, queue: queue, priority: priority, body: body)
      enqueue(op)
      return .done
    case .escalate(let op, let code):
      guard handleHeld(op), let model = ops[op], !model.state.isTerminal else { return .skip }
      escalate(op, to: EscalationCode.priority(code).rawValue)
      return .done
    case .setEscalation(let queue, let reorders):
      guard isBase(queue), isLive(queue: queue) else { return .skip }
      queues[queue].reordersEscalated = reorders
      return .done
    case .setCapacity(let queue, let capacity):
      guard isBase(queue), isLive(queue: queue), (capacity ?? 1) >= 1 else { return .skip }
      queues[queue].capacity = capacity ?? .max
      return .done
    case .addWaiting(let op, let queue, let priority, let body):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil, validCaptures(body) else { return .skip }
      let space = hasSpace(queue)
      create(op, queue: queue, priority: priority, body: body)
      if space {
        enqueue(op)
      } else {
        ops[op]!.awaitingSpace = true
        ops[op]!.handleHeld = false
        queues[queue].line.append(op)
        linedUp += 1
      }
      return .done
    case .tryAdd(let op, let queue, let priority, let body):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil, validCaptures(body) else { return .skip }
      // Full: nil, and no op.
      guard hasSpace(queue) else {
        refusedTries += 1
        return .done
      }
      create(op, queue: queue, priority: priority, body: body)
      enqueue(op)
      return .done
    case .cancelWaiting(let op):
      guard let model = ops[op], model.awaitingSpace else { return .skip }
      queues[model.queue].line.removeAll { $0 == op }
      ops[op] = nil
      cancelledWaiting += 1
      return .done
    case .addAfter(let op, let queue, let priority, let inputs, let body):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil, validCaptures(body), !inputs.isEmpty,
        inputs.allSatisfy({ handleHeld($0) && ops[$0]?.isBarrier == false })
      else { return .skip }
      create(op, queue: queue, priority: priority, body: body)
      ops[op]!.inputs = inputs
      for input in inputs where !ops[input]!.state.isTerminal {
        journal.append(.edge(dependent: op, dependency: input, step: self.step))
      }
      let bad = inputs.filter { ops[$0]!.state.isTerminal && ops[$0]!.state != .finished }
      if let first = bad.first {
        ops[op]!.eitherBadOutcome =
          Set(bad.map { ops[$0]!.state }).count > 1 || bad.contains { ops[$0]!.eitherBadOutcome }
        end(op, as: ops[first]!.state == .cancelled ? .cancelled : .failed)
      }
      enqueue(op)
      return .done
    case .batch(let queue, let prepared, let dependencies):
      guard isBase(queue), isLive(queue: queue), !prepared.isEmpty,
        prepared.allSatisfy({ ops[$0.op] == nil }),
        prepared.allSatisfy({ validCaptures($0.body) })
      else { return .skip }
      for spec in prepared { create(spec.op, queue: queue, priority: spec.priority, body: spec.body) }
      let batchOps = Set(prepared.map(\.op))
      lastBatchExpectations = dependencies.map { dependency in
        // Only the prepared ops get dependencies here: nothing may wait for an op not yet submitted.
        guard batchOps.contains(dependency.dependent), ops[dependency.dependency] != nil,
          batchOps.contains(dependency.dependency) || handleHeld(dependency.dependency)
        else { return .skip }
        return addDependency(dependency)
      }
      for spec in prepared { enqueue(spec.op) }
      return .done
    case .barrier(let op, let queue, let body):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil else { return .skip }
      var body = body
      body.capturesQueue = nil
      body.handlerCapturesQueue = nil
      create(op, queue: queue, priority: 2, body: body, isBarrier: true)
      ops[op]!.barrierDependencies = ops.filter {
        $0.key != op && $0.value.queue == queue && $0.value.enqueued && !$0.value.state.isTerminal
      }.map(\.key).sorted()
      for dependency in ops[op]!.barrierDependencies {
        journal.append(.edge(dependent: op, dependency: dependency, step: self.step))
      }
      enqueue(op, asBarrier: true)
      queues[queue].barriers.append(op)
      return .done
    case .depend(let dependency):
      guard handleHeld(dependency.dependent), handleHeld(dependency.dependency), !strandsGroup(dependency)
      else {
        return .skip
      }
      return addDependency(dependency)
    case .undepend(let dependent, let dependency):
      guard handleHeld(dependent), handleHeld(dependency) else { return .skip }
      guard ops[dependent]!.state == .waiting, ops[dependent]!.leader == nil,
        let index = ops[dependent]!.explicit.firstIndex(where: { $0.op == dependency })
      else { return .done }
      ops[dependent]!.explicit.remove(at: index)
      if ops[dependent]!.producedOp == dependency { ops[dependent]!.producedLinked = false }
      journal.append(.edgeRemoved(dependent: dependent, dependency: dependency, step: self.step))
      return .done
    case .addAgain(let op, let queue):
      guard handleHeld(op), isBase(queue), isLive(queue: queue) else { return .skip }
      return .refused(.alreadyEnqueued)
    case .cancel(let op):
      guard handleHeld(op) else { return .skip }
      cancel(op)
      return .done
    case .cancelAll(let queue):
      guard isLive(queue: queue) else { return .skip }
      for op in unfinished(in: queue) { cancel(op) }
      return .done
    case .setLimit(let queue, let limit):
      guard isLive(queue: queue), limit == -1 || limit >= 1 else { return .skip }
      queues[queue].limit = limit == -1 ? .max : limit
      return .done
    case .setLimitPausingExcess(let queue, let limit):
      guard isLive(queue: queue), limit == -1 || limit >= 1 else { return .skip }
      queues[queue].limit = limit == -1 ? .max : limit
      settle()  // the setter's own starts and recount, before the requests are made
      requestExcessPauses(in: queue)
      return .done
    case .setSuspended(let queue, let suspended):
      guard isLive(queue: queue) else { return .skip }
      queues[queue].suspended = suspended
      if suspended {
        for reserver in reservers where ops[reserver]!.queue == queue { clearReservations(of: reserver) }
      }
      return .done
    case .setPriority(let op, let priority):
      guard handleHeld(op), ops[op]!.priority != priority else { return .skip }
      ops[op]!.priority = priority
      journal.append(.priority(op: op, priority: priority, step: self.step))
      if let leader = ops[op]!.leader, !ops[op]!.state.isTerminal { raiseLeaderPriority(leader) }
      return .done
    case .open(let op):
      guard let model = ops[op], model.leader == nil, !model.body.auto, !model.state.isTerminal else {
        return .skip
      }
      if model.evaluating && !model.evaluationOpen {
        ops[op]!.evaluationOpen = true
        return .done
      }
      guard model.opens < model.body.checkpoints + 1 else { return .skip }
      ops[op]!.opens += 1
      return .done
    case .openFully(let op):
      guard let model = ops[op], model.leader == nil, !model.body.auto, !model.state.isTerminal,
        model.opens < model.body.checkpoints + 1 || (model.evaluating && !model.evaluationOpen)
      else { return .skip }
      ops[op]!.opens = model.body.checkpoints + 1
      if model.evaluating { ops[op]!.evaluationOpen = true }
      return .done
    case .dropHandle(let op):
      guard handleHeld(op) else { return .skip }
      ops[op]!.handleHeld = false
      return .done
    case .releaseQueue(let queue):
      // A waiting submitter holds its queue.
      guard isBase(queue), isLive(queue: queue), queues[queue].line.isEmpty else { return .skip }
      if queues[queue].suspended {
        // Released while suspended: its deinit cancels what waits in it, and its paused bodies.
        // Only when nothing that is still running or waiting holds its owner (else it is the
        // user's own cycle), and no executing op is asked to pause (it would pause for good:
        // see ReleasedSuspendedQueuePauseTests).
        let captured = ops.values.contains { !$0.state.isTerminal && $0.captures.contains(queue) }
        let asked = ops.values.contains {
          $0.queue == queue && $0.state == .executing && $0.holdsSlot && ($0.pauseHeld || $0.excessPaused)
        }
        guard !captured, !asked else { return .skip }
        queues[queue].released = true
        queues[queue].releasedSuspended = true
        for op in unfinished(in: queue) {
          let model = ops[op]!
          if model.state == .waiting || (model.pausedInBody && !model.threw) { cancel(op) }
        }
      } else {
        // What `pause()` holds there is kept by references outside the queue only: see
        // `releaseUnkept()`.
        queues[queue].released = true
      }
      return .done
    case .pause(let op):
      guard handleHeld(op) else { return .skip }
      let target = target(op)
      // In a queue released while suspended a paused body would never get a slot again.
      guard !queues[ops[target]!.queue].releasedSuspended else { return .skip }
      pause(target)
      return .done
    case .resume(let op):
      guard handleHeld(op) else { return .skip }
      resume(target(op))
      return .done
    case .pauseAll(let queue):
      guard isLive(queue: queue) else { return .skip }
      for op in unfinished(in: queue) { pause(op) }
      return .done
    case .resumeAll(let queue):
      guard isLive(queue: queue) else { return .skip }
      for op in unfinished(in: queue) { resume(op) }
      return .done
    case .addTimed(let op, let queue, let priority, let deadline, let timeout, let body):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil, validCaptures(body),
        deadline != nil || timeout != nil,
        (timeout ?? 1) > 0
      else { return .skip }
      create(op, queue: queue, priority: priority, body: body)
      ops[op]!.timeout = timeout
      enqueue(op)
      if let deadline { armDeadline(of: op, at: now + deadline) }
      return .done
    case .advance(let seconds):
      guard seconds >= 0 else { return .skip }
      // Stops at each permit timer's instant, as the scheduler's advance does (a stop is settled
      // as a step of its own: grants happen at their instants).
      let target = now + seconds
      // A body that starts during the advance counts its timeout from its end (its task reports
      // its first line once the clock has got there, or while it is between stops).
      advanceTarget = target
      defer { advanceTarget = nil }
      while let stop = earliestThrottle(), stop < target {
        advanceClock(to: stop)
        settle()
      }
      advanceClock(to: target)
      return .done
    case .setLimiters(let queue, let limiters):
      guard isBase(queue), isLive(queue: queue), limiters.allSatisfy({ $0 >= 0 && $0 < limiterSpecs.count })
      else {
        return .skip
      }
      var listed: [Int] = []
      for limiter in limiters where !listed.contains(limiter) { listed.append(limiter) }
      queues[queue].limiters = listed
      if listed.isEmpty {
        queues[queue].armedThrottle = nil
      } else {
        queues[queue].hasKeys = true
        // Waiting ops that cost more than a limiter grants at once end, in submission order.
        let capacity = capacity(of: queue)
        for op in unfinished(in: queue)
        where ops[op]!.state == .waiting && ops[op]!.cost > capacity && !ops[op]!.state.isTerminal {
          end(op, as: .failed)
        }
      }
      return .done
    case .addCosted(let op, let queue, let priority, let cost, let body):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil, validCaptures(body), cost >= 0 else {
        return .skip
      }
      create(op, queue: queue, priority: priority, body: body)
      ops[op]!.cost = cost
      enqueue(op)
      if !queues[queue].limiters.isEmpty, cost > capacity(of: queue) { end(op, as: .failed) }
      return .done
    case .penalize(let limiter, let seconds):
      guard limiter >= 0, limiter < limiterSpecs.count, seconds >= 0 else { return .skip }
      limiterSchedules[limiter].penalize(until: Int64(now + seconds) * Self.second)
      return .done
    case .addExclusive(let op, let queue, let priority, let keys, let shared, let body):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil, validCaptures(body) else { return .skip }
      create(op, queue: queue, priority: priority, body: body)
      ops[op]!.locks = Set(keys.map { ModelLock(domain: shared ? -1 : queue, key: $0) }).sorted()
      if !ops[op]!.locks.isEmpty {
        queues[queue].hasKeys = true
        journal.append(.keys(op: op, locks: ops[op]!.locks.map(\.id), step: self.step))
      }
      enqueue(op)
      return .done
    case .addRetrying(let op, let queue, let priority, let retry, let body):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil, validCaptures(body), retry.attempts >= 1,
        retry.backoff >= 0,
        (retry.timeout ?? 1) > 0
      else { return .skip }
      create(op, queue: queue, priority: priority, body: body)
      ops[op]!.timeout = retry.timeout
      ops[op]!.retry = retry
      enqueue(op)
      if let deadline = retry.deadline { armDeadline(of: op, at: now + deadline) }
      return .done
    case .addConditional(
      let op, let queue, let priority, let answers, let keys, let deadline, let body, let produced):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil, validCaptures(body),
        answers.allSatisfy({ (0...5).contains($0) }),
        produced.map({ ops[$0.op] == nil && $0.op != op && validCaptures($0.body) }) ?? true
      else { return .skip }
      if let produced {
        // Made when the op is created (its condition is asked then), and waited for by it.
        create(produced.op, queue: queue, priority: 2, body: produced.body)
      }
      create(op, queue: queue, priority: priority, body: body)
      if let produced {
        ops[op]!.producedOp = produced.op
        ops[op]!.producedLinked = true
        ops[op]!.explicit.append((produced.op, false))
        journal.append(.edge(dependent: op, dependency: produced.op, step: self.step))
      }
      ops[op]!.answers = answers
      ops[op]!.locks = Set(keys.map { ModelLock(domain: queue, key: $0) }).sorted()
      if !ops[op]!.locks.isEmpty {
        queues[queue].hasKeys = true
        journal.append(.keys(op: op, locks: ops[op]!.locks.map(\.id), step: self.step))
      }
      enqueue(op)
      if let deadline { armDeadline(of: op, at: now + deadline) }
      // Added to the queue with the op, after it.
      if let produced { enqueue(produced.op) }
      return .done
    case .addCoalesced(let op, let work, let queue, let priority, let key, let body, let tags):
      guard isBase(queue), isLive(queue: queue), ops[op] == nil else { return .skip }
      let leader: Int
      if let existing = unfinished(in: queue).first(where: { ops[$0]!.key == key }) {
        leader = existing
      } else {
        guard ops[work] == nil, work != op, validCaptures(body) else { return .skip }
        var body = body
        body.handlerCapturesQueue = nil
        create(work, queue: queue, priority: priority, body: body)
        ops[work]!.handleHeld = false
        ops[work]!.key = key
        ops[work]!.tags = Set(tags ?? [])
        enqueue(work)
        leader = work
      }
      create(
        op, queue: queue, priority: priority,
        body: BodySpec(auto: false, checksCancellation: false, throwing: false))
      ops[op]!.tags = Set(tags ?? [])
      ops[op]!.leader = leader
      ops[leader]!.followers.append(op)
      raiseLeaderPriority(leader)
      return .done
    }
  }

  /// `op`, being added to `queue`, takes `keys` in the queue's domain (a group's queue: its
  /// outermost group's queue's), less those a group it is inside holds: they are its group's.
  private mutating func takeKeys(_ keys: [Int], op: Int, in queue: Int) {
    var domain = queue
    var enclosing: [Int] = []
    while let group = queues[domain].groupOp {
      enclosing.append(group)
      domain = ops[group]!.queue
    }
    let held = Set(enclosing.filter { ops[$0]!.holdsLocks }.flatMap { ops[$0]!.locks })
    ops[op]!.locks = Set(keys.map { ModelLock(domain: domain, key: $0) }).subtracting(held).sorted()
    guard !ops[op]!.locks.isEmpty else { return }
    queues[queue].hasKeys = true
    journal.append(.keys(op: op, locks: ops[op]!.locks.map(\.id), step: self.step))
  }

  private func validCaptures(_ body: BodySpec) -> Bool {
    body.captures.allSatisfy { isBase($0) && isLive(queue: $0) }
  }

  /// Whether `queue` is one the script made (not a group's).
  func isBase(_ queue: Int) -> Bool { queue < baseQueueCount }

  /// The unfinished ops tagged `tag` of `queue` (a caller's handle counts in its work's queue;
  /// every queue: `nil`), in creation order: what `operations(tagged:)` lists. Shared work shows
  /// its first caller's tags, and is not listed.
  func tagged(_ tag: Int, in queue: Int?) -> [Int] {
    ops.filter { _, op in
      op.tags.contains(tag) && !op.state.isTerminal && (op.enqueued || op.leader != nil) && op.key == nil
        && (queue == nil || op.queue == queue)
    }.sorted { $0.value.creation < $1.value.creation }.map(\.key)
  }

  /// A submitter that asks may add to `queue` now: below its capacity, nobody waiting before it.
  private func hasSpace(_ queue: Int) -> Bool {
    queues[queue].line.isEmpty && unfinishedCount(in: queue) < queues[queue].capacity
  }

  /// What the queue's capacity counts: its unfinished ops (`operationCount`).
  func unfinishedCount(in queue: Int) -> Int {
    ops.values.reduce(0) { $0 + ($1.queue == queue && $1.enqueued && !$1.state.isTerminal ? 1 : 0) }
  }

  /// Adds the ops of waiting submitters while their queues have space, first come first served,
  /// queues in index order: before anything starts, so that one competes for the slot an end freed.
  private mutating func serveLines() {
    for queue in queues.indices where !queues[queue].line.isEmpty {
      while !queues[queue].line.isEmpty, unfinishedCount(in: queue) < queues[queue].capacity {
        let op = queues[queue].line.removeFirst()
        ops[op]!.awaitingSpace = false
        ops[op]!.handleHeld = true
        enqueue(op)
        served += 1
      }
    }
  }

  /// The ops of submitters waiting for space in `queue`, first served first.
  func line(of queue: Int) -> [Int] { queue < queues.count ? queues[queue].line : [] }

  /// The queue's unfinished ops (followers are in no queue), in submission order.
  private func unfinished(in queue: Int) -> [Int] {
    ops.filter { $0.value.queue == queue && $0.value.enqueued && !$0.value.state.isTerminal }
      .sorted { $0.value.order < $1.value.order }.map(\.key)
  }

  private mutating func create(_ op: Int, queue: Int, priority: Int, body: BodySpec, isBarrier: Bool = false)
  {
    ops[op] = Op(queue: queue, priority: priority, body: body, isBarrier: isBarrier)
    ops[op]!.creation = nextCreation
    nextCreation += 1
    if body.auto { ops[op]!.opens = body.checkpoints + 1 }
  }

  private mutating func enqueue(_ op: Int, asBarrier: Bool = false) {
    guard !ops[op]!.state.isTerminal else { return }
    nextOrder += 1
    ops[op]!.order = nextOrder
    ops[op]!.enqueued = true
    let queue = ops[op]!.queue
    journal.append(.operation(op, queue: queue, priority: ops[op]!.priority, step: step))
    if !asBarrier {
      let barriers = queues[queue].barriers.filter { !ops[$0]!.state.isTerminal }
      ops[op]!.barrierDependencies = barriers
      for barrier in barriers { journal.append(.edge(dependent: op, dependency: barrier, step: step)) }
    }
    if let group = queues[queue].groupOp {
      // One refused after the group ended is not its child.
      if queues[queue].admission != 2 { journal.append(.groupChild(op: op, group: group, step: step)) }
      switch queues[queue].admission {
      case 2: end(op, as: .failed)  // ActorQueueError.groupEnded
      case 1: cancel(op)
      default: if let deadline = queues[queue].groupDeadline { armDeadline(of: op, at: deadline) }
      }
    }
  }

  private mutating func addDependency(_ edge: Dependency) -> StepExpectation {
    guard let dependent = ops[edge.dependent], let dependency = ops[edge.dependency] else { return .skip }
    guard dependent.leader == nil else { return .refused(.joinedSharedWork) }
    guard dependent.state == .waiting else { return .refused(.alreadyStarted) }
    if let index = dependent.explicit.firstIndex(where: { $0.op == edge.dependency }) {
      guard edge.mustSucceed, !dependent.explicit[index].mustSucceed else { return .done }
      ops[edge.dependent]!.explicit[index].mustSucceed = true
      if dependency.state.isTerminal && dependency.state != .finished {
        ops[edge.dependent]!.eitherBadOutcome = dependency.eitherBadOutcome
        end(edge.dependent, as: dependency.state == .cancelled ? .cancelled : .failed)
      }
      return .done
    }
    if edge.dependent == edge.dependency || waits(edge.dependency, for: edge.dependent) {
      return .refused(.dependencyCycle)
    }
    ops[edge.dependent]!.explicit.append((edge.dependency, edge.mustSucceed))
    if !dependency.state.isTerminal, !dependent.locks.isEmpty, dependent.enqueued {
      stopWaitingForLocks(edge.dependent)
    }
    if dependency.state.isTerminal {
      if edge.mustSucceed && dependency.state != .finished {
        ops[edge.dependent]!.eitherBadOutcome = dependency.eitherBadOutcome
        end(edge.dependent, as: dependency.state == .cancelled ? .cancelled : .failed)
      }
    } else {
      journal.append(.edge(dependent: edge.dependent, dependency: edge.dependency, step: step))
    }
    return .done
  }

  /// True when `op` waits, directly or not, for `other` (through edges to ops not yet ended; a
  /// follower waits for its shared work).
  private func waits(_ op: Int, for other: Int) -> Bool {
    guard !ops[op]!.state.isTerminal else { return false }
    var stack = [op]
    var seen: Set<Int> = [op]
    while let current = stack.popLast() {
      for next in ops[current]!.allDependencies + children(of: current) where !ops[next]!.state.isTerminal {
        if next == other { return true }
        if seen.insert(next).inserted { stack.append(next) }
      }
    }
    return false
  }

  /// What is wrong with `cycle`, the path a `.dependencyCycle` refusal of `edge` named
  /// (``ActorQueueError/cycle``, each member as a model op, `nil` for an identifier no op has),
  /// in the model as it was before the refused step; `nil` when it is a real cycle. Real: it
  /// starts with the dependent, then the dependency; every member is unfinished, appears once,
  /// and waits directly (an explicit edge, an input, a barrier edge, or a follower's wait for its
  /// shared work) for the next, and the last for the first, apart from the refused edge itself;
  /// and exactly the shared work says so.
  func cycleProblem(_ cycle: [(op: Int?, isSharedWork: Bool)], refusing edge: Dependency) -> String? {
    let ops = cycle.compactMap(\.op)
    let path = cycle.map { $0.op.map { "op\($0)" } ?? "?" }.joined(separator: " → ")
    guard ops.count == cycle.count else { return "the cycle \(path) names an unknown operation" }
    let expectedStart =
      edge.dependent == edge.dependency ? [edge.dependent] : [edge.dependent, edge.dependency]
    guard Array(ops.prefix(2)) == expectedStart else {
      return
        "the cycle \(path) does not start with the refused edge op\(edge.dependent) → op\(edge.dependency)"
    }
    guard Set(ops).count == ops.count else { return "the cycle \(path) repeats an operation" }
    for (position, op) in ops.enumerated() {
      guard let model = self.ops[op], !model.state.isTerminal else {
        return "the cycle \(path) names op\(op), which has ended"
      }
      let isSharedWork = model.key != nil && model.leader == nil
      if cycle[position].isSharedWork != isSharedWork {
        return "the cycle \(path) says op\(op) is\(isSharedWork ? " not" : "") shared work"
      }
      // The first member's wait for the second is the refused edge.
      let next = ops[(position + 1) % ops.count]
      if position > 0, !model.allDependencies.contains(next), !children(of: op).contains(next) {
        return "the cycle \(path) is not real: op\(op) does not wait for op\(next)"
      }
    }
    return nil
  }

  private mutating func cancel(_ op: Int) {
    guard !ops[op]!.state.isTerminal else { return }
    if let leader = ops[op]!.leader {
      // A caller's handle: it ends at once; the work is cancelled once no caller waits for it.
      end(op, as: .cancelled)
      if ops[leader]!.followers.contains(where: { !ops[$0]!.state.isTerminal }) {
        raiseLeaderPriority(leader)
      } else {
        cancel(leader)
      }
      return
    }
    ops[op]!.cancelRequested = true
    if let queue = ops[op]!.groupQueue, ops[op]!.state == .executing { pendingGroupCancels.append(queue) }
    if ops[op]!.state == .waiting {
      if ops[op]!.enqueued { journal.append(.cancelledWhileWaiting(op: op, step: step)) }
      end(op, as: .cancelled)
    } else if ops[op]!.pausedInBody && !ops[op]!.threw {
      // Its checkpoint throws; it runs to its end holding no slot, `.paused` until then.
      ops[op]!.threw = true
      ops[op]!.inReady = false
      ops[op]!.showsReady = false
      checkpointLog.append("op\(op) cancelled")
      journal.append(.cancelledWhilePaused(op: op, step: step))
    }
  }

  private mutating func raiseLeaderPriority(_ leader: Int) {
    let unfinished = ops[leader]!.followers.filter { !ops[$0]!.state.isTerminal }
    guard let highest = unfinished.map({ ops[$0]!.priority }).max(), highest != ops[leader]!.priority else {
      return
    }
    ops[leader]!.priority = highest
    journal.append(.priority(op: leader, priority: highest, step: step))
  }

  private mutating func pause(_ op: Int) {
    guard !ops[op]!.state.isTerminal else { return }
    ops[op]!.pauseHeld = true
    if ops[op]!.state == .waiting, !ops[op]!.locks.isEmpty { stopWaitingForLocks(op) }
    if ops[op]!.pausedInBody {
      ops[op]!.inReady = false
      ops[op]!.showsReady = false
    }
  }

  private mutating func resume(_ op: Int) {
    guard !ops[op]!.state.isTerminal else { return }
    ops[op]!.pauseHeld = false
    ops[op]!.excessPaused = false
    if ops[op]!.pausedInBody && !ops[op]!.cancelRequested && !ops[op]!.timedOut {
      ops[op]!.inReady = true
      ops[op]!.showsReady = true
    }
  }

  /// `setMaxConcurrentOperationCount(_:pausingExcess: true)` after the limit is set: asks the
  /// executing ops beyond it to pause, lowest priority first, then the most recently started.
  private mutating func requestExcessPauses(in queue: Int) {
    let limit = queues[queue].limit
    guard limit != .max else { return }
    let slotHolders = executing(in: queue)
    var excess = slotHolders.count - limit
    var candidates: [Int] = []
    for op in slotHolders {
      if ops[op]!.pauseHeld || ops[op]!.excessPaused {
        excess -= 1
      } else {
        candidates.append(op)
      }
    }
    guard excess > 0 else { return }
    candidates.sort { left, right in
      let (a, b) = (ops[left]!, ops[right]!)
      return a.priority != b.priority ? a.priority < b.priority : a.startOrder > b.startOrder
    }
    for op in candidates.prefix(excess) { ops[op]!.excessPaused = true }
  }

  /// Withdraws the excess requests freed slots made unneeded: those chosen last first.
  private mutating func recountExcessRequests(in queue: Int) {
    let slotHolders = executing(in: queue)
    var requested = slotHolders.filter { !ops[$0]!.pauseHeld && ops[$0]!.excessPaused }.sorted()
    guard !requested.isEmpty else { return }
    let limit = queues[queue].limit
    let needed =
      limit == .max ? 0 : slotHolders.count - limit - slotHolders.filter { ops[$0]!.pauseHeld }.count
    let surplus = requested.count - max(needed, 0)
    guard surplus > 0 else { return }
    requested.sort { left, right in
      let (a, b) = (ops[left]!, ops[right]!)
      return a.priority != b.priority ? a.priority > b.priority : a.startOrder < b.startOrder
    }
    for op in requested.prefix(surplus) { ops[op]!.excessPaused = false }
  }

  // MARK: Time

  /// `op`, just enqueued, has a deadline at `at`: armed, or (already due) acted on at once.
  private mutating func armDeadline(of op: Int, at: Int) {
    ops[op]!.deadline = at
    if at <= now {
      journal.append(.deadlinePassed(op: op, step: step))
      timeOut(op, deadline: true)
    } else {
      ops[op]!.deadlineAt = at
    }
  }

  /// The clock moves to `target`: the timers due by then fire in instant order (ties: ops in the
  /// order they were made, which is their numbers', and a deadline before a timeout), then the
  /// clock reads `target` (the caller's `settle()` starts what may start).
  private mutating func advanceClock(to target: Int) {
    var due: [(at: Int, op: Int, deadline: Bool)] = []
    for (op, model) in ops {
      if let at = model.deadlineAt, at <= target { due.append((at, op, true)) }
      if let at = model.timeoutAt, at <= target { due.append((at, op, false)) }
    }
    due.sort { ($0.at, $0.op, $0.deadline ? 0 : 1) < ($1.at, $1.op, $1.deadline ? 0 : 1) }
    // A backoff's timer makes its op ready: it starts nothing, so its place among the others
    // changes no outcome; it is due unless its op ended (or was acted on) earlier in the advance.
    let backoffs = ops.filter { $0.value.backoffAt.map { $0 <= target } ?? false }.map(\.key)
    // Only a waiting op can be ended by another's timer (an executing one runs to its body's end).
    let waiting = Set(due.filter { ops[$0.op]!.state == .waiting }.map(\.op))
    for op in Set(due.filter(\.deadline).map(\.op)).sorted() {
      // Given a slot at an earlier stop of this advance (a permit timer's), before its deadline:
      // from the next step on it must get none (no body moves during an advance).
      journal.append(.deadlinePassed(op: op, step: ops[op]!.slotStep == step ? step + 1 : step))
    }
    var acted = Set<Int>()
    for timer in due {
      // Skipped when its op ended earlier in this advance (its timers went stale).
      if timer.deadline {
        guard ops[timer.op]!.deadlineAt == timer.at else { continue }
        ops[timer.op]!.deadlineAt = nil
      } else {
        guard ops[timer.op]!.timeoutAt == timer.at else { continue }
        ops[timer.op]!.timeoutAt = nil
      }
      if timeOut(timer.op, deadline: timer.deadline) { acted.insert(timer.op) }
    }
    for op in backoffs where ops[op]!.state == .waiting {
      ops[op]!.backoffAt = nil
      ops[op]!.deferred = false
    }
    // Waiting ops a dependency's timer ended before their own deadline fired.
    for op in Set(due.filter { $0.deadline && !acted.contains($0.op) }.map(\.op)).sorted()
    where ops[op]!.state.isTerminal && waiting.contains(op) {
      journal.append(.mayTimeOut(op: op, step: step))
      ops[op]!.mayHaveTimedOut = true
    }
    now = target
  }

  /// `op`'s deadline or timeout passed; returns whether it acted (a detail event). Nothing
  /// happens to an op that ended, was cancelled first, or timed out already.
  @discardableResult
  private mutating func timeOut(_ op: Int, deadline: Bool) -> Bool {
    let model = ops[op]!
    guard !model.state.isTerminal, !model.cancelRequested, !model.timedOut else { return false }
    journal.append(.timedOut(op: op, deadline: deadline, step: step))
    ops[op]!.timerActed = deadline
    if model.state == .waiting {
      end(op, as: .failed)
      return true
    }
    ops[op]!.timedOut = true
    if let queue = model.groupQueue { pendingGroupCancels.append(queue) }
    if model.pausedInBody && !model.threw {
      // As cancel(): its checkpoint throws; it runs to its end holding no slot.
      ops[op]!.threw = true
      ops[op]!.inReady = false
      ops[op]!.showsReady = false
      checkpointLog.append("op\(op) cancelled")
      journal.append(.cancelledWhilePaused(op: op, step: step))
    }
    return true
  }

  /// Whether a timer acted on `op` while it executed.
  func isTimedOut(_ op: Int) -> Bool { ops[op]?.timedOut ?? false }

  /// The error a failed op must end with: `nil` when no timer acted on it; else the kind
  /// (`deadline`) and whether it had started; `either` when a timer may or may not have.
  func timeoutEnd(of op: Int) -> (deadline: Bool, hadStarted: Bool, either: Bool)? {
    guard let model = ops[op] else { return nil }
    if let deadline = model.timerActed { return (deadline, model.startedAt != nil, false) }
    // A retrying op waiting for its next attempt had started (an earlier attempt).
    return model.mayHaveTimedOut ? (true, model.startedAt != nil, true) : nil
  }

  /// `op`'s armed deadline and timeout (seconds), while it has not ended.
  func armedTimers(of op: Int) -> (deadline: Int?, timeout: Int?) {
    (ops[op]?.deadlineAt, ops[op]?.timeoutAt)
  }

  /// Timers armed on the clock (each op's deadline and timeout until they fire or it ends).
  var armedTimerCount: Int {
    ops.values.reduce(0) {
      $0 + ($1.deadlineAt == nil ? 0 : 1) + ($1.timeoutAt == nil ? 0 : 1) + ($1.backoffAt == nil ? 0 : 1)
    } + queues.filter { $0.armedThrottle != nil }.count
  }

  /// Whether `op` waits out a retry's backoff (it must hold no slot and no worker).
  func isInBackoff(_ op: Int) -> Bool { ops[op]?.backoffAt != nil }

  /// Attempts `op` started.
  func attempts(of op: Int) -> Int { ops[op]?.attempt ?? 0 }

  /// Whether `op`'s deadline has passed on the clock and its body had not started before it: it
  /// must not be `.executing`.
  func mustNotExecute(_ op: Int) -> Bool {
    guard let model = ops[op], let deadline = model.deadline, deadline <= now else { return false }
    return model.startedAt.map { $0 >= deadline } ?? true
  }

  /// Ends `op` and, through must-succeed edges, inputs and followers, every waiting op that needed
  /// it.
  private mutating func end(_ op: Int, as terminal: ModelState, byGroupBody: Bool = false) {
    let wasWaiting = ops[op]!.state == .waiting
    ops[op]!.state = terminal
    ops[op]!.holdsSlot = false
    ops[op]!.inReady = false
    if terminal == .cancelled { ops[op]!.cancelRequested = true }
    var frontier = [op]
    while let current = frontier.popLast() {
      // Ended: its timers go stale.
      ops[current]!.deadlineAt = nil
      ops[current]!.timeoutAt = nil
      ops[current]!.backoffAt = nil
      ops[current]!.endedStep = step
      let outcome = ops[current]!.state
      let either = ops[current]!.eitherBadOutcome
      if outcome == .failed { noteChildFailure(current) }
      for follower in ops[current]!.followers where !ops[follower]!.state.isTerminal {
        ops[follower]!.state = outcome
        if outcome == .cancelled { ops[follower]!.cancelRequested = true }
        if either { ops[follower]!.eitherBadOutcome = true }
        frontier.append(follower)
      }
      guard outcome != .finished else { continue }
      // Ended without running (from waiting): what its condition produced goes, unless another
      // unfinished op depends on it; before its dependents end, as the scheduler does.
      if current != op || wasWaiting, ops[current]!.producedLinked, let produced = ops[current]!.producedOp,
        !ops[produced]!.state.isTerminal,
        !ops.contains(where: { other, model in
          other != current && !model.state.isTerminal && model.allDependencies.contains(produced)
        })
      {
        cancel(produced)
      }
      let bad: ModelState = outcome == .cancelled ? .cancelled : .failed
      for waiting in sortedOpIndices
      where ops[waiting]!.state == .waiting && ops[waiting]!.leader == nil
        && ops[waiting]!.requiresSuccess(of: current)
      {
        ops[waiting]!.state = bad
        if outcome == .cancelled { ops[waiting]!.cancelRequested = true }
        if either { ops[waiting]!.eitherBadOutcome = true }
        frontier.append(waiting)
      }
      // A dependent this step's call ended otherwise may be ended by this group's end first.
      if byGroupBody, groupEndsBetweenSlices {
        for other in sortedOpIndices
        where ops[other]!.endedStep == step && ops[other]!.state.isTerminal && ops[other]!.state != .finished
          && ops[other]!.state != bad && ops[other]!.leader == nil && ops[other]!.requiresSuccess(of: current)
        {
          markEitherBadOutcome(other)
        }
      }
    }
  }

  /// `op` may have ended failed or cancelled: so may what ended in this step because it did.
  private mutating func markEitherBadOutcome(_ op: Int) {
    var frontier = [op]
    while let current = frontier.popLast() {
      guard !ops[current]!.eitherBadOutcome else { continue }
      ops[current]!.eitherBadOutcome = true
      for other in sortedOpIndices
      where ops[other]!.endedStep == step && ops[other]!.state.isTerminal && ops[other]!.state != .finished
        && (ops[current]!.followers.contains(other)
          || (ops[other]!.leader == nil && ops[other]!.requiresSuccess(of: current)))
      {
        frontier.append(other)
      }
    }
  }

  /// True when the op waits in its queue with every dependency ended and is not held
  /// (`.ready`, not `.pending`).
  func isReady(_ op: Int) -> Bool { ops[op].map(isReady) ?? false }

  private func isReady(_ op: Op) -> Bool {
    op.state == .waiting && op.enqueued && !op.pauseHeld && op.leader == nil && op.backoffAt == nil
      && !op.parked && op.allDependencies.allSatisfy { ops[$0]!.state.isTerminal }
  }

  /// Recounts excess requests, then starts what may start: in each queue not suspended, while a
  /// slot is free, the ready op or paused body competing for a slot of highest priority, first
  /// submitted first. Then notes which bodies may move.
  private mutating func settle() {
    repeat {
      // First in each round: a group's end, in the last round's check, lets go of its keys.
      endLocks()
      cancelSiblings()
      serveLines()
      startWhatMayStart()
      endLocks()
      // Heads found with a cost their limiters never grant end, and what follows them may start.
      while !impossibleHeads.isEmpty {
        let found = impossibleHeads
        impossibleHeads = []
        for op in found where ops[op]!.state == .waiting && ops[op]!.cost > capacity(of: ops[op]!.queue) {
          end(op, as: .failed)
        }
        serveLines()
        startWhatMayStart()
        endLocks()
      }
    } while releaseUnkept() || groupBodiesAct()
    noteMovable()
  }

  /// Handles gone since the last `takeGoneHandles()`: the ops whose last reference went while
  /// they were unfinished, in the order they went.
  private var goneHandles: [Int] = []

  mutating func takeGoneHandles() -> [Int] {
    defer { goneHandles = [] }
    return goneHandles
  }

  /// Once its queue is released (and no unfinished op's body or handler captures its owner any
  /// more), an op held by `pause()` is let go of by the queue (shared work: its callers'
  /// handles), and kept only by references outside it: the script's handles, and unfinished
  /// ops that depend on it (shared work: its callers' handles, a follower waits for it). An
  /// unfinished op that nothing keeps has its handle gone; if it (its shared work) is still held,
  /// it is cancelled, as nobody could resume it. Returns whether it cancelled anything.
  private mutating func releaseUnkept() -> Bool {
    let captured = Set(ops.values.filter { !$0.state.isTerminal }.flatMap(\.captures))
    for (op, model) in ops
    where model.pauseHeld && !model.letGo && !model.state.isTerminal && model.queue < queues.count
      && queues[model.queue].released && !captured.contains(model.queue)
    {
      ops[op]!.letGo = true
    }
    guard ops.values.contains(where: { $0.letGo && !$0.state.isTerminal }) else { return false }
    var kept = Set<Int>()
    for (op, model) in ops {
      let isShared = !model.followers.isEmpty
      // A condition being evaluated: its worker holds its handle.
      // A waiting submitter holds its op.
      if model.handleHeld || model.evaluating || model.awaitingSpace
        || (model.enqueued && model.leader == nil && !model.state.isTerminal && (!model.letGo || isShared))
      {
        kept.insert(op)
      }
      if isShared, !model.letGo, !model.state.isTerminal {
        kept.formUnion(model.followers.filter { !ops[$0]!.state.isTerminal })
      }
      // Its condition holds the op it produced.
      if !model.state.isTerminal, let produced = model.producedOp { kept.insert(produced) }
    }
    var stack = Array(kept)
    while let op = stack.popLast() {
      guard !ops[op]!.state.isTerminal else { continue }  // an ended op owns no dependency
      for next in ops[op]!.allDependencies where kept.insert(next).inserted { stack.append(next) }
    }
    var cancelled = false
    for op in sortedOpIndices
    where !ops[op]!.state.isTerminal && !ops[op]!.handleGone && !kept.contains(op) {
      ops[op]!.handleGone = true
      goneHandles.append(op)
      if ops[target(op)]!.pauseHeld {
        cancel(op)
        cancelled = true
      }
    }
    return cancelled
  }

  /// Recounts excess requests, then starts what may start (see `settle()`).
  private mutating func startWhatMayStart() {
    // One pass over the ops (a model op is costly to copy in a debug build): per queue, the
    // slot holders, whether excess requests are out, and what may start.
    var holders = [Int](repeating: 0, count: queues.count)
    var requests = [Bool](repeating: false, count: queues.count)
    var candidates = [[(op: Int, priority: Int, order: Int)]](repeating: [], count: queues.count)
    for (op, model) in ops where model.queue < queues.count {
      if model.state == .executing && model.holdsSlot { holders[model.queue] += 1 }
      if model.excessPaused { requests[model.queue] = true }
      if isReady(model) || (model.pausedInBody && model.inReady && !model.threw) {
        candidates[model.queue].append((op, model.priority, model.order))
      }
    }
    for queue in queues.indices {
      if requests[queue] { recountExcessRequests(in: queue) }
      guard !queues[queue].suspended, !queues[queue].hasKeys else { continue }
      // Starting one op makes no other ready: the candidates stay valid.
      let ordered = candidates[queue].sorted {
        $0.priority != $1.priority ? $0.priority > $1.priority : $0.order < $1.order
      }
      for candidate in ordered {
        guard holders[queue] < queues[queue].limit else { break }
        start(candidate.op)
        holders[queue] += 1
      }
    }
    if queues.contains(where: \.hasKeys) { arbitrate() }
  }

  /// Gives `index`, a ready op or a paused body competing for a slot, a slot.
  private mutating func start(_ index: Int) {
    let queue = ops[index]!.queue
    if !queues[queue].limiters.isEmpty, ops[index]!.state != .executing, ops[index]!.cost > 0 {
      // A start takes its cost from each of its queue's limiters; a paused body, nothing.
      grants += 1
      for limiter in queues[queue].limiters {
        limiterSchedules[limiter].consume(cost: Int64(ops[index]!.cost), at: Int64(now) * Self.second)
        limiterStarts[limiter].append((now, ops[index]!.cost))
      }
    }
    if !ops[index]!.locks.isEmpty, !ops[index]!.holdsLocks {
      clearReservations(of: index, markingDirty: false)
      ops[index]!.holdsLocks = true
      ops[index]!.passedOver = 0
      for lock in ops[index]!.locks { holder[lock] = index }
    }
    nextStart += 1
    ops[index]!.startOrder = nextStart
    ops[index]!.holdsSlot = true
    ops[index]!.slotStep = step
    if ops[index]!.state == .executing {
      // A paused body given a slot: its checkpoint returns.
      ops[index]!.inReady = false
      ops[index]!.showsReady = false
      ops[index]!.passed += 1
      ops[index]!.resumes += 1
      checkpointLog.append("op\(index) resumed")
    } else {
      ops[index]!.state = .executing
      if ops[index]!.startedAt == nil { ops[index]!.startedAt = now }
      if let limit = ops[index]!.groupLimit, ops[index]!.groupQueue == nil {
        // Its body makes its queue, on its clock and with the earlier of the deadlines.
        var made = Queue(limit: limit)
        made.groupOp = index
        made.groupDeadline = ops[index]!.deadline
        ops[index]!.groupQueue = queues.count
        journal.append(.queue(queues.count, limit: limit == .max ? -1 : limit))
        queues.append(made)
      }
      ops[index]!.attempt += 1
      if ops[index]!.answers != nil {
        // Nothing holds it any more (its queue let go of it): it ends `.cancelled`, unevaluated.
        let orphan = ops[index]!.handleGone
        ops[index]!.evaluating = true
        ops[index]!.evaluationOpen = ops[index]!.body.auto || orphan
        ops[index]!.orphanEvaluation = orphan
      }
      if let timeout = ops[index]!.timeout {
        ops[index]!.timeoutAt = max(now, advanceTarget ?? now) + timeout
      }
    }
  }

  // MARK: Exclusivity (as Scheduler+Exclusivity.swift documents it)

  private func ranksBefore(_ a: Int, _ b: Int) -> Bool {
    let (x, y) = (ops[a]!, ops[b]!)
    return x.priority != y.priority ? x.priority > y.priority : x.order < y.order
  }

  /// A lock it wants is held or reserved by another op.
  private func isBlocked(_ op: Int) -> Bool {
    let model = ops[op]!
    guard !model.locks.isEmpty, !model.holdsLocks else { return false }
    return model.locks.contains { lock in
      (holder[lock].map { $0 != op } ?? false) || (reservedBy[lock].map { $0 != op } ?? false)
    }
  }

  /// What blocks parked `op`: each lock held or reserved by another op, with that op.
  func blockingLocks(of op: Int) -> [(lock: ModelLock, by: Int)] {
    guard let model = ops[op], !model.holdsLocks else { return [] }
    return model.locks.compactMap { lock in
      if let other = holder[lock], other != op { return (lock, other) }
      if let other = reservedBy[lock], other != op { return (lock, other) }
      return nil
    }
  }

  func isParked(_ op: Int) -> Bool { ops[op]?.parked ?? false }

  private func slotHolders(in queue: Int) -> Int {
    ops.values.filter { $0.queue == queue && $0.state == .executing && $0.holdsSlot }.count
  }

  private func hasRoom(_ queue: Int) -> Bool {
    !queues[queue].suspended && slotHolders(in: queue) < queues[queue].limit
  }

  /// The parked ops that want `lock`, best-ranked first.
  private func waiters(of lock: ModelLock) -> [Int] {
    sortedOpIndices.filter { ops[$0]!.parked && ops[$0]!.locks.contains(lock) }.sorted(by: ranksBefore)
  }

  private mutating func releaseLocks(of op: Int) {
    guard ops[op]!.holdsLocks else { return }
    ops[op]!.holdsLocks = false
    for lock in ops[op]!.locks {
      holder[lock] = nil
      dirty.insert(lock)
    }
  }

  private mutating func clearReservations(of op: Int, markingDirty: Bool = true) {
    guard let position = reservers.firstIndex(of: op) else { return }
    reservers.remove(at: position)
    for lock in ops[op]!.locks where reservedBy[lock] == op {
      reservedBy[lock] = nil
      if markingDirty { dirty.insert(lock) }
    }
  }

  /// `op` stops competing for its locks for now (held, or given a dependency).
  private mutating func stopWaitingForLocks(_ op: Int) {
    ops[op]!.parked = false
    clearReservations(of: op)
  }

  /// Ended ops with locks let go of them, of their place among the waiters, and of their
  /// reservations.
  private mutating func endLocks() {
    for op in sortedOpIndices where ops[op]!.state.isTerminal && !ops[op]!.locks.isEmpty {
      releaseLocks(of: op)
      ops[op]!.parked = false
      clearReservations(of: op)
    }
  }

  /// Released locks scanned, then greedy rounds across the queues with keys, until nothing more
  /// may start.
  private mutating func arbitrate() {
    var scanning = dirty.sorted()
    dirty = []
    while true {
      var again: [ModelLock] = []
      for lock in scanning where scan(lock) { again.append(lock) }
      startGreedily()
      scanning = again.filter { holder[$0] == nil }
      if scanning.isEmpty { break }
    }
    dirty = []
  }

  private mutating func scan(_ lock: ModelLock) -> Bool {
    guard holder[lock] == nil else { return false }
    if let reserver = reservedBy[lock] {
      guard ops[reserver]!.parked, !isBlocked(reserver) else { return false }
      ops[reserver]!.parked = false
      return true
    }
    var putBack = false
    for waiter in waiters(of: lock) where !isBlocked(waiter) {
      ops[waiter]!.parked = false
      putBack = true
      if hasRoom(ops[waiter]!.queue) { break }
    }
    return putBack
  }

  private mutating func startGreedily() {
    // A head passed over for permits whose keys a later start took: another round parks it and
    // drops what it reserved.
    while greedyRound() {}
  }

  /// One greedy round; returns whether a head it passed over for permits is blocked by keys now.
  private mutating func greedyRound() -> Bool {
    // Passed over in this round (a head waiting for permits), with the instant its permits
    // conform (nil: it waits for a better-ranked head sharing a limiter, or its cost is
    // impossible); limiters reserved by such heads against later-ranked ones.
    var skipped: [Int: Int?] = [:]
    var blocked: Set<Int> = []
    defer {
      for queue in queues.indices where !queues[queue].limiters.isEmpty {
        queues[queue].armedThrottle = skipped[queue] ?? nil
      }
    }
    while true {
      var best: Int?
      for queue in queues.indices where queues[queue].hasKeys && hasRoom(queue) && skipped[queue] == nil {
        let candidates = sortedOpIndices.filter { op in
          let model = ops[op]!
          return model.queue == queue
            && (isReady(model) || (model.pausedInBody && model.inReady && !model.threw))
        }.sorted(by: ranksBefore)
        for candidate in candidates {
          if isBlocked(candidate) {
            ops[candidate]!.parked = true
            parks += 1
            continue
          }
          if best == nil || ranksBefore(candidate, best!) { best = candidate }
          break
        }
      }
      guard let best else {
        return skipped.keys.contains { queue in
          let heads = sortedOpIndices.filter { op in
            let model = ops[op]!
            return model.queue == queue
              && (isReady(model) || (model.pausedInBody && model.inReady && !model.threw))
          }.sorted(by: ranksBefore)
          return heads.first.map(isBlocked) ?? false
        }
      }
      let queue = ops[best]!.queue
      if !queues[queue].limiters.isEmpty, let waits = admission(of: best, in: queue, blocked: blocked) {
        skipped[queue] = .some(waits.until)
        if waits.reserves { blocked.formUnion(queues[queue].limiters) }
        continue
      }
      if passOver(best) {
        ops[best]!.parked = true
        continue
      }
      start(best)
    }
  }

  /// Whether `head`, the round's best, waits for permits: nil when it may start; else when its
  /// permits conform (nil: never by a timer of its own) and whether it reserves its limiters.
  private mutating func admission(of head: Int, in queue: Int, blocked: Set<Int>) -> (
    until: Int?, reserves: Bool
  )? {
    let model = ops[head]!
    if model.state == .executing || model.cost == 0 { return nil }  // a paused body; a free op
    let instant = Int64(now) * Self.second
    var conforms = Int64.min
    var waitsForAnother = false
    var impossible = false
    for limiter in queues[queue].limiters {
      if blocked.contains(limiter) {
        waitsForAnother = true
      } else if Int64(model.cost) > limiterSchedules[limiter].capacity {
        impossible = true
      } else {
        conforms = max(
          conforms, limiterSchedules[limiter].conformingInstant(cost: Int64(model.cost), now: instant))
      }
    }
    if !impossible && !waitsForAnother && conforms <= instant { return nil }
    if impossible {
      impossibleHeads.append(head)
      return (nil, false)
    }
    throttles += 1
    guard !waitsForAnother else { return (nil, true) }
    precondition(conforms % Self.second == 0, "a script's limiter granted between whole seconds")
    return (Int(conforms / Self.second), true)
  }

  private static let second: Int64 = 1_000_000_000

  /// The most one start may cost in `queue`.
  private func capacity(of queue: Int) -> Int {
    queues[queue].limiters.map { Int(limiterSchedules[$0].capacity) }.min() ?? .max
  }

  /// The earliest permit timer.
  func earliestThrottle() -> Int? { queues.compactMap(\.armedThrottle).min() }

  /// What the wait report names as waiting for permits: the ready head of `queue` (not suspended,
  /// with limiters; a paused body or a free op takes none) and the instant (s) its cost conforms
  /// to every limiter that can grant it, when later than now. Whether `queue` has room besides.
  func throttledHead(of queue: Int) -> (op: Int, until: Int, hasRoom: Bool)? {
    guard !queues[queue].limiters.isEmpty, !queues[queue].suspended else { return nil }
    let heads = sortedOpIndices.filter { op in
      let model = ops[op]!
      return model.queue == queue && (isReady(model) || (model.pausedInBody && model.inReady && !model.threw))
    }.sorted(by: ranksBefore)
    guard let head = heads.first, ops[head]!.state == .waiting, ops[head]!.cost > 0 else { return nil }
    let cost = Int64(ops[head]!.cost)
    var conforms = Int64.min
    for limiter in queues[queue].limiters where cost <= limiterSchedules[limiter].capacity {
      conforms = max(
        conforms, limiterSchedules[limiter].conformingInstant(cost: cost, now: Int64(now) * Self.second))
    }
    guard conforms > Int64(now) * Self.second else { return nil }
    precondition(conforms % Self.second == 0, "a script's limiter conforms between whole seconds")
    return (head, Int(conforms / Self.second), hasRoom(queue))
  }

  /// The rate invariant, checked on the model's own starts by brute force (not with the
  /// schedule's arithmetic): a token bucket's starts cost at most `burst + t / interval` in any
  /// closed stretch of length `t`; a sliding window's at most its capacity in any window.
  func rateViolation() -> String? {
    for (limiter, spec) in limiterSpecs.enumerated() {
      let starts = limiterStarts[limiter]
      for first in starts {
        for last in starts where last.at >= first.at {
          let inside = starts.filter { $0.at >= first.at && $0.at <= last.at }.reduce(0) { $0 + $1.cost }
          let allowed =
            spec.window
            ? (last.at - first.at < spec.seconds ? spec.capacity : .max)
            : spec.capacity + (last.at - first.at) / spec.seconds
          if inside > allowed {
            return
              "limiter \(limiter) (\(spec)) granted \(inside) permits in [\(first.at), \(last.at)] s, at most \(allowed)"
          }
        }
      }
    }
    return nil
  }

  private mutating func passOver(_ op: Int) -> Bool {
    guard !ops[op]!.locks.isEmpty, !ops[op]!.holdsLocks else { return false }
    var reserved = false
    for lock in ops[op]!.locks {
      guard let waiter = waiters(of: lock).first, ranksBefore(waiter, op), hasRoom(ops[waiter]!.queue) else {
        continue
      }
      ops[waiter]!.passedOver += 1
      // All of its locks or none (a partial reservation can block another reserver for ever).
      if ops[waiter]!.passedOver >= agingLimit, !reservers.contains(waiter),
        ops[waiter]!.locks.allSatisfy({ reservedBy[$0] == nil })
      {
        reservers.append(waiter)
        reservations += 1
        for other in ops[waiter]!.locks {
          reservedBy[other] = waiter
          if ops[op]!.locks.contains(other) { reserved = true }
        }
      }
    }
    return reserved
  }

  private func canMove(_ op: Op) -> Bool {
    guard op.state == .executing, !op.built else { return false }
    if op.evaluating { return op.holdsSlot && op.evaluationOpen }
    return op.threw || (op.holdsSlot && op.opens > op.stage)
  }

  private mutating func noteMovable() {
    var newlyMovable: [Int] = []
    for (op, model) in ops {
      if canMove(model) {
        if movable[op] == nil { newlyMovable.append(op) }
      } else if movable[op] != nil {
        movable[op] = nil
      }
    }
    for op in newlyMovable.sorted() {
      nextMovable += 1
      movable[op] = nextMovable
    }
  }

  /// The next move of a body the executor must let happen now (the one able to move longest),
  /// already applied to the model with everything that follows from it; nil when nothing moves.
  mutating func nextMove() -> BodyMove? {
    guard let op = movable.min(by: { $0.value < $1.value })?.key else { return nil }
    movable[op] = nil
    let model = ops[op]!
    let move: BodyMove
    if model.evaluating {
      move = evaluate(op)
    } else if model.threw {
      // It rethrows what its checkpoint threw: a timeout fails it.
      let outcome: ModelState = model.timedOut ? .failed : .cancelled
      move = BodyMove(op: op, permits: 1, reachesCheckpoint: false, result: endBody(op, outcome))
    } else if model.stage < model.body.checkpoints {
      ops[op]!.stage += 1
      if model.timedOut {
        // Its checkpoint throws (its task was cancelled): an execution timeout may be retried.
        move = BodyMove(op: op, permits: 2, reachesCheckpoint: true, result: endAttempt(op, .failed))
      } else if model.cancelRequested {
        move = BodyMove(op: op, permits: 2, reachesCheckpoint: true, result: endBody(op, .cancelled))
      } else if model.pauseHeld || model.excessPaused {
        ops[op]!.holdsSlot = false
        ops[op]!.pauses += 1
        ops[op]!.inReady = !model.pauseHeld
        ops[op]!.excessPaused = false
        move = BodyMove(op: op, permits: 1, reachesCheckpoint: true, result: .paused)
      } else {
        ops[op]!.passed += 1
        move = BodyMove(op: op, permits: 1, reachesCheckpoint: true, result: .passed(ops[op]!.passed))
      }
    } else {
      ops[op]!.stage += 1
      let throwing = model.body.throwing || model.attempt <= (model.retry?.failures ?? 0)
      let outcome: ModelState
      if model.timedOut {
        // Whatever it throws fails it; a value finishes it.
        outcome = model.body.checksCancellation || throwing ? .failed : .finished
      } else if model.cancelRequested && (model.body.checksCancellation || throwing) {
        outcome = .cancelled
      } else {
        outcome = throwing ? .failed : .finished
      }
      move = BodyMove(op: op, permits: 1, reachesCheckpoint: false, result: endAttempt(op, outcome))
    }
    settle()
    var asked = move
    asked.askedToPause = move.reachesCheckpoint && (model.pauseHeld || model.excessPaused)
    return asked
  }

  /// `op`'s condition answers (its evaluation was opened): see the type's comment.
  private mutating func evaluate(_ op: Int) -> BodyMove {
    let model = ops[op]!
    ops[op]!.evaluating = false
    ops[op]!.evaluationOpen = false
    let answers = model.answers ?? []
    let answer: Int
    if model.orphanEvaluation {
      answer = 1  // skip, as the worker answers for it
    } else {
      answer = model.evaluations < answers.count ? answers[model.evaluations] : 0
      ops[op]!.evaluations += 1
    }
    var move = BodyMove(
      op: op, evaluation: true, answer: answer, permits: 0, reachesCheckpoint: false, result: .evaluated)
    if model.timedOut {
      move.result = .ended(.failed)
      end(op, as: .failed)
    } else if model.cancelRequested {
      move.result = .ended(.cancelled)
      end(op, as: .cancelled)
    } else {
      switch answer {
      case 0: break
      case 1:
        move.result = .ended(.cancelled)
        end(op, as: .cancelled)
      case 2:
        move.result = .ended(.failed)
        end(op, as: .failed)
      default:
        if queues[model.queue].releasedSuspended {
          // Nothing there gets a slot again: it ends as the ops waiting there did.
          move.result = .ended(.cancelled)
          end(op, as: .cancelled)
        } else {
          move.result = .deferred
          deferByCondition(op, seconds: answer - 3)
        }
      }
    }
    return move
  }

  /// `op`'s condition answered "not yet": slot-free re-entry, as a retry's, keeping its body's
  /// permits (it did not run).
  private mutating func deferByCondition(_ op: Int, seconds: Int) {
    journal.append(.deferred(op: op, step: step))
    returnToWaiting(op, after: seconds)
    ops[op]!.startedAt = nil
    ops[op]!.deferred = seconds > 0
  }

  /// Slot-free re-entry, a retry's and a "not yet"'s: `op` gives back its slot, its keys and an
  /// excess pause request, keeps its submission order, and is ready now or after `seconds`.
  private mutating func returnToWaiting(_ op: Int, after seconds: Int) {
    releaseLocks(of: op)
    ops[op]!.state = .waiting
    ops[op]!.holdsSlot = false
    ops[op]!.excessPaused = false
    ops[op]!.backoffAt = seconds > 0 ? now + seconds : nil
  }

  // MARK: Groups

  /// Whether `edge` would make a child of an executing group wait, directly or not, for an op
  /// outside the group that may yet need a slot: one the group may hold, which it gives back only
  /// once that child has ended (the user's deadlock, as a body awaiting an op of its own serial
  /// queue; the step is skipped, or nothing would end).
  private func strandsGroup(_ edge: Dependency) -> Bool {
    for (group, model) in ops where model.state == .executing && model.groupQueue != nil {
      var inside: Set<Int> = [model.groupQueue!]
      var queuesLeft = [model.groupQueue!]
      while let queue = queuesLeft.popLast() {
        for op in unfinished(in: queue) {
          if let nested = ops[op]!.groupQueue, inside.insert(nested).inserted { queuesLeft.append(nested) }
        }
      }
      var stack = inside.flatMap { unfinished(in: $0) }
      var seen = Set(stack)
      while let op = stack.popLast() {
        let next = ops[op]!.allDependencies + (op == edge.dependent ? [edge.dependency] : [])
        for dependency in next where ops[dependency].map({ !$0.state.isTerminal }) ?? false {
          let waiting = ops[dependency]!
          // One that may need a slot again: not started, retried, re-evaluated, or paused at a
          // checkpoint it has not passed yet (by `pause()` or a limit lowered with the excess
          // paused), when the group may hold its queue's last slot.
          if !inside.contains(waiting.queue), dependency != group,
            waiting.state == .waiting || waiting.retry != nil || waiting.answers != nil
              || waiting.passed < waiting.body.checkpoints
          {
            return true
          }
          if seen.insert(dependency).inserted { stack.append(dependency) }
        }
      }
    }
    return false
  }

  /// The unfinished children a group op waits for (none once its queue took its last).
  private func children(of op: Int) -> [Int] {
    guard let queue = ops[op]!.groupQueue, queues[queue].admission != 2, !ops[op]!.state.isTerminal else {
      return []
    }
    return unfinished(in: queue)
  }

  /// `op` ended `.failed`: a child of a group that lists failures counts, and under
  /// `cancelSiblings` its first failure cancels the others, and later ones as they come.
  private mutating func noteChildFailure(_ op: Int) {
    let queue = ops[op]!.queue
    guard ops[op]!.enqueued, queue < queues.count, let group = queues[queue].groupOp,
      queues[queue].admission != 2, ops[group]!.groupPolicy != 2
    else { return }
    queues[queue].childFailed = true
    if ops[group]!.groupPolicy == 0, queues[queue].admission == 0 {
      queues[queue].admission = 1
      pendingSiblingCancels.append(queue)
    }
  }

  /// The scheduler's walks that cancel the siblings of a failed child, in the event of the failure.
  private mutating func cancelSiblings() {
    while !pendingSiblingCancels.isEmpty {
      let queue = pendingSiblingCancels.removeFirst()
      for op in unfinished(in: queue) { cancel(op) }
    }
  }

  /// What group bodies do after the events of the step, each an event of its own (its starts
  /// decided before the next): a cancelled group's body cancels its children (then every pending
  /// cancellation is done); a group whose build ended and whose queue has no unfinished child left
  /// takes none from then on and ends (the lowest op number first). Returns whether one acted.
  private mutating func groupBodiesAct() -> Bool {
    if !pendingGroupCancels.isEmpty {
      while !pendingGroupCancels.isEmpty {
        let queue = pendingGroupCancels.removeFirst()
        guard queues[queue].admission != 2 else { continue }
        queues[queue].admission = 1
        for op in unfinished(in: queue) { cancel(op) }
      }
      return true
    }
    guard
      let group = sortedOpIndices.first(where: { op in
        let model = ops[op]!
        return model.built && !model.state.isTerminal && unfinished(in: model.groupQueue!).isEmpty
      })
    else { return false }
    let model = ops[group]!
    queues[model.groupQueue!].admission = 2
    // Its body: a cancelled task throws `CancellationError` (a timed-out one fails with its
    // timeout), then build's error, then the children's.
    let outcome: ModelState =
      model.timedOut
      ? .failed
      : model.cancelRequested
        ? .cancelled
        : model.buildThrew || (model.groupPolicy != 2 && queues[model.groupQueue!].childFailed)
          ? .failed : .finished
    end(group, as: outcome, byGroupBody: true)
    return true
  }

  /// `op`'s attempt ended so: the op ends, or (a failure its retry policy retries) is rescheduled.
  /// `op`'s body ended so, no retry possible (a paused body's checkpoint threw, or it was
  /// cancelled at one): the op ends, or, a group's build, waits for its children.
  private mutating func endBody(_ op: Int, _ outcome: ModelState) -> BodyMove.Result {
    if ops[op]!.groupLimit != nil { return endAttempt(op, outcome) }
    end(op, as: outcome)
    return .ended(outcome)
  }

  private mutating func endAttempt(_ op: Int, _ outcome: ModelState) -> BodyMove.Result {
    let model = ops[op]!
    if model.groupLimit != nil {
      // A group's build: the group ends once its children have (see `groupBodiesAct`).
      ops[op]!.built = true
      ops[op]!.buildThrew = outcome != .finished
      if outcome != .finished, let queue = model.groupQueue { pendingGroupCancels.append(queue) }
      settle()
      return ops[op]!.state.isTerminal ? .ended(ops[op]!.state) : .built
    }
    if outcome == .failed, let retry = model.retry, model.attempt < retry.attempts, !model.cancelRequested,
      model.timerActed != true, model.deadline.map({ now + retry.backoff < $0 }) ?? true,
      !queues[model.queue].releasedSuspended
    {
      reschedule(op, backoff: retry.backoff)
      return .rescheduled
    }
    end(op, as: outcome)
    return .ended(outcome)
  }

  /// `op`'s attempt threw and it runs again: slot-free re-entry, with its submission order.
  private mutating func reschedule(_ op: Int, backoff: Int) {
    journal.append(.rescheduled(op: op, step: step))
    returnToWaiting(op, after: backoff)
    ops[op]!.stage = 0
    ops[op]!.opens = ops[op]!.body.auto ? ops[op]!.body.checkpoints + 1 : 0
    ops[op]!.timedOut = false
    ops[op]!.timerActed = nil
    ops[op]!.timeoutAt = nil
    ops[op]!.deferred = false
  }

  // MARK: End of a script

  /// Steps that let everything end: resume every live queue, give every body its permits (so
  /// that pause requests still out are met at checkpoints), and once no permit is left to give,
  /// resume what is paused. Run them, then ask again, until none are left.
  func drainSteps() -> [Step] {
    var steps: [Step] = []
    for queue in queues.indices where isLive(queue: queue) && queues[queue].suspended {
      steps.append(.setSuspended(queue: queue, suspended: false))
    }
    for op in sortedOpIndices where !ops[op]!.state.isTerminal && ops[op]!.leader == nil {
      if ops[op]!.opens < ops[op]!.body.checkpoints + 1 || (ops[op]!.evaluating && !ops[op]!.evaluationOpen) {
        steps.append(.openFully(op: op))
      }
    }
    // Backoffs end when the clock gets there: to the earliest, after the permits.
    let backoff = ops.values.filter { !$0.state.isTerminal }.compactMap(\.backoffAt).min()
    let wake = [backoff, earliestThrottle()].compactMap { $0 }.min()
    if let wake { steps.append(.advance(seconds: wake - now)) }
    guard steps.isEmpty else { return steps }
    for queue in queues.indices where isLive(queue: queue) {
      let paused = unfinished(in: queue).contains { op in
        ops[op]!.pauseHeld || (ops[op]!.pausedInBody && !ops[op]!.inReady && !ops[op]!.threw)
      }
      if paused { steps.append(.resumeAll(queue: queue)) }
    }
    for queue in queues.indices where !isLive(queue: queue) {
      for op in unfinished(in: queue) where ops[op]!.pauseHeld {
        if let handle = sortedOpIndices.first(where: { ops[$0]!.handleHeld && target($0) == op }) {
          steps.append(.resume(op: handle))
        }
      }
    }
    return steps
  }

  /// Ops the model allows to be alive: held by the script, not yet ended, or reachable from one
  /// of those through its dependencies (kept like Foundation's `dependencies`; a caller's handle
  /// may keep its shared work).
  func opsAllowedAlive() -> Set<Int> {
    var alive = Set(
      ops.filter {
        $0.value.handleHeld || $0.value.awaitingSpace
          || (($0.value.enqueued || $0.value.leader != nil) && !$0.value.state.isTerminal)
      }.keys)
    // An unfinished op's condition holds the op it produced.
    for model in ops.values where !model.state.isTerminal {
      if let produced = model.producedOp { alive.insert(produced) }
    }
    var stack = Array(alive)
    while let op = stack.popLast() {
      for next in ops[op]!.allDependencies where alive.insert(next).inserted { stack.append(next) }
    }
    return alive
  }

  /// Queues (their owner box) the model allows to be alive.
  func queuesAllowedAlive() -> Set<Int> {
    var alive = Set(queues.indices.filter { !queues[$0].released })
    for op in ops.values where !op.state.isTerminal { alive.formUnion(op.captures) }
    return alive
  }

  func acceptsEither(_ op: Int) -> Bool { ops[op]?.eitherBadOutcome ?? false }

  /// The priority of a queue's worker tasks: the scripts' queues name none (`.medium`).
  static let basePriority = TaskPriority.medium.rawValue

  /// A task of `priority` awaits `op`: it and every unfinished op it waits for (dependencies of
  /// every kind, a caller's handle's shared work), transitively, are raised to `priority`, never
  /// lowered. In a queue whose policy reorders, a raised op that has not started, above the
  /// queue's priority and not coalesced, is raised to `.veryHigh` (4).
  private mutating func escalate(_ op: Int, to priority: UInt8) {
    var work = [op]
    while let next = work.popLast() {
      guard let model = ops[next], !model.state.isTerminal, model.escalation < priority else { continue }
      ops[next]!.escalation = priority
      escalatedOps += 1
      // A caller's handle moves its shared work ahead; shared work itself moves only so.
      let mover = model.leader.flatMap { ops[$0] } ?? model
      if model.priority < 4, mover.enqueued, mover.state == .waiting,
        mover.followers.isEmpty || model.leader != nil,
        queues[mover.queue].reordersEscalated, priority > Self.basePriority
      {
        ops[next]!.priority = 4
        reorderedOps += 1
        journal.append(.priority(op: next, priority: 4, step: step))
        if let leader = model.leader { raiseLeaderPriority(leader) }
      }
      work += model.allDependencies
    }
  }

  /// What `ActorQueue.counts` of `queue` must read: its ops in the queue by exact state, and
  /// those that ended there by terminal state. `ambiguous`: an op that ended there may be failed
  /// or cancelled (see `acceptsEither`), so only their sum is exact.
  func counts(of queue: Int) -> (counts: QueueCounts, ambiguous: Bool) {
    var counts = QueueCounts()
    var ambiguous = false
    for (op, model) in ops where model.queue == queue && model.enqueued {
      guard let state = expectedState(op) else { continue }
      counts.add(1, to: state)
      if state.isTerminal, model.eitherBadOutcome { ambiguous = true }
    }
    return (counts, ambiguous)
  }

  /// Whether `real` counts are `expected`'s (see ``counts(of:)``).
  static func countsAgree(_ real: QueueCounts, _ expected: (counts: QueueCounts, ambiguous: Bool)) -> Bool {
    var real = real
    var model = expected.counts
    if expected.ambiguous {
      real.failed += real.cancelled
      real.cancelled = 0
      model.failed += model.cancelled
      model.cancelled = 0
    }
    return real == model
  }
}

import ActorQueueTesting
import Foundation
import Synchronization
import TestSupport

@testable import ActorQueue

/// What a script's bodies capture instead of the queue itself: "an object owning a queue".
final class QueueBox: Sendable {
  let queue: ActorQueue
  init(_ queue: ActorQueue) { self.queue = queue }
}

/// `ACTORQUEUE_RANDOM_TRACE` is set: a script's child logs each step and, at a disagreement,
/// every op's state (see ``ReliabilityRandomScriptTests``).
let traceScripts = ProcessInfo.processInfo.environment["ACTORQUEUE_RANDOM_TRACE"] != nil

/// Runs of the real executor so far (each names its tags after its number).
let realScriptRuns = Atomic<Int>(0)

/// Captured by each body: freed when the body is.
final class Token: Sendable {}

/// The label of the dispatch queue that runs the calling code, if it is one of a script's
/// executors (odd-numbered queues run their bodies on a serial ``DispatchQueueExecutor``).
let scriptExecutorLabel = DispatchSpecificKey<String>()

/// Where a body runs, checked at each of its resumptions: on its queue's executor, or on none.
/// A body of a released queue no longer reads its queue (`ActorQueue.current` is `nil`): it
/// must then stay where it was first seen (`seen`).
func bodyRunsWhereItsQueueSays(_ seen: LockedValue<String??>) -> String? {
  let actual = DispatchQueue.getSpecific(key: scriptExecutorLabel)
  return seen.withLock { seen -> String? in
    let expected: String?
    if let queue = ActorQueue.current {
      expected = (queue.taskExecutor as? DispatchQueueExecutor)?.queue.label
    } else if let first = seen {
      expected = first
    } else {
      expected = actual
    }
    if seen == nil { seen = .some(expected) }
    guard expected == actual, seen! == expected else {
      return "a body ran on \(actual ?? "the global executor"), expected \(expected ?? "the global executor")"
    }
    return nil
  }
}

/// A body's own handle, weakly (the script owns it): the body awaits its value once, which must be
/// refused at once with `ActorQueueError.awaitsItself` (a wait nothing could end).
final class SelfWaitProbe: Sendable {
  private let own = LockedValue(Weak<QueueOperation<Int>>())

  func set(_ operation: QueueOperation<Int>) { own.withLock { $0.object = operation } }

  /// What went wrong, if anything; the handle is awaited only the first time.
  func awaitOwnValue() async -> String? {
    guard
      let me = own.withLock({ probe -> QueueOperation<Int>? in
        defer { probe.object = nil }
        return probe.object
      })
    else { return nil }
    do {
      _ = try await me.value
      return "awaiting its own value returned"
    } catch let error as ActorQueueError where error == .awaitsItself {
      return nil
    } catch {
      return "awaiting its own value threw \(error)"
    }
  }
}

/// A weak reference, for "everything is freed at the end".
struct Weak<Object: AnyObject> {
  weak var object: Object?
}

extension Weak: Sendable where Object: Sendable {}

/// Suspends until `isDone()`, yielding in between, or until `limit` has passed: for frees that
/// happen on another thread just after the event that makes them due (a body's captures released
/// by a cascade on a worker, say). Bounded by time, not by a count of yields: on a loaded 2-core
/// machine the releasing thread can be preempted for longer than thousands of yields take, and in
/// a full run every test shares the pool with all the others: five minutes, as
/// ``eventually(within:_:)``. Returns whether it became done.
func eventuallyFreed(within limit: Duration = .seconds(300), _ isDone: () -> Bool) async -> Bool {
  let clock = ContinuousClock()
  let deadline = clock.now.advanced(by: limit)
  while !isDone() {
    if clock.now >= deadline { return isDone() }
    await Task.yield()
  }
  return true
}

/// The permits of one script body, and what it reports: a body takes a permit before each of
/// its stages (``BodySpec``) and reports each checkpoint it returned from, so the executor can
/// let it move one stage at a time and wait until it has.
final class Permits: Sendable {
  private struct State {
    var available = 0
    var takers: [CheckedContinuation<Void, Never>] = []
    var passed = 0
    var entered = 0
    var built = 0
    var cancelled = false
    var asked: Bool?
    var onPause = 0
    var onResume = 0
    var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }
  private let state = LockedValue(State())
  /// Told each time the body reports.
  private let onReport: @Sendable () -> Void

  init(onReport: @escaping @Sendable () -> Void = {}) { self.onReport = onReport }

  /// Gives one permit.
  func give() {
    let taker = state.withLock { state -> CheckedContinuation<Void, Never>? in
      if state.takers.isEmpty {
        state.available += 1
        return nil
      }
      return state.takers.removeFirst()
    }
    taker?.resume()
  }

  /// Takes a permit, waiting for one.
  func take() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state in
        if state.available > 0 {
          state.available -= 1
          return true
        }
        state.takers.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// The body returned from another checkpoint.
  func reportPassed() {
    let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.passed += 1
      let passed = state.passed
      var ready: [CheckedContinuation<Void, Never>] = []
      state.watchers.removeAll { watcher in
        guard watcher.count <= passed else { return false }
        ready.append(watcher.continuation)
        return true
      }
      return ready
    }
    for continuation in ready { continuation.resume() }
    onReport()
  }

  var passed: Int { state.withLock { $0.passed } }

  /// Times the body began to run.
  var entered: Int { state.withLock { $0.entered } }

  /// Whether the body's task was cancelled (its cancellation handler ran).
  var sawCancellation: Bool { state.withLock { $0.cancelled } }

  /// The body's task was cancelled.
  func noteCancelled() {
    state.withLock { $0.cancelled = true }
    onReport()
  }

  /// The body began to run.
  func reportEntered() {
    state.withLock { $0.entered += 1 }
    onReport()
  }

  /// Times a group's build returned or threw.
  var built: Int { state.withLock { $0.built } }

  /// The group's build returned or threw (its body goes on to wait for the children).
  func reportBuilt() {
    state.withLock { $0.built += 1 }
    onReport()
  }

  /// The body's `onPause` / `onResume` handler ran.
  func notePause() { state.withLock { $0.onPause += 1 } }
  func noteResume() { state.withLock { $0.onResume += 1 } }
  var handlerRuns: (onPause: Int, onResume: Int) { state.withLock { ($0.onPause, $0.onResume) } }

  /// The body read `ActorQueue.isPauseRequested` before a checkpoint.
  func noteAsked(_ asked: Bool) { state.withLock { $0.asked = asked } }

  /// What the body read last (nil: it has not read it since the last call).
  func takeAsked() -> Bool? {
    state.withLock { state in
      defer { state.asked = nil }
      return state.asked
    }
  }

  /// Waits until the body has returned from `count` checkpoints (the child's watchdog turns a
  /// wait that never ends into a failure).
  func waitUntilPassed(_ count: Int) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state in
        if state.passed >= count { return true }
        state.watchers.append((count, continuation))
        return false
      }
      if now { continuation.resume() }
    }
  }
}

/// The condition of an `addConditional` op: at each evaluation it takes a permit of its own
/// (``RealQueueExecutor`` gives it when the model moves the evaluation), then answers the next
/// scripted code; it remembers the last, which its body checks (it runs only after satisfied).
final class ScriptCondition: OperationCondition {
  let name: String
  let permits: Permits
  private let op: Int
  private let answers: [Int]
  private let produces: AnyQueueOperation?
  private let state = LockedValue((evaluations: 0, last: -1))

  init(op: Int, answers: [Int], produces: AnyQueueOperation?, permits: Permits) {
    name = ConditionCode.conditionName(op)
    self.op = op
    self.answers = answers
    self.produces = produces
    self.permits = permits
  }

  func dependency(for operation: AnyQueueOperation) -> AnyQueueOperation? { produces }

  /// The code it answered last (-1: none yet).
  var lastAnswer: Int { state.withLock { $0.last } }

  func evaluate(for operation: AnyQueueOperation) async -> ConditionResult {
    await permits.take()
    let code = state.withLock { state in
      let code = state.evaluations < answers.count ? answers[state.evaluations] : 0
      state.evaluations += 1
      state.last = code
      return code
    }
    return ConditionCode.result(code, op: op)
  }
}

/// How many times each handle's `onCompletion` ran, and with what: each must run exactly once,
/// with its op's outcome (a caller's handle, with its shared work's).
final class CompletionLog: Sendable {
  private let calls = LockedValue<[Int: [Result<Int, any Error>]]>([:])

  func record(_ op: Int, _ result: Result<Int, any Error>) {
    calls.withLock { $0[op, default: []].append(result) }
  }

  var all: [Int: [Result<Int, any Error>]] { calls.withLock { $0 } }
}

/// A heartbeat the child watchdog reads: a script that stops making progress is a hang.
let reliabilityHeartbeat = Atomic<Int>(0)

/// Runs scripts on real `ActorQueue`s, step by step, against the ``ReferenceModel``, with an
/// ``InvariantChecker`` on every queue's events.
struct RealQueueExecutor: ScriptExecutor {
  /// Check after every step that what the model says is unreachable has been freed.
  var checkFreeingEachStep = true
  /// Check at the end that everything has been freed.
  var checkFreeingAtEnd = true

  /// Reads `ACTORQUEUE_RANDOM_FREEING`: `step` (the default: after every step and at the end),
  /// `end` (only at the end) or `off`: a run can look past a known retention defect for others.
  static func fromEnvironment() -> RealQueueExecutor {
    switch ProcessInfo.processInfo.environment["ACTORQUEUE_RANDOM_FREEING"] {
    case "end": RealQueueExecutor(checkFreeingEachStep: false)
    case "off": RealQueueExecutor(checkFreeingEachStep: false, checkFreeingAtEnd: false)
    default: RealQueueExecutor()
    }
  }

  func run(_ script: Script) async -> ScriptFailure? {
    // The process's own scheduler: the scripts run in a child process of their own.
    Engine.mutate { $0.sliceLimit = script.sliceLimit }
    let run = RealRun(
      script: script, checkFreeingEachStep: checkFreeingEachStep, checkFreeingAtEnd: checkFreeingAtEnd)
    let failure = await run.execute()
    run.checker.stop()
    return failure
  }
}

/// The model's view of a state: waiting (pending or ready), executing, or terminal.
func modelState(_ state: OperationState) -> ModelState {
  switch state {
  case .pending, .ready: .waiting
  case .executing, .paused: .executing
  case .finished: .finished
  case .failed: .failed
  case .cancelled: .cancelled
  }
}

/// One run of one script. Used from the driver task only.
private final class RealRun {
  let script: Script
  let checkFreeingEachStep: Bool
  let checkFreeingAtEnd: Bool
  var model: ReferenceModel
  let checker = InvariantChecker()
  /// What the run waits for now (the watchdog tells it, with the last events).
  let waitingFor = LockedValue("its first step")
  let fence = ActorQueue(name: "fence")
  /// The script's clock, every queue's.
  let clock = ManualClock()
  /// The script's shared exclusivity domain.
  let sharedDomain = ExclusivityDomain(name: "script")
  /// The script's tags: names of this run's own, so that a process-wide cancel reaches no other
  /// test's operations.
  let scriptTags: [OperationTag] = {
    let run = realScriptRuns.add(1, ordering: .relaxed).newValue
    return (0..<2).map { OperationTag("real-script-\(run)-tag-\($0)") }
  }()
  /// The script's rate limiters.
  let limiters: [RateLimiter]
  var boxes: [QueueBox?] = []
  var weakBoxes: [Weak<QueueBox>] = []
  var weakQueues: [Weak<ActorQueue>] = []
  var handles: [Int: AnyQueueOperation] = [:]
  /// Each handle's effective priority when last read: escalation never lowers it.
  var lastEffective: [Int: UInt8] = [:]
  var typed: [Int: QueueOperation<Int>] = [:]
  var weakOps: [Int: Weak<AnyQueueOperation>] = [:]
  var ids: [Int: OperationID] = [:]
  var gates: [Int: Permits] = [:]
  /// The tasks of `addWaiting` ops whose handle the script does not have yet.
  var submitters: [Int: Task<QueueOperation<Int>, any Error>] = [:]
  /// The conditions of `addConditional` ops.
  var conditions: [Int: Weak<ScriptCondition>] = [:]
  var tokens: [Int: Weak<Token>] = [:]
  /// Of some plain adds: the body's own handle, weakly, which the body awaits once (refused at
  /// once with `ActorQueueError.awaitsItself`, never a hang).
  var ownHandles: [Int: SelfWaitProbe] = [:]
  var fenceCount = 0
  let completions = CompletionLog()
  /// The ops whose `onCompletion` is counted.
  var counted: Set<Int> = []
  /// Bodies that ran somewhere other than their queue's executor (see `bodyRunsWhereItsQueueSays`).
  let misplacedBodies = LockedValue<[String]>([])
  /// Each group op's group, as its build got it; the model's queue index of each group's queue,
  /// once its events are watched.
  let groups = LockedValue<[Int: OperationGroup]>([:])
  var groupQueueIndices: [Int: Int] = [:]

  init(script: Script, checkFreeingEachStep: Bool, checkFreeingAtEnd: Bool) {
    self.script = script
    self.checkFreeingEachStep = checkFreeingEachStep
    self.checkFreeingAtEnd = checkFreeingAtEnd
    model = ReferenceModel(queueLimits: script.queueLimits, limiters: script.limiters ?? [])
    model.groupEndsBetweenSlices = script.sliceLimit < Scheduler.defaultSliceLimit
    let queueClock = clock.queueClock
    limiters = (script.limiters ?? []).map { $0.limiter(clock: queueClock) }
    checker.attach(fence.events, queue: InvariantChecker.fence)
    watchdogDiagnosis.withLock {
      $0 = { [checker, waitingFor] in
        ["waiting for \(waitingFor.withLock { $0 }); the last events:"] + checker.recentEvents(40)
      }
    }
    for (index, limit) in script.queueLimits.enumerated() {
      // Odd-numbered queues run their bodies on a dispatch queue of their own.
      let executor = index % 2 == 1 ? DispatchQueueExecutor(Self.dispatchQueue(index)) : nil
      let queue = ActorQueue(
        name: "q\(index)", maxConcurrentOperationCount: limit, taskExecutor: executor, clock: clock.queueClock
      )
      checker.attach(queue.events, queue: index)
      let box = QueueBox(queue)
      boxes.append(box)
      weakBoxes.append(Weak(object: box))
      weakQueues.append(Weak(object: queue))
    }
  }

  private static func dispatchQueue(_ index: Int) -> DispatchQueue {
    let queue = DispatchQueue(label: "q\(index).executor")
    queue.setSpecific(key: scriptExecutorLabel, value: queue.label)
    return queue
  }

  func execute() async -> ScriptFailure? {
    var index = 0
    for step in script.steps {
      if let failure = await perform(step, index: index) { return failure }
      index += 1
    }
    // The end: let everything end, release every queue, drop every handle.
    for _ in 0..<200 {  // a slow limiter grants one start per drain round
      let steps = model.drainSteps()
      if steps.isEmpty { break }
      for step in steps {
        if let failure = await perform(step, index: index) { return failure }
        index += 1
      }
    }
    for queue in script.queueLimits.indices where model.isLive(queue: queue) {
      if let failure = await perform(.releaseQueue(queue: queue), index: index) { return failure }
      index += 1
    }
    for op in model.sortedOpIndices where model.state(of: op)?.isTerminal != true {
      return ScriptFailure(step: nil, message: "model: op\(op) did not end after the drain (test bug)")
    }
    if let violation = model.rateViolation() { return ScriptFailure(step: nil, message: violation) }
    let enqueued = ids.filter { model.ops[$0.key]?.enqueued == true }.map(\.value)
    await checker.wait { snapshot in enqueued.allSatisfy { snapshot.latest[$0]?.isTerminal == true } }
    let snapshot = checker.snapshot
    for op in model.sortedOpIndices {
      guard let id = ids[op], let expected = model.expectedState(op), model.ops[op]!.enqueued else {
        continue
      }
      let actual = snapshot.latest[id]
      if actual != expected && !(model.acceptsEither(op) && actual != .finished) {
        return ScriptFailure(
          step: nil, message: "op\(op) ended \(actual.map { "\($0)" } ?? "?"), expected \(expected)")
      }
    }
    if let problem = await checkCompletions() { return ScriptFailure(step: nil, message: problem) }
    for op in model.sortedOpIndices where model.ops[op]!.body.pauseHandlers {
      guard let runs = gates[op]?.handlerRuns else { continue }
      let model = model.ops[op]!
      if runs != (model.pauses, model.resumes) {
        return ScriptFailure(
          step: nil,
          message: "op\(op)'s onPause ran \(runs.onPause) times, onResume \(runs.onResume); expected "
            + "\(model.pauses) and \(model.resumes)")
      }
    }
    // Only manual clocks: no timer task was ever needed.
    if TimerTask.liveCount != 0 {
      let drained = await eventuallyFreed { TimerTask.liveCount == 0 }
      return ScriptFailure(
        step: nil,
        message: "\(drained ? "a timer task ran" : "timer tasks stay live (\(TimerTask.liveCount))"), "
          + "though the script uses only a manual clock")
    }
    // Every fence toggle seen: the checker has every step boundary.
    let fences = fenceCount
    await checker.wait { $0.fenceEvents >= fences }
    let violations = checker.violations() + misplacedBodies.withLock { $0 }
    if !violations.isEmpty {
      return ScriptFailure(step: nil, message: "invariants: " + violations.prefix(5).joined(separator: "; "))
    }
    handles = [:]
    typed = [:]
    groups.withLock { $0 = [:] }
    guard checkFreeingAtEnd else { return nil }
    let freed = await eventuallyFreed {
      weakOps.values.allSatisfy { $0.object == nil } && weakBoxes.allSatisfy { $0.object == nil }
        && weakQueues.allSatisfy { $0.object == nil } && tokens.values.allSatisfy { $0.object == nil }
    }
    // No handler ran a second time meanwhile.
    if let problem = await checkCompletions() { return ScriptFailure(step: nil, message: problem) }
    if !freed {
      let ops = weakOps.filter { $0.value.object != nil }.keys.sorted().map { "op\($0)" }
      let queues = weakBoxes.indices.filter { weakBoxes[$0].object != nil || weakQueues[$0].object != nil }
      let bodies = tokens.filter { $0.value.object != nil }.keys.sorted().map { "op\($0)" }
      return ScriptFailure(
        step: nil,
        message: "not freed at the end: ops \(ops), queues \(queues.map { "q\($0)" }), bodies of \(bodies)")
    }
    // Every free record of the process is as `Scheduler.reuse` assumes.
    let notReset = Engine.read { FreeRecordCheck.fieldsNotReset(in: $0) }
    if !notReset.isEmpty {
      return ScriptFailure(step: nil, message: "free records keep values: \(notReset.prefix(6))")
    }
    let slots = Engine.read { FreeRecordCheck.timeSlotProblems(in: $0) }
    if !slots.isEmpty { return ScriptFailure(step: nil, message: "time slots disagree: \(slots.prefix(4))") }
    return nil
  }

  // MARK: One step

  func perform(_ step: Step, index: Int) async -> ScriptFailure? {
    reliabilityHeartbeat.add(1, ordering: .relaxed)
    if traceScripts { childLog("STEP \(index): \(step)") }
    let journalBefore = model.journal.count
    let terminalBefore = Set(model.sortedOpIndices.filter { model.state(of: $0)?.isTerminal == true })
    let expectation = model.apply(step, index: index)
    if traceScripts { traceModel() }
    // Ops created by this step get ids before the checker sees registrations for them.
    if let failure = act(step, expectation) {
      return ScriptFailure(step: index, message: "\(step): \(failure)")
    }
    if let failure = await settleSubmitters() {
      return ScriptFailure(step: index, message: "\(step): \(failure)")
    }
    for registration in model.journal[journalBefore...] { checker.register(registration) }
    let journalAfterStep = model.journal.count
    // What the bodies' moves register (a retry), once they moved.
    defer { for registration in model.journal[journalAfterStep...] { checker.register(registration) } }
    if case .releaseQueue(let queue) = step, expectation != .skip, model.queues[queue].releasedSuspended,
      let failure = await awaitReleasedQueue(queue)
    {
      return ScriptFailure(step: index, message: "after \(step): \(failure)")
    }
    if expectation != .skip, let failure = await quiesce(step: index) {
      return ScriptFailure(step: index, message: "after \(step): \(failure)")
    }
    if let failure = await awaitGoneHandles() {
      return ScriptFailure(step: index, message: "after \(step): \(failure)")
    }
    fence.isSuspended.toggle()
    fenceCount += 1
    // Every phase of the process agrees with the ready sets, slots and started bodies (other
    // tests' events may be between slices: only what each single hold keeps in step is checked).
    let phases = Engine.read { PhaseCheck.problems(in: $0, settled: false) }
    if !phases.isEmpty {
      return ScriptFailure(step: index, message: "after \(step): phases disagree: \(phases.prefix(4))")
    }
    // The clock reads the model's instant; its heap counts live exactly the model's armed timers.
    // An execution timeout is armed when its body's task reports the body's first line, just
    // after the start the model made: waited for, so that the next step's advance finds it armed.
    _ = await eventuallyFreed { [id = clock.queueClock.id, expected = model.armedTimerCount] in
      Engine.read { $0.manualClocks[id]?.timers.live ?? -1 } == expected
    }
    let (instant, live) = Engine.read { [id = clock.queueClock.id] in
      ($0.manualNow(of: id), $0.manualClocks[id]?.timers.live ?? -1)
    }
    if instant != Int64(model.now) * 1_000_000_000 || live != model.armedTimerCount {
      return ScriptFailure(
        step: index,
        message:
          "after \(step): the clock reads \(instant) ns with \(live) live timers, expected \(model.now) s "
          + "and \(model.armedTimerCount)")
    }
    for (number, limiter) in limiters.enumerated() {
      let schedule = Engine.read { $0.limiterStates[limiter.slot].schedule }
      if schedule != model.limiterSchedules[number] {
        return ScriptFailure(
          step: index,
          message:
            "after \(step): limiter \(number)'s permits are \(schedule), the model's \(model.limiterSchedules[number])"
        )
      }
    }
    if let failure = tagListProblem() {
      return ScriptFailure(step: index, message: "after \(step): \(failure)")
    }
    if checkFreeingEachStep, expectation != .skip, let failure = await checkFreed(since: terminalBefore) {
      return ScriptFailure(step: index, message: "after \(step): \(failure)")
    }
    return nil
  }

  /// Each live queue's `operations(tagged:)` against the model's unfinished tagged ops of that
  /// queue, in creation order.
  private func tagListProblem() -> String? {
    for queue in model.queues.indices where model.isLive(queue: queue) {
      if !model.isBase(queue), groups.withLock({ $0[model.queues[queue].groupOp!] == nil }) { continue }
      for (number, tag) in scriptTags.enumerated() {
        let listed = self.queue(queue).operations(tagged: tag).map(\.id)
        let expected = model.tagged(number, in: queue)
        if listed != expected.compactMap({ ids[$0] }) || listed.count != expected.count {
          let names = listed.map { id in ids.first { $0.value == id }.map { "op\($0.key)" } ?? "\(id)" }
          return
            "q\(queue).operations(tagged: t\(number)) lists \(names); the model: \(expected.map { "op\($0)" })"
        }
      }
    }
    return nil
  }

  private func body(
    _ op: Int, _ spec: BodySpec, failures: Int = 0, condition: ScriptCondition? = nil
  ) -> @Sendable () async throws -> Int {
    let permits = Permits { [checker] in checker.poke() }
    gates[op] = permits
    let token = Token()
    tokens[op] = Weak(object: token)
    let capture = spec.capturesQueue.flatMap { boxes[$0] }
    let misplaced = misplacedBodies
    let seen = LockedValue<String??>(nil)
    let probe = SelfWaitProbe()
    ownHandles[op] = probe
    return {
      // Its task's cancellation, seen: one that another thread's call made (a group's body
      // cancelling its children) reaches the task after that call's hold of the lock.
      try await withTaskCancellationHandler {
        if let problem = await probe.awaitOwnValue() {
          misplaced.withLock { $0.append("op\(op): \(problem)") }
        }
        return try await Self.run(
          op, spec, failures, condition, permits, misplaced, seen, keeping: (token, capture))
      } onCancel: {
        permits.noteCancelled()
      }
    }
  }

  private static func run(
    _ op: Int, _ spec: BodySpec, _ failures: Int, _ condition: ScriptCondition?, _ permits: Permits,
    _ misplaced: LockedValue<[String]>, _ seen: LockedValue<String??>, keeping: (Token, QueueBox?)
  ) async throws -> Int {
    _ = keeping
    if let condition, condition.lastAnswer != 0 {
      misplaced.withLock {
        $0.append("op\(op): its body ran, though its condition answered \(condition.lastAnswer)")
      }
    }
    permits.reportEntered()
    if let problem = bodyRunsWhereItsQueueSays(seen) {
      misplaced.withLock { $0.append("op\(op): \(problem)") }
    }
    await permits.take()
    for _ in 0..<spec.checkpoints {
      permits.noteAsked(ActorQueue.isPauseRequested)
      do {
        if spec.pauseHandlers {
          try await ActorQueue.checkpoint(
            onPause: { permits.notePause() }, onResume: { permits.noteResume() })
        } else {
          try await ActorQueue.checkpoint()
        }
      } catch {
        await permits.take()  // ends in the model's order (see BodySpec)
        throw error
      }
      permits.reportPassed()
      await permits.take()
    }
    if let problem = bodyRunsWhereItsQueueSays(seen) {
      misplaced.withLock { $0.append("op\(op): \(problem)") }
    }
    if spec.checksCancellation { try Task.checkCancellation() }
    if spec.throwing || (ActorQueue.currentAttempt?.number ?? 1) <= failures { throw ScriptError(op: op) }
    return op
  }

  private func track(_ op: Int, _ operation: AnyQueueOperation, _ spec: BodySpec) {
    handles[op] = operation
    weakOps[op] = Weak(object: operation)
    ids[op] = operation.id
    checker.identify(op: op, id: operation.id)
    if let typed = operation as? QueueOperation<Int> {
      let log = completions
      counted.insert(op)
      typed.onCompletion { result in log.record(op, result) }
      if let queue = spec.handlerCapturesQueue, let box = boxes[queue] {
        typed.onCompletion { _ in _ = box }
      }
    }
  }

  /// Every counted handle's `onCompletion` ran exactly once, with its op's outcome.
  private func checkCompletions() async -> String? {
    let counted = counted
    _ = await eventuallyFreed { [completions] in
      let calls = completions.all
      return counted.allSatisfy { calls[$0] != nil }
    }
    let calls = completions.all
    for op in counted.sorted() {
      let results = calls[op] ?? []
      guard results.count == 1 else { return "op\(op)'s onCompletion ran \(results.count) times (must be 1)" }
      guard let expected = model.state(of: op) else { continue }
      switch (results[0], expected) {
      case (.success(let value), .finished) where value == model.bodyOp(op): continue
      case (.failure, .cancelled): continue
      case (.failure(let error), .failed) where !model.isFollower(op):
        // A timeout's error exactly when a timer of the model's acted on it.
        let timeout = error as? OperationTimeoutError
        if let expected = model.timeoutEnd(of: op) {
          if expected.either, timeout == nil { continue }
          if let timeout, timeout.kind == (expected.deadline ? .deadline : .executionTimeout),
            timeout.hadStarted == expected.hadStarted
          {
            continue
          }
          return "op\(op)'s onCompletion got \(error), expected a timeout (deadline: \(expected.deadline))"
        }
        if timeout != nil { return "op\(op)'s onCompletion got \(error), though no timer acted on it" }
        if !(error is CancellationError) || model.acceptsEither(op) { continue }
        return "op\(op)'s onCompletion got \(results[0]), expected \(expected)"
      case (.failure(let error), .failed) where !(error is CancellationError): continue
      case (.failure, .failed) where model.acceptsEither(op): continue
      default: return "op\(op)'s onCompletion got \(results[0]), expected \(expected)"
      }
    }
    return nil
  }

  /// `compare` for `addDependency`: a refused cycle must also name a real cycle of the model.
  private func compare(_ expectation: StepExpectation, _ dependency: Dependency) -> String? {
    var refusal: ActorQueueError?
    let problem = compare(expectation) {
      do {
        try handles[dependency.dependent]!.addDependency(
          handles[dependency.dependency]!, requiring: dependency.mustSucceed ? .success : .completion)
      } catch {
        refusal = error as? ActorQueueError
        throw error
      }
    }
    guard problem == nil, let refusal, refusal == .dependencyCycle else { return problem }
    return model.cycleProblem(
      refusal.cycle.map { member in (ids.first { $0.value == member.id }?.key, member.isSharedWork) },
      refusing: dependency)
  }

  private func compare(_ expectation: StepExpectation, _ call: () throws -> Void) -> String? {
    do {
      try call()
      if case .refused(let refusal) = expectation { return "returned; expected \(refusal)" }
      return nil
    } catch {
      let refusal: Refusal? =
        switch error as? ActorQueueError {
        case .some(.dependencyCycle): .dependencyCycle
        case .some(.alreadyEnqueued): .alreadyEnqueued
        case .some(.alreadyStarted): .alreadyStarted
        case .some(.joinedSharedWork): .joinedSharedWork
        default: nil
        }
      if case .refused(let expected) = expectation, expected == refusal { return nil }
      return "threw \(error); expected \(expectation)"
    }
  }

  /// Adds op `op` with `traits` in both ways traits reach an operation: with
  /// `addOperation(traits:)` (even ops), or on a prepared operation added afterwards (odd ops).
  private func add(
    _ op: Int, to queue: Int, priority: Int, traits: [OperationTrait], _ spec: BodySpec, failures: Int = 0,
    condition: ScriptCondition? = nil
  ) -> String? {
    let priority = OperationPriority.allCases[priority]
    let work = body(op, spec, failures: failures, condition: condition)
    let operation: QueueOperation<Int>
    if op.isMultiple(of: 2) {
      operation = boxes[queue]!.queue.addOperation(name: "op\(op)", priority: priority, traits: traits, work)
    } else {
      operation = QueueOperation(name: "op\(op)", priority: priority, traits: traits, work)
      do {
        try boxes[queue]!.queue.addOperation(operation)
      } catch {
        return "addOperation refused a new prepared operation: \(error)"
      }
    }
    typed[op] = operation
    track(op, operation, spec)
    return nil
  }

  /// The queue of model index `queue`: the script's, or a group's.
  private func queue(_ queue: Int) -> ActorQueue {
    guard let group = model.queues[queue].groupOp else { return boxes[queue]!.queue }
    return groups.withLock { $0[group]! }.queue
  }

  private func act(_ step: Step, _ expectation: StepExpectation) -> String? {
    guard expectation != .skip else { return nil }
    switch step {
    case .addGroup(
      let op, let queue, let inGroup, let priority, let limit, let policy, let deadline, let spec, let keys):
      let target = inGroup.map { self.queue(model.ops[$0]!.groupQueue!) } ?? boxes[queue]!.queue
      let run = body(op, spec)
      let permits = gates[op]!
      let groups = groups
      let operation = target.addOperationGroup(
        name: "op\(op)", priority: OperationPriority.allCases[priority],
        traits: timeTraits(deadline: deadline, timeout: nil) + groupKeyTraits(keys),
        maxConcurrentOperationCount: limit,
        onChildFailure: GroupPolicyCode.policy(policy)
      ) { group in
        groups.withLock { $0[op] = group }
        defer { permits.reportBuilt() }
        return try await run()
      }
      typed[op] = operation
      track(op, operation, spec)
    case .addChild(let op, let group, let priority, let spec, let keys):
      let operation = self.queue(model.ops[group]!.groupQueue!).addOperation(
        name: "op\(op)", priority: OperationPriority.allCases[priority], traits: groupKeyTraits(keys),
        body(op, spec))
      typed[op] = operation
      track(op, operation, spec)
    case .add(let op, let queue, let priority, let spec):
      let operation = boxes[queue]!.queue.addOperation(
        name: "op\(op)", priority: OperationPriority.allCases[priority], body(op, spec))
      if op % 3 == 1 { ownHandles[op]?.set(operation) }
      typed[op] = operation
      track(op, operation, spec)
    case .addTagged(let op, let queue, let priority, let tags, let spec):
      let traits = tagTraits(tags, scriptTags)
      if model.isBase(queue) { return add(op, to: queue, priority: priority, traits: traits, spec) }
      // A group's queue: the closure form (a prepared add would throw once the group ended).
      let operation = self.queue(queue).addOperation(
        name: "op\(op)", priority: OperationPriority.allCases[priority], traits: traits, body(op, spec))
      typed[op] = operation
      track(op, operation, spec)
    case .escalate(let op, let code):
      handles[op]!.escalate(to: EscalationCode.priority(code))
    case .setEscalation(let queue, let reorders):
      boxes[queue]!.queue.escalation = reorders ? .taskPriorityAndOrder : .taskPriority
    case .setCapacity(let queue, let capacity):
      boxes[queue]!.queue.capacity = capacity
    case .addWaiting(let op, let queue, let priority, let spec):
      let work = body(op, spec)
      let target = boxes[queue]!.queue
      let priority = OperationPriority.allCases[priority]
      submitters[op] = Task {
        try await target.addOperationWaitingForCapacity(name: "op\(op)", priority: priority, work)
      }
    case .tryAdd(let op, let queue, let priority, let spec):
      let added = boxes[queue]!.queue.tryAddOperation(
        name: "op\(op)", priority: OperationPriority.allCases[priority], body(op, spec))
      guard let added else {
        return model.ops[op] == nil ? nil : "tryAddOperation returned nil; the model adds it"
      }
      guard model.ops[op] != nil else { return "tryAddOperation added it; the model finds the queue full" }
      typed[op] = added
      track(op, added, spec)
    case .cancelWaiting(let op):
      submitters[op]!.cancel()
    case .cancelTagged(let queue, let tag):
      if let queue {
        self.queue(queue).cancelOperations(tagged: scriptTags[tag])
      } else {
        ActorQueue.cancelOperations(tagged: scriptTags[tag])
      }
    case .addAfter(let op, let queue, let priority, let inputs, let spec):
      let run = body(op, spec)
      let target = boxes[queue]!.queue
      let operation: QueueOperation<Int>
      if inputs.count == 1 {
        operation = target.addOperation(
          name: "op\(op)", priority: OperationPriority.allCases[priority], after: typed[inputs[0]]!
        ) { (_: Int) in try await run() }
      } else {
        operation = target.addOperation(
          name: "op\(op)", priority: OperationPriority.allCases[priority], after: typed[inputs[0]]!,
          typed[inputs[1]]!
        ) { (_: Int, _: Int) in try await run() }
      }
      typed[op] = operation
      track(op, operation, spec)
    case .batch(let queue, let prepared, let dependencies):
      var operations: [AnyQueueOperation] = []
      for spec in prepared {
        let operation = QueueOperation(
          name: "op\(spec.op)", priority: OperationPriority.allCases[spec.priority], body(spec.op, spec.body))
        typed[spec.op] = operation
        track(spec.op, operation, spec.body)
        operations.append(operation)
      }
      for (dependency, expected) in zip(dependencies, model.lastBatchExpectations) where expected != .skip {
        if let problem = compare(expected, dependency) { return "\(dependency): \(problem)" }
      }
      if let problem = compare(
        .done,
        {
          if operations.count == 1 {
            try boxes[queue]!.queue.addOperation(operations[0])
          } else {
            try boxes[queue]!.queue.addOperations(operations)
          }
        })
      {
        return problem
      }
    case .barrier(let op, let queue, let spec):
      let run = body(op, spec)
      let barrier = boxes[queue]!.queue.addBarrierBlock(name: "op\(op)") { _ = try await run() }
      track(op, barrier, spec)
    case .depend(let dependency):
      return compare(expectation, dependency)
    case .undepend(let dependent, let dependency):
      handles[dependent]!.removeDependency(handles[dependency]!)
    case .addAgain(let op, let queue):
      return compare(expectation) { try boxes[queue]!.queue.addOperation(handles[op]!) }
    case .cancel(let op):
      handles[op]!.cancel()
    case .cancelAll(let queue):
      self.queue(queue).cancelAllOperations()
    case .setLimit(let queue, let limit):
      self.queue(queue).maxConcurrentOperationCount = limit
    case .setSuspended(let queue, let suspended):
      self.queue(queue).isSuspended = suspended
    case .setPriority(let op, let priority):
      handles[op]!.queuePriority = OperationPriority.allCases[priority]
    case .open, .openFully:
      break  // permits are given when the model says the body moves (see quiesce)
    case .pause(let op):
      handles[op]!.pause()
    case .resume(let op):
      handles[op]!.resume()
    case .pauseAll(let queue):
      self.queue(queue).pauseAllOperations()
    case .resumeAll(let queue):
      self.queue(queue).resumeAllOperations()
    case .setLimitPausingExcess(let queue, let limit):
      self.queue(queue).setMaxConcurrentOperationCount(limit, pausingExcess: true)
    case .addCoalesced(let op, let work, let queue, let priority, let key, let spec, let tags):
      let target = boxes[queue]!.queue
      let isNew = model.ops[work]?.followers.first == op
      var workSpec = spec
      workSpec.handlerCapturesQueue = nil
      let run = body(work, workSpec)
      if !isNew {
        gates[work] = nil
        tokens[work] = nil
      }
      let before = Set(target.operations.map(\.id))
      let operation =
        if let tags {
          target.addOperation(
            name: "op\(op)", priority: OperationPriority.allCases[priority],
            traits: tagTraits(tags, scriptTags),
            coalescingBy: key, run)
        } else {
          target.addOperation(
            name: "op\(op)", priority: OperationPriority.allCases[priority], coalescingBy: key, run)
        }
      typed[op] = operation
      track(op, operation, BodySpec(auto: false, checksCancellation: false, throwing: false))
      let added = target.operations.filter { !before.contains($0.id) }
      if isNew {
        // The shared work: the queue's newest op. Only a weak reference: the script has no handle.
        guard added.count == 1, let shared = added.first, shared.id != operation.id else {
          return "added \(added.count) ops to q\(queue); expected the shared work alone"
        }
        weakOps[work] = Weak(object: shared)
        ids[work] = shared.id
        checker.identify(op: work, id: shared.id)
      } else if !added.isEmpty {
        return "added \(added.count) ops to q\(queue); expected to join op\(model.ops[op]!.leader!)"
      }
    case .dropHandle(let op):
      handles[op] = nil
      typed[op] = nil
    case .releaseQueue(let queue):
      boxes[queue] = nil
    case .addTimed(let op, let queue, let priority, let deadline, let timeout, let spec):
      return add(
        op, to: queue, priority: priority, traits: timeTraits(deadline: deadline, timeout: timeout), spec)
    case .advance(let seconds):
      clock.advance(by: .seconds(seconds))
    case .addExclusive(let op, let queue, let priority, let keys, let shared, let spec):
      let traits = exclusiveTraits(keys: keys, shared: shared, domain: sharedDomain)
      return add(op, to: queue, priority: priority, traits: traits, spec)
    case .addRetrying(let op, let queue, let priority, let retry, let spec):
      return add(op, to: queue, priority: priority, traits: retry.traits, spec, failures: retry.failures)
    case .setLimiters(let queue, let listed):
      boxes[queue]!.queue.rateLimiters = listed.map { limiters[$0] }
    case .addCosted(let op, let queue, let priority, let cost, let spec):
      return add(op, to: queue, priority: priority, traits: [.cost(cost)], spec)
    case .penalize(let limiter, let seconds):
      limiters[limiter].penalize(for: .seconds(seconds))
    case .addConditional(
      let op, let queue, let priority, let answers, let keys, let deadline, let spec, let produced):
      // What its condition's `dependency(for:)` returns: a new operation the script holds.
      var dependency: QueueOperation<Int>?
      if let produced {
        let operation = QueueOperation(name: "op\(produced.op)", body(produced.op, produced.body))
        typed[produced.op] = operation
        track(produced.op, operation, produced.body)
        dependency = operation
      }
      let condition = ScriptCondition(
        op: op, answers: answers, produces: dependency, permits: Permits { [checker] in checker.poke() })
      conditions[op] = Weak(object: condition)
      return add(
        op, to: queue, priority: priority,
        traits: ConditionCode.traits(keys: keys, deadline: deadline, condition),
        spec, condition: condition)
    }
    return nil
  }

  /// Waits until the handles the model says nothing refers to any more (of ops a released queue
  /// let go of) are freed, and those of queued ops it ended show their end: the queue's `deinit`
  /// that let go of them may run after the event that released its owner's last capture, on
  /// that event's thread. Bounded by time: a handle never freed is a failure, not a hang.
  private func awaitGoneHandles() async -> String? {
    let gone = model.takeGoneHandles()
    guard !gone.isEmpty else { return nil }
    let ended = gone.compactMap { op -> OperationID? in
      guard model.ops[op]?.enqueued == true, model.state(of: op)?.isTerminal == true else { return nil }
      return ids[op]
    }
    let done = await eventuallyFreed {
      gone.allSatisfy { weakOps[$0]?.object == nil }
        && ended.allSatisfy { checker.snapshot.latest[$0]?.isTerminal == true }
    }
    guard done else {
      let kept = gone.filter { weakOps[$0]?.object != nil }.map { "op\($0)" }
      return "nothing refers to \(gone.map { "op\($0)" }), but \(kept) were not freed or did not end"
    }
    return nil
  }

  /// After the script dropped the last reference it holds to a suspended queue that nothing
  /// unfinished captures: waits until the queue's `deinit` has cancelled what waited in it.
  ///
  /// Dropping the script's box is not always the last release: an op that ended just before may
  /// still have its body or its completion handlers (which capture the same box) in hand on the
  /// thread that ended it, which runs the handlers and releases both after unlocking, and then
  /// runs the queue's `deinit` there. That is the contract (captures are released after the event
  /// that ends their op, not before its state is published). Rare (CI met it in script 1,184 of a
  /// run after 46,000 local scripts had not), but a handler that sleeps 5 ms made the script fail
  /// every time. What the deinit did is then compared exactly by `quiesce`. Bounded by time: a
  /// queue never freed is a failure, not a hang.
  private func awaitReleasedQueue(_ queue: Int) async -> String? {
    let due = model.sortedOpIndices.filter { op in
      model.ops[op]!.queue == queue && handles[op] != nil && model.expectedState(op)?.isTerminal == true
    }
    let freed = await eventuallyFreed {
      weakQueues[queue].object == nil && due.allSatisfy { handles[$0]!.state.isTerminal }
    }
    guard freed else {
      if weakQueues[queue].object != nil {
        return "q\(queue) was not freed, though nothing unfinished captures it"
      }
      let open = due.filter { !handles[$0]!.state.isTerminal }.map { "op\($0)" }
      return "q\(queue)'s deinit did not end \(open)"
    }
    return nil
  }

  // MARK: Quiescence

  /// Waits until the real queues run what the model runs; lets the bodies the model moves move,
  /// one at a time, in the model's order; then compares every op's exact state.
  /// The `addWaiting` submitters against the model: one the model added returns its handle (the
  /// script holds it from now on), one it dropped throws `CancellationError`, and each queue's
  /// suspended submitters are the model's line, in order.
  private func settleSubmitters() async -> String? {
    for op in submitters.keys.sorted() {
      let task = submitters[op]!
      if model.ops[op] == nil {
        submitters[op] = nil
        switch await task.result {
        case .success: return "op\(op)'s submitter was cancelled, but its add returned"
        case .failure(let error) where !(error is CancellationError):
          return "op\(op)'s submitter threw \(error), expected CancellationError"
        case .failure: break
        }
      } else if model.ops[op]!.enqueued {
        submitters[op] = nil
        guard case .success(let operation) = await task.result else {
          return "op\(op)'s submitter threw, but the model added it"
        }
        if operation.name != "op\(op)" { return "op\(op)'s submitter returned \(operation.name ?? "?")" }
        typed[op] = operation
        track(op, operation, model.ops[op]!.body)
      }
    }
    for queue in model.queues.indices where model.isBase(queue) && model.isLive(queue: queue) {
      let line = model.line(of: queue)
      let target = boxes[queue]!.queue
      guard
        await eventuallyFreed({ suspendedSubmitters(of: target).count == line.count })
      else {
        return "q\(queue) has \(suspendedSubmitters(of: target).count) suspended submitters, the model "
          + "\(line.map { "op\($0)" })"
      }
      let names = Engine.read { scheduler in
        scheduler.capacityWaiters(of: target.index).map { scheduler.operations[$0].name ?? "?" }
      }
      if names != line.map({ "op\($0)" }) {
        return "q\(queue)'s waiting submitters are \(names), the model's \(line.map { "op\($0)" })"
      }
      let capacity = target.capacity ?? .max
      // An end the model made in its step may come in a worker's event just after.
      let count = model.unfinishedCount(in: queue)
      _ = await eventuallyFreed { target.operationCount == count }
      if capacity != model.queues[queue].capacity || target.operationCount != count {
        return "q\(queue) holds \(target.operationCount) of \(capacity), the model "
          + "\(model.unfinishedCount(in: queue)) of \(model.queues[queue].capacity)"
      }
    }
    return nil
  }

  private func quiesce(step: Int) async -> String? {
    while true {
      if let problem = await settleSubmitters() { return problem }
      // A call done in slices (an end that releases many dependents, on a worker's thread) may
      // interleave with this thread's reads: the model's outcome holds once it returned.
      waitingFor.withLock { $0 = "calls in slices to return (step \(step))" }
      guard
        await eventuallyFreed({ Engine.read { $0.callsInSlices } == 0 })
      else { return "a call done in slices did not return" }
      if let problem = await awaitGroups() { return problem }
      if let problem = await waitForExecuting() { return problem }
      guard let move = model.nextMove() else { break }
      if traceScripts { childLog("  model: moves op\(move.op): \(move.result)") }
      guard let id = ids[move.op], let permits = gates[move.op] else {
        return "op\(move.op) has no permits (test bug)"
      }
      if move.evaluation {
        if let problem = await evaluate(move, id: id, permits: permits) { return problem }
        reliabilityHeartbeat.add(1, ordering: .relaxed)
        continue
      }
      // Each wait also ends on what the model did not expect (the body passed, paused or ended
      // instead), so a disagreement is a failure that says so, not a hang.
      if model.ops[move.op]!.cancelRequested || model.isTimedOut(move.op) {
        // Its task is cancelled: by this thread's call, or by a group's body after its own.
        guard await eventuallyFreed({ permits.sawCancellation }) else {
          return "op\(move.op) is cancelled, but its body's task never was"
        }
      }
      let before = permits.passed
      let builtBefore = permits.built
      let checkpoint = move.reachesCheckpoint
      let retriesBefore = checker.snapshot.retries[id, default: 0]
      for _ in 0..<move.permits { permits.give() }
      waitingFor.withLock { $0 = "op\(move.op)'s body to move: \(move.result) (step \(step))" }
      await checker.wait { snapshot in
        snapshot.latest[id]?.isTerminal == true || permits.passed > before
          || (checkpoint && snapshot.latest[id] == .paused)
          || snapshot.retries[id, default: 0] > retriesBefore || permits.built > builtBefore
      }
      if model.ops[move.op]!.groupLimit != nil, case .ended = move.result {
        // A group's body ends after its build, once it took its last child.
        await checker.wait { $0.latest[id]?.isTerminal == true }
      }
      let retried = checker.snapshot.retries[id, default: 0] > retriesBefore
      let latest = checker.snapshot.latest[id]
      let asked = permits.takeAsked()
      if move.reachesCheckpoint, !model.ops[move.op]!.cancelRequested, !model.isTimedOut(move.op),
        move.result != .rescheduled, asked != move.askedToPause
      {
        return
          "op\(move.op) read isPauseRequested \(asked.map { "\($0)" } ?? "nothing"), expected \(move.askedToPause)"
      }
      let seen =
        permits.passed > before
        ? "passed its checkpoint" : latest == .paused ? "paused" : "ended \(latest.map { "\($0)" } ?? "?")"
      switch move.result {
      case .passed(let count):
        if permits.passed != count { return "op\(move.op) \(seen); expected it to pass checkpoint \(count)" }
      case .paused:
        if latest != .paused || permits.passed != before {
          return "op\(move.op) \(seen); expected it to pause"
        }
      case .ended(let outcome):
        let actual = latest.map(modelState)
        if actual != outcome || permits.passed != before || retried {
          return "op\(move.op) \(seen)\(retried ? " (retried)" : ""); expected it to end \(outcome)"
        }
      case .rescheduled:
        if !retried || latest?.isTerminal == true || permits.passed != before {
          return "op\(move.op) \(seen); expected its attempt to fail and be retried"
        }
      case .built:
        if permits.built != builtBefore + 1 || latest?.isTerminal == true || permits.passed != before {
          return
            "group op\(move.op) \(seen); expected its build to end and the group to wait for its children"
        }
      case .evaluated, .deferred:
        return "op\(move.op): a body's move cannot be \(move.result) (test bug)"
      }
      reliabilityHeartbeat.add(1, ordering: .relaxed)
    }
    if let problem = await awaitGroups() { return problem }
    for op in model.sortedOpIndices {
      guard let operation = handles[op], let expected = model.expectedState(op) else { continue }
      let real = operation.state
      if real != expected
        && !(model.acceptsEither(op) && expected.isTerminal && real.isTerminal && real != .finished)
      {
        if traceScripts { traceStates() }
        return "op\(op) is \(real), expected \(expected)"
      }
      // Escalation: the model's, and never lower than what this handle read before.
      let escalation = Engine.read { $0.operations[operation.recordIndex].escalation }
      if !real.isTerminal, escalation != model.ops[op]!.escalation {
        return "op\(op)'s escalation is \(escalation), the model's \(model.ops[op]!.escalation)"
      }
      if !real.isTerminal {
        let effective = operation.effectiveTaskPriority?.rawValue ?? 0
        if effective < (lastEffective[op] ?? 0) {
          return "op\(op)'s effective priority fell from \(lastEffective[op]!) to \(effective)"
        }
        lastEffective[op] = effective
      }
      if operation.isPaused != model.expectedIsPaused(op) {
        return "op\(op).isPaused is \(operation.isPaused), expected \(model.expectedIsPaused(op))"
      }
      if real == .executing, model.mustNotExecute(op) {
        return "op\(op) executes though its deadline passed before it started"
      }
    }
    // Counts: an end the model made may come in a worker's event just after its step.
    for queue in model.queues.indices where model.isLive(queue: queue) {
      guard queue < boxes.count, let target = boxes[queue]?.queue else { continue }
      let expected = model.counts(of: queue)
      _ = await eventuallyFreed { ReferenceModel.countsAgree(target.counts, expected) }
      let real = target.counts
      if !ReferenceModel.countsAgree(real, expected) {
        return "q\(queue)'s counts are \(real), the model's \(expected.counts)"
          + (expected.ambiguous ? " (failed and cancelled summed)" : "")
      }
      if real.unfinished != target.operationCount {
        return
          "q\(queue) counts \(real.unfinished) unfinished by state, operationCount \(target.operationCount)"
      }
    }
    return nil
  }

  /// Logs each op's state (and whether paused) beside the model's (`ACTORQUEUE_RANDOM_TRACE`).
  private func traceStates() {
    for op in model.sortedOpIndices {
      let real = handles[op].map { "\($0.state)\($0.isPaused ? " (paused)" : "")" } ?? "no handle"
      childLog("  op\(op): \(real), model \(model.expectedState(op).map { "\($0)" } ?? "-")")
    }
  }

  /// Logs each op's state in the model after a step (`ACTORQUEUE_RANDOM_TRACE`): a watchdog's
  /// report can then be read against what the model expected.
  private func traceModel() {
    let states = model.sortedOpIndices.map { "op\($0) \(model.expectedState($0).map { "\($0)" } ?? "-")" }
    childLog("  model: \(states.joined(separator: ", "))")
    let real = model.sortedOpIndices.map { op in
      "op\(op) " + (handles[op].map { "\($0.state)\($0.isCancelled ? " (cancelled)" : "")" } ?? "no handle")
    }
    childLog("  model: queues have \(real.joined(separator: ", "))")
  }

  /// Lets the condition of `move.op` answer (one permit of its own), and waits until its body
  /// entered, the op ended, or its condition's "not yet" was told, as the model says.
  private func evaluate(_ move: BodyMove, id: OperationID, permits: Permits) async -> String? {
    // Its operation holds it until it ends (weakly here: it holds the produced operation).
    guard let condition = conditions[move.op]?.object else { return "op\(move.op) has no condition" }
    let entered = permits.entered
    let deferrals = checker.snapshot.deferrals[id, default: 0]
    condition.permits.give()
    await checker.wait { snapshot in
      snapshot.latest[id]?.isTerminal == true || permits.entered > entered
        || snapshot.deferrals[id, default: 0] > deferrals
    }
    let snapshot = checker.snapshot
    let latest = snapshot.latest[id]
    let deferred = snapshot.deferrals[id, default: 0] > deferrals
    let seen =
      permits.entered > entered
      ? "ran its body" : deferred ? "was told not yet" : "ended \(latest.map { "\($0)" } ?? "?")"
    switch move.result {
    case .evaluated:
      if permits.entered != entered + 1 || deferred || latest?.isTerminal == true {
        return "op\(move.op) \(seen); expected its condition satisfied and its body to run"
      }
    case .ended(let outcome):
      if latest.map(modelState) != outcome || permits.entered != entered || deferred {
        return "op\(move.op) \(seen); expected it to end \(outcome) when its condition answered"
      }
    case .deferred:
      if !deferred || permits.entered != entered || latest?.isTerminal == true {
        return "op\(move.op) \(seen); expected its condition to say not yet"
      }
    default:
      return "op\(move.op): an evaluation cannot \(move.result) (test bug)"
    }
    return nil
  }

  /// What group bodies do after the events that decide it, on their own tasks: each started
  /// group's body got its group (its queue's events are then watched); each group whose children
  /// the model cancels takes none from now on; each group the model ended has ended.
  private func awaitGroups() async -> String? {
    for op in model.sortedOpIndices {
      guard let modelQueue = model.ops[op]!.groupQueue else { continue }
      if groupQueueIndices[op] == nil {
        guard await eventuallyFreed({ groups.withLock { $0[op] != nil } }) else {
          return "group op\(op) started, but its build never ran"
        }
        checker.attach(groups.withLock { $0[op]! }.queue.events, queue: modelQueue)
        groupQueueIndices[op] = modelQueue
      }
      let queue = groups.withLock { $0[op]! }.queue
      if model.queues[modelQueue].admission > 0 {
        let refuses = await eventuallyFreed {
          Engine.read { $0.groupRecords[queue.index].map { $0.admission != .open } ?? true }
        }
        if !refuses { return "group op\(op) does not cancel its children, as the model does" }
      }
      if model.state(of: op)?.isTerminal == true, let id = ids[op] {
        waitingFor.withLock { $0 = "group op\(op) to end, as the model has it" }
        await checker.wait { $0.latest[id]?.isTerminal == true }
      }
    }
    // A group's end may release its dependents in slices, on the group body's thread.
    guard await eventuallyFreed({ Engine.read { $0.callsInSlices } == 0 }) else {
      return "a call done in slices did not return"
    }
    return nil
  }

  private func waitForExecuting() async -> String? {
    var expected: [Int: Set<OperationID>] = [:]
    var named = ""
    for queue in model.queues.indices {
      let ops = model.executing(in: queue)
      expected[queue] = Set(ops.compactMap { ids[$0] })
      if !ops.isEmpty { named += " q\(queue) [\(ops.sorted().map { "op\($0)" }.joined(separator: ", "))]" }
    }
    let want = expected
    waitingFor.withLock { $0 = "the queues to execute what the model does:\(named)" }
    await checker.wait { snapshot in
      want.allSatisfy { queue, ids in
        let real = snapshot.executing(in: queue)
        return ids.isSubset(of: real) || !real.subtracting(ids).isEmpty
          || ids.contains { snapshot.latest[$0]?.isTerminal == true }
      }
    }
    // Bodies given a slot again return from their checkpoint and report it.
    for op in model.sortedOpIndices where model.checkpointsPassed(op) > 0 && model.state(of: op) == .executing
    {
      await gates[op]?.waitUntilPassed(model.checkpointsPassed(op))
    }
    let snapshot = checker.snapshot
    for (queue, ids) in want {
      let real = snapshot.executing(in: queue)
      if real != ids {
        let name = { (id: OperationID) in self.ids.first { $0.value == id }.map { "op\($0.key)" } ?? "\(id)" }
        return "q\(queue) executes \(real.map(name).sorted()), expected \(ids.map(name).sorted())"
      }
    }
    return nil
  }

  // MARK: Freeing

  private func checkFreed(since terminalBefore: Set<Int>) async -> String? {
    let endedNow = model.sortedOpIndices.filter {
      model.state(of: $0)?.isTerminal == true && !terminalBefore.contains($0)
    }
    let allowedOps = model.opsAllowedAlive()
    let allowedQueues = model.queuesAllowedAlive()
    let done = await eventuallyFreed {
      endedNow.allSatisfy { tokens[$0]?.object == nil }
        && weakOps.allSatisfy { allowedOps.contains($0.key) || $0.value.object == nil }
        && weakBoxes.indices.allSatisfy { allowedQueues.contains($0) || weakBoxes[$0].object == nil }
    }
    guard !done else { return nil }
    let bodies = endedNow.filter { tokens[$0]?.object != nil }.map { "op\($0)" }
    let ops = weakOps.filter { !allowedOps.contains($0.key) && $0.value.object != nil }.keys.sorted().map {
      "op\($0)"
    }
    let queues = weakBoxes.indices.filter { !allowedQueues.contains($0) && weakBoxes[$0].object != nil }
    return
      "still alive: bodies of ended \(bodies), unreachable ops \(ops), released queues \(queues.map { "q\($0)" })"
  }
}

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
  case dependencyCycle, alreadyEnqueued, alreadyStarted
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
}

/// The reference model: the behaviour the spec promises (spec/operation-model.md, spec/API.md),
/// as a small synchronous value. It decides every outcome of a script, which ops run at each moment,
/// and what must have been freed. Executors (real queues here; the scheduler's pure state machine
/// later) drive it step by step and compare.
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
    var gateOpened = false
    var handleHeld = true
    /// Two inputs had ended badly when it was added: failed or cancelled are both correct.
    var eitherBadOutcome = false

    var allDependencies: [Int] { explicit.map(\.op) + inputs + barrierDependencies }

    func requiresSuccess(of other: Int) -> Bool {
      inputs.contains(other) || explicit.contains { $0.op == other && $0.mustSucceed }
    }

    var captures: [Int] { body.captures }
  }

  struct Queue: Sendable {
    var limit: Int
    var suspended = false
    var released = false
    var barriers: [Int] = []
  }

  private(set) var ops: [Int: Op] = [:]
  private(set) var queues: [Queue]
  /// Ops the executor must let end, in the order they started (their gate is open or they are auto).
  private(set) var endingQueue: [Int] = []
  private(set) var journal: [Registration] = []
  private var nextOrder = 0
  private(set) var step = 0
  /// For a `.batch` step: what each of its `addDependency` calls must do.
  private(set) var lastBatchExpectations: [StepExpectation] = []

  init(queueLimits: [Int]) {
    queues = queueLimits.map { Queue(limit: $0 == -1 ? .max : $0) }
    for (index, limit) in queueLimits.enumerated() { journal.append(.queue(index, limit: limit)) }
  }

  var sortedOpIndices: [Int] { ops.keys.sorted() }

  func state(of op: Int) -> ModelState? { ops[op]?.state }

  func executing(in queue: Int) -> Set<Int> {
    Set(ops.filter { $0.value.queue == queue && $0.value.state == .executing }.map(\.key))
  }

  func isLive(queue: Int) -> Bool { queue < queues.count && !queues[queue].released }

  func handleHeld(_ op: Int) -> Bool { ops[op]?.handleHeld ?? false }

  // MARK: Steps

  /// Applies one step (`index` is its position in the run, for the checker's journal).
  mutating func apply(_ step: Step, index: Int) -> StepExpectation {
    self.step = index
    let expectation = perform(step)
    settle()
    return expectation
  }

  private mutating func perform(_ step: Step) -> StepExpectation {
    switch step {
    case .add(let op, let queue, let priority, let body):
      guard isLive(queue: queue), ops[op] == nil, validCaptures(body) else { return .skip }
      create(op, queue: queue, priority: priority, body: body)
      enqueue(op)
      return .done
    case .addAfter(let op, let queue, let priority, let inputs, let body):
      guard isLive(queue: queue), ops[op] == nil, validCaptures(body), !inputs.isEmpty,
        inputs.allSatisfy({ handleHeld($0) && ops[$0]?.isBarrier == false })
      else { return .skip }
      create(op, queue: queue, priority: priority, body: body)
      ops[op]!.inputs = inputs
      for input in inputs where !ops[input]!.state.isTerminal {
        journal.append(.edge(dependent: op, dependency: input, step: self.step))
      }
      let bad = inputs.filter { ops[$0]!.state.isTerminal && ops[$0]!.state != .finished }
      if let first = bad.first {
        ops[op]!.eitherBadOutcome = Set(bad.map { ops[$0]!.state }).count > 1
        end(op, as: ops[first]!.state == .cancelled ? .cancelled : .failed)
      }
      enqueue(op)
      return .done
    case .batch(let queue, let prepared, let dependencies):
      guard isLive(queue: queue), !prepared.isEmpty, prepared.allSatisfy({ ops[$0.op] == nil }),
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
      guard isLive(queue: queue), ops[op] == nil else { return .skip }
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
      guard handleHeld(dependency.dependent), handleHeld(dependency.dependency) else { return .skip }
      return addDependency(dependency)
    case .undepend(let dependent, let dependency):
      guard handleHeld(dependent), handleHeld(dependency) else { return .skip }
      guard ops[dependent]!.state == .waiting,
        let index = ops[dependent]!.explicit.firstIndex(where: { $0.op == dependency })
      else { return .done }
      ops[dependent]!.explicit.remove(at: index)
      journal.append(.edgeRemoved(dependent: dependent, dependency: dependency, step: self.step))
      return .done
    case .addAgain(let op, let queue):
      guard handleHeld(op), isLive(queue: queue) else { return .skip }
      return .refused(.alreadyEnqueued)
    case .cancel(let op):
      guard handleHeld(op) else { return .skip }
      cancel(op)
      return .done
    case .cancelAll(let queue):
      guard isLive(queue: queue) else { return .skip }
      let unfinished = ops.filter {
        $0.value.queue == queue && $0.value.enqueued && !$0.value.state.isTerminal
      }
      .sorted { $0.value.order < $1.value.order }.map(\.key)
      for op in unfinished { cancel(op) }
      return .done
    case .setLimit(let queue, let limit):
      guard isLive(queue: queue), limit == -1 || limit >= 1 else { return .skip }
      queues[queue].limit = limit == -1 ? .max : limit
      return .done
    case .setSuspended(let queue, let suspended):
      guard isLive(queue: queue) else { return .skip }
      queues[queue].suspended = suspended
      return .done
    case .setPriority(let op, let priority):
      guard handleHeld(op), ops[op]!.priority != priority else { return .skip }
      ops[op]!.priority = priority
      journal.append(.priority(op: op, priority: priority, step: self.step))
      return .done
    case .open(let op):
      guard let model = ops[op], !model.gateOpened, !model.body.auto else { return .skip }
      ops[op]!.gateOpened = true
      if model.state == .executing { endingQueue.append(op) }
      return .done
    case .dropHandle(let op):
      guard handleHeld(op) else { return .skip }
      ops[op]!.handleHeld = false
      return .done
    case .releaseQueue(let queue):
      guard isLive(queue: queue) else { return .skip }
      if queues[queue].suspended {
        // Released while suspended: its deinit cancels what waits in it. Only when nothing that is
        // still running or waiting holds its owner (else it is the user's own cycle).
        let captured = ops.values.contains { !$0.state.isTerminal && $0.captures.contains(queue) }
        guard !captured else { return .skip }
        queues[queue].released = true
        let waiting = ops.filter {
          $0.value.queue == queue && $0.value.enqueued && $0.value.state == .waiting
        }
        .sorted { $0.value.order < $1.value.order }.map(\.key)
        for op in waiting { cancel(op) }
      } else {
        queues[queue].released = true
      }
      return .done
    }
  }

  private func validCaptures(_ body: BodySpec) -> Bool {
    body.captures.allSatisfy { isLive(queue: $0) }
  }

  private mutating func create(_ op: Int, queue: Int, priority: Int, body: BodySpec, isBarrier: Bool = false)
  {
    ops[op] = Op(queue: queue, priority: priority, body: body, isBarrier: isBarrier)
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
  }

  private mutating func addDependency(_ edge: Dependency) -> StepExpectation {
    guard let dependent = ops[edge.dependent], let dependency = ops[edge.dependency] else { return .skip }
    guard dependent.state == .waiting else { return .refused(.alreadyStarted) }
    if let index = dependent.explicit.firstIndex(where: { $0.op == edge.dependency }) {
      guard edge.mustSucceed, !dependent.explicit[index].mustSucceed else { return .done }
      ops[edge.dependent]!.explicit[index].mustSucceed = true
      if dependency.state.isTerminal && dependency.state != .finished {
        end(edge.dependent, as: dependency.state == .cancelled ? .cancelled : .failed)
      }
      return .done
    }
    if edge.dependent == edge.dependency || waits(edge.dependency, for: edge.dependent) {
      return .refused(.dependencyCycle)
    }
    ops[edge.dependent]!.explicit.append((edge.dependency, edge.mustSucceed))
    if dependency.state.isTerminal {
      if edge.mustSucceed && dependency.state != .finished {
        end(edge.dependent, as: dependency.state == .cancelled ? .cancelled : .failed)
      }
    } else {
      journal.append(.edge(dependent: edge.dependent, dependency: edge.dependency, step: step))
    }
    return .done
  }

  /// True when `op` waits, directly or not, for `other` (through edges to ops not yet ended).
  private func waits(_ op: Int, for other: Int) -> Bool {
    guard !ops[op]!.state.isTerminal else { return false }
    var stack = [op]
    var seen: Set<Int> = [op]
    while let current = stack.popLast() {
      for next in ops[current]!.allDependencies where !ops[next]!.state.isTerminal {
        if next == other { return true }
        if seen.insert(next).inserted { stack.append(next) }
      }
    }
    return false
  }

  private mutating func cancel(_ op: Int) {
    guard !ops[op]!.state.isTerminal else { return }
    ops[op]!.cancelRequested = true
    if ops[op]!.state == .waiting {
      if ops[op]!.enqueued { journal.append(.cancelledWhileWaiting(op: op, step: step)) }
      end(op, as: .cancelled)
    }
  }

  /// Ends `op` and, through must-succeed edges and inputs, every waiting op that needed it.
  private mutating func end(_ op: Int, as terminal: ModelState) {
    ops[op]!.state = terminal
    if terminal == .cancelled { ops[op]!.cancelRequested = true }
    var frontier = [op]
    while let current = frontier.popLast() {
      let outcome = ops[current]!.state
      guard outcome != .finished else { continue }
      for waiting in sortedOpIndices
      where ops[waiting]!.state == .waiting && ops[waiting]!.requiresSuccess(of: current) {
        ops[waiting]!.state = outcome == .cancelled ? .cancelled : .failed
        if outcome == .cancelled { ops[waiting]!.cancelRequested = true }
        frontier.append(waiting)
      }
    }
  }

  /// True when the op waits in its queue with every dependency ended (`.ready`, not `.pending`).
  func isReady(_ op: Int) -> Bool { ops[op].map(isReady) ?? false }

  private func isReady(_ op: Op) -> Bool {
    op.state == .waiting && op.enqueued && op.allDependencies.allSatisfy { ops[$0]!.state.isTerminal }
  }

  /// Starts what may start: in each queue not suspended, while a slot is free, the ready op of
  /// highest priority, first submitted first.
  private mutating func settle() {
    for queue in queues.indices where !queues[queue].suspended {
      while executing(in: queue).count < queues[queue].limit {
        let best = ops.filter { $0.value.queue == queue && isReady($0.value) }
          .min { ($0.value.priority, -$0.value.order) > ($1.value.priority, -$1.value.order) }
        guard let (index, _) = best else { break }
        ops[index]!.state = .executing
        if ops[index]!.body.auto || ops[index]!.gateOpened { endingQueue.append(index) }
      }
    }
  }

  /// The next op whose body the executor must let end now (in start order), already ended in the
  /// model (with everything that follows from it), or nil when the system is quiescent.
  mutating func nextEnding() -> (op: Int, outcome: ModelState)? {
    guard !endingQueue.isEmpty else { return nil }
    let op = endingQueue.removeFirst()
    let model = ops[op]!
    let outcome: ModelState
    if model.cancelRequested && (model.body.checksCancellation || model.body.throwing) {
      outcome = .cancelled
    } else {
      outcome = model.body.throwing ? .failed : .finished
    }
    end(op, as: outcome)
    settle()
    return (op, outcome)
  }

  // MARK: End of a script

  /// Steps that let everything end: resume every live queue, open every gate.
  func drainSteps() -> [Step] {
    var steps: [Step] = []
    for queue in queues.indices where isLive(queue: queue) && queues[queue].suspended {
      steps.append(.setSuspended(queue: queue, suspended: false))
    }
    for op in sortedOpIndices where !ops[op]!.state.isTerminal && !ops[op]!.gateOpened && !ops[op]!.body.auto
    {
      steps.append(.open(op: op))
    }
    return steps
  }

  /// Ops the model allows to be alive: held by the script, not yet ended, or reachable from one
  /// of those through its dependencies (kept like Foundation's `dependencies`).
  func opsAllowedAlive() -> Set<Int> {
    var alive = Set(
      ops.filter { $0.value.handleHeld || ($0.value.enqueued && !$0.value.state.isTerminal) }.keys)
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
}

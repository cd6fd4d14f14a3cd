/// Generates random scripts from a seed: every public action, weighted so that the interesting
/// interleavings (cancellation cascades, barriers, limit and suspension changes, pauses at
/// checkpoints, excess pausing, coalesced work joined and cancelled, deadlines and timeouts passing
/// as the clock advances, conditions answering in turn, operations cancelled by tag, submitters
/// waiting for space in full queues) come up often.
struct ScriptGenerator: Sendable {
  var minSteps = 12
  var maxSteps = 40

  func script(seed: UInt64) -> Script {
    var random = SplitMix64(seed: seed)
    let queueCount = 2 + random.below(2)
    let limits = (0..<queueCount).map { _ in random.pick([1, 1, 2, 3, -1]) }
    var steps: [Step] = []
    var ops: [(op: Int, queue: Int, barrier: Bool)] = []
    /// Shared work that may have been added (its body takes permits; the script has no handle).
    var works: [Int] = []
    var released: Set<Int> = []
    var nextOp = 0
    let count = minSteps + random.below(maxSteps - minSteps + 1)
    // One script in three adds most of its plain ops with keys instead, so keys contend.
    let keyHeavy = random.chance(33)
    // Two rate limiters in every script; one script in four lists them early and adds costed ops.
    let limiters = (0..<2).map { _ in
      LimiterSpec(window: random.chance(35), capacity: 1 + random.below(3), seconds: 1 + random.below(2))
    }
    let rateHeavy = random.chance(25)
    // One script in four adds most of its plain ops with tags, and cancels by tag instead of by
    // handle half the time, so cancelling a tag finds many.
    let tagHeavy = random.chance(25)
    // One script in five bounds a queue early and adds most of its plain ops waiting for space
    // there, so submitters line up, are served as ops end, and now and then give up.
    let capacityHeavy = random.chance(20)
    if capacityHeavy {
      steps.append(.setCapacity(queue: random.below(queueCount), capacity: 1 + random.below(2)))
    }
    /// The `addWaiting` ops so far.
    var waitingAdds: [Int] = []
    if rateHeavy {
      steps.append(.setLimiters(queue: random.below(queueCount), limiters: random.chance(70) ? [0] : [0, 1]))
    }

    func body(_ random: inout SplitMix64, queues: Int) -> BodySpec {
      let checkpoints = random.chance(60) ? 1 + random.below(2) : 0
      return BodySpec(
        auto: random.chance(35), checkpoints: checkpoints,
        pauseHandlers: checkpoints > 0 && random.chance(40),
        checksCancellation: random.chance(40), throwing: random.chance(25),
        capturesQueue: random.chance(12) ? random.below(queues) : nil,
        handlerCapturesQueue: random.chance(5) ? random.below(queues) : nil)
    }
    func anyOp(_ random: inout SplitMix64) -> Int? { ops.isEmpty ? nil : random.pick(ops).op }
    /// One of the latest ops: those most likely still running, so a pause finds a body to pause.
    func recentOp(_ random: inout SplitMix64) -> Int? {
      ops.isEmpty ? nil : random.pick(Array(ops.suffix(4))).op
    }
    func liveQueue(_ random: inout SplitMix64) -> Int {
      let live = (0..<queueCount).filter { !released.contains($0) }
      return live.isEmpty ? 0 : random.pick(live)
    }
    /// Group ops added so far: children go to one of the latest, and whole-queue steps now and
    /// then act on a group's queue (the model's indices after the script's queues, in the order
    /// the groups start; a step naming one that never started is skipped).
    var groups: [Int] = []
    /// Each group's keys: a child of a group with a key often takes that key too (it is its
    /// group's: the child takes nothing of its own). Not other keys: a child waiting for a key a
    /// paused holder keeps, while its group holds the slot that holder needs, never ends (seed
    /// 12557036170490459684 of the value tester; a deadlock left for its own issue).
    var groupKeysByOp: [Int: [Int]] = [:]
    func childKeys(_ random: inout SplitMix64, group: Int) -> [Int]? {
      let held = groupKeysByOp[group] ?? []
      guard !held.isEmpty, random.chance(60) else { return nil }
      return held
    }
    /// The queue and tags of each tagged add so far.
    var taggedAdds: [(queue: Int, tags: [Int])] = []
    func anyQueue(_ random: inout SplitMix64) -> Int {
      groups.isEmpty || !random.chance(20)
        ? liveQueue(&random) : queueCount + random.below(min(groups.count, 2))
    }

    while steps.count < count {
      var roll = random.below(268)
      if capacityHeavy, roll < 18 { roll = 246 }
      if keyHeavy, roll < 18 { roll = 158 }
      if rateHeavy, roll < 18 { roll = 178 }
      if tagHeavy, roll < 18 { roll = 224 }
      if tagHeavy, (52..<56).contains(roll) { roll = 236 }
      switch roll {
      case 0..<18:
        let queue = liveQueue(&random)
        steps.append(
          .add(op: nextOp, queue: queue, priority: random.below(5), body: body(&random, queues: queueCount)))
        ops.append((nextOp, queue, false))
        nextOp += 1
      case 18..<25:
        let candidates = ops.filter { !$0.barrier }
        guard !candidates.isEmpty else { continue }
        let queue = liveQueue(&random)
        let inputs = (0..<(1 + random.below(2))).map { _ in random.pick(candidates).op }
        steps.append(
          .addAfter(
            op: nextOp, queue: queue, priority: random.below(5), inputs: inputs,
            body: body(&random, queues: queueCount)))
        ops.append((nextOp, queue, false))
        nextOp += 1
      case 25..<32:
        let queue = liveQueue(&random)
        let prepared = (0..<(1 + random.below(3))).map { offset in
          PreparedSpec(
            op: nextOp + offset, priority: random.below(5), body: body(&random, queues: queueCount))
        }
        var dependencies: [Dependency] = []
        for spec in prepared where random.chance(60) {
          let earlier = prepared.map(\.op).filter { $0 != spec.op }
          let target = random.chance(50) && !earlier.isEmpty ? random.pick(earlier) : anyOp(&random)
          if let target {
            dependencies.append(
              Dependency(dependent: spec.op, dependency: target, mustSucceed: random.chance(40)))
          }
        }
        steps.append(.batch(queue: queue, ops: prepared, dependencies: dependencies))
        for spec in prepared { ops.append((spec.op, queue, false)) }
        nextOp += prepared.count
      case 32..<36:
        let queue = liveQueue(&random)
        var barrierBody = body(&random, queues: queueCount)
        barrierBody.capturesQueue = nil
        barrierBody.handlerCapturesQueue = nil
        steps.append(.barrier(op: nextOp, queue: queue, body: barrierBody))
        ops.append((nextOp, queue, true))
        nextOp += 1
      case 36..<48:
        guard let dependent = anyOp(&random), let dependency = anyOp(&random) else { continue }
        steps.append(
          .depend(Dependency(dependent: dependent, dependency: dependency, mustSucceed: random.chance(45))))
      case 48..<51:
        guard let dependent = anyOp(&random), let dependency = anyOp(&random) else { continue }
        steps.append(.undepend(dependent: dependent, dependency: dependency))
      case 51..<52:
        guard let op = anyOp(&random) else { continue }
        steps.append(.addAgain(op: op, queue: liveQueue(&random)))
      case 52..<60:
        guard let op = anyOp(&random) else { continue }
        steps.append(.cancel(op: op))
      case 60..<63:
        steps.append(.cancelAll(queue: anyQueue(&random)))
      case 63..<68:
        steps.append(.setLimit(queue: anyQueue(&random), limit: random.pick([-1, 1, 1, 2, 3])))
      case 68..<75:
        steps.append(.setSuspended(queue: anyQueue(&random), suspended: random.chance(55)))
      case 75..<79:
        guard let op = anyOp(&random) else { continue }
        steps.append(.setPriority(op: op, priority: random.below(5)))
      case 79..<94:
        let candidates = random.chance(50) ? ops.suffix(4).map(\.op) + works.suffix(2) : ops.map(\.op) + works
        guard !candidates.isEmpty else { continue }
        steps.append(.open(op: random.pick(candidates)))
      case 94..<97:
        guard let op = anyOp(&random) else { continue }
        steps.append(.dropHandle(op: op))
      case 97..<99:
        let queue = liveQueue(&random)
        steps.append(.releaseQueue(queue: queue))
        released.insert(queue)
      case 99..<106:
        // Few keys, so that callers join work already there.
        let queue = liveQueue(&random)
        var workBody = body(&random, queues: queueCount)
        workBody.handlerCapturesQueue = nil
        steps.append(
          .addCoalesced(
            op: nextOp, work: nextOp + 1, queue: queue, priority: random.below(5), key: random.below(2),
            body: workBody, tags: random.chance(40) ? [random.below(2)] : nil))
        ops.append((nextOp, queue, false))
        works.append(nextOp + 1)
        nextOp += 2
      case 106..<112:
        guard let op = random.chance(75) ? recentOp(&random) : anyOp(&random) else { continue }
        steps.append(.pause(op: op))
        // Often let it reach its checkpoint (and pause there), and now and then cancel it there.
        if random.chance(50) {
          steps.append(.open(op: random.pick(ops.suffix(4).map(\.op) + works.suffix(2))))
        }
        if random.chance(20) { steps.append(.cancel(op: op)) }
      case 112..<116:
        guard let op = random.chance(60) ? recentOp(&random) : anyOp(&random) else { continue }
        steps.append(.resume(op: op))
      case 116..<118:
        steps.append(.pauseAll(queue: anyQueue(&random)))
      case 118..<120:
        steps.append(.resumeAll(queue: anyQueue(&random)))
      case 120..<127:
        // Often raise the limit first, so that more ops execute, then lower it pausing the excess
        // and let some of that queue's latest bodies reach a checkpoint while asked to pause.
        let queue = liveQueue(&random)
        if random.chance(60) { steps.append(.setLimit(queue: queue, limit: random.pick([-1, 3]))) }
        steps.append(.setLimitPausingExcess(queue: queue, limit: random.pick([-1, 1, 1, 1, 2])))
        let inQueue = ops.filter { $0.queue == queue }.suffix(4).map(\.op) + works.suffix(2)
        for _ in 0..<random.below(3) where !inQueue.isEmpty {
          steps.append(.open(op: random.pick(inQueue)))
        }
      case 127..<139:
        // A deadline (0 to 4 s after submission; 0: already past), a timeout (1 to 3 s), or both.
        let queue = liveQueue(&random)
        let kind = random.below(3)
        steps.append(
          .addTimed(
            op: nextOp, queue: queue, priority: random.below(5), deadline: kind == 1 ? nil : random.below(5),
            timeout: kind == 0 ? nil : 1 + random.below(3), body: body(&random, queues: queueCount)))
        ops.append((nextOp, queue, false))
        nextOp += 1
      case 148..<158:
        // A retry: mostly without delay or 1–2 s apart, failing 0 to 3 times, often with a
        // deadline or a timeout; sometimes a gate opened at once, so attempts follow each other.
        let queue = liveQueue(&random)
        let retry = RetrySpec(
          attempts: 1 + random.below(4), backoff: random.pick([0, 0, 1, 2]), failures: random.below(4),
          deadline: random.chance(30) ? 1 + random.below(6) : nil,
          timeout: random.chance(25) ? 1 + random.below(2) : nil)
        steps.append(
          .addRetrying(
            op: nextOp, queue: queue, priority: random.below(5), retry: retry,
            body: body(&random, queues: queueCount)))
        ops.append((nextOp, queue, false))
        if random.chance(40) { steps.append(.open(op: nextOp)) }
        nextOp += 1
      case 158..<172:
        // Keys: one or two of three (now and then none, or one twice), in the script's shared
        // domain (across queues) or the queue's own.
        let queue = liveQueue(&random)
        let count = random.chance(6) ? 0 : 1 + random.below(2)
        var keys = (0..<count).map { _ in random.below(3) }
        if random.chance(5), let first = keys.first { keys.append(first) }
        steps.append(
          .addExclusive(
            op: nextOp, queue: queue, priority: random.below(5), keys: keys, shared: random.chance(60),
            body: body(&random, queues: queueCount)))
        ops.append((nextOp, queue, false))
        nextOp += 1
      case 172..<178:
        // Now and then none; mostly one, the first shared by queues more often.
        let listed: [Int] = random.chance(15) ? [] : random.chance(60) ? [random.below(2)] : [0, 1]
        steps.append(.setLimiters(queue: liveQueue(&random), limiters: listed))
      case 178..<187:
        let queue = liveQueue(&random)
        steps.append(
          .addCosted(
            op: nextOp, queue: queue, priority: random.below(5), cost: random.pick([0, 1, 1, 2, 2, 3, 4]),
            body: body(&random, queues: queueCount)))
        ops.append((nextOp, queue, false))
        nextOp += 1
      case 187..<189:
        steps.append(.penalize(limiter: random.below(2), seconds: 1 + random.below(3)))
      case 190..<200:
        // A condition answering up to three times (then satisfied), not yet mostly 0 or 1 s
        // later; sometimes with a key of its queue's own or a deadline; often opened at once.
        // Now and then its condition produces an operation that runs first.
        let queue = liveQueue(&random)
        let answers = (0..<random.below(4)).map { _ in random.pick([0, 1, 2, 3, 3, 4, 4, 5]) }
        let produced =
          random.chance(30) ? ProducedSpec(op: nextOp + 1, body: body(&random, queues: queueCount)) : nil
        steps.append(
          .addConditional(
            op: nextOp, queue: queue, priority: random.below(5), answers: answers,
            keys: random.chance(30) ? [random.below(3)] : [],
            deadline: random.chance(25) ? 1 + random.below(4) : nil,
            body: body(&random, queues: queueCount), produced: produced))
        ops.append((nextOp, queue, false))
        if let produced {
          ops.append((produced.op, queue, false))
          if random.chance(50) { steps.append(.open(op: produced.op)) }
        }
        if random.chance(50) { steps.append(.open(op: nextOp)) }
        nextOp += produced == nil ? 1 : 2
      case 200..<208:
        // A group: its own limit and policy, sometimes a deadline, sometimes inside the latest
        // group; its build often opened at once; a child or two added right away.
        let queue = liveQueue(&random)
        let inGroup = !groups.isEmpty && random.chance(25) ? groups.last : nil
        // Sometimes a key, which its children then take too; not a group inside a group, whose
        // key its enclosing group does not hold (the deadlock noted at `childKeys`).
        let groupKeys = random.chance(25) && inGroup == nil ? [random.below(3)] : nil
        steps.append(
          .addGroup(
            op: nextOp, queue: queue, inGroup: inGroup, priority: random.below(5),
            limit: random.pick([1, 1, 2, 3, -1]), policy: random.pick([0, 0, 1, 2]),
            deadline: random.chance(20) ? 1 + random.below(4) : nil, body: body(&random, queues: queueCount),
            keys: groupKeys))
        ops.append((nextOp, queue, false))
        groups.append(nextOp)
        groupKeysByOp[nextOp] = groupKeys ?? []
        let group = nextOp
        nextOp += 1
        if random.chance(50) { steps.append(.open(op: group)) }
        for _ in 0..<random.below(3) {
          steps.append(
            .addChild(
              op: nextOp, group: group, priority: random.below(5), body: body(&random, queues: queueCount),
              keys: childKeys(&random, group: group)))
          ops.append((nextOp, queue, false))
          nextOp += 1
        }
      case 208..<224:
        // A child of one of the latest groups (refused once that group ended).
        guard !groups.isEmpty else { continue }
        let group = random.pick(Array(groups.suffix(3)))
        steps.append(
          .addChild(
            op: nextOp, group: group, priority: random.below(5), body: body(&random, queues: queueCount),
            keys: childKeys(&random, group: group)))
        ops.append((nextOp, 0, false))
        if random.chance(40) { steps.append(.open(op: nextOp)) }
        nextOp += 1
      case 224..<236:
        // Tags: mostly one of two, now and then both, none or one twice; on a group's queue too.
        let queue = anyQueue(&random)
        let tags: [Int] =
          random.chance(70) ? [random.chance(70) ? 0 : 1] : random.pick([[0, 1], [1, 0], [], [0, 0]])
        steps.append(
          .addTagged(
            op: nextOp, queue: queue, priority: random.below(5), tags: tags,
            body: body(&random, queues: queueCount)))
        if !tags.isEmpty { taggedAdds.append((queue, tags)) }
        ops.append((nextOp, queue, false))
        if random.chance(30) { steps.append(.open(op: nextOp)) }
        nextOp += 1
      case 236..<242:
        // Mostly the queue and a tag of one of the latest tagged adds, so that the call finds some.
        if !taggedAdds.isEmpty, random.chance(75) {
          let (queue, tags) = random.pick(Array(taggedAdds.suffix(3)))
          steps.append(.cancelTagged(queue: random.chance(25) ? nil : queue, tag: random.pick(tags)))
        } else {
          steps.append(
            .cancelTagged(queue: random.chance(25) ? nil : anyQueue(&random), tag: random.chance(70) ? 0 : 1))
        }
      case 242..<246:
        steps.append(.setCapacity(queue: liveQueue(&random), capacity: random.pick([nil, 1, 1, 2, 3])))
      case 246..<252:
        let queue = liveQueue(&random)
        steps.append(
          .addWaiting(
            op: nextOp, queue: queue, priority: random.below(5), body: body(&random, queues: queueCount)))
        ops.append((nextOp, queue, false))
        waitingAdds.append(nextOp)
        if random.chance(30) { steps.append(.open(op: nextOp)) }
        nextOp += 1
      case 252..<255:
        let queue = liveQueue(&random)
        steps.append(
          .tryAdd(
            op: nextOp, queue: queue, priority: random.below(5), body: body(&random, queues: queueCount)))
        ops.append((nextOp, queue, false))
        nextOp += 1
      case 255..<258:
        // Mostly one of the latest, the likeliest still waiting.
        guard !waitingAdds.isEmpty else { continue }
        steps.append(.cancelWaiting(op: random.pick(Array(waitingAdds.suffix(3)))))
      case 258..<264:
        // A task of some priority awaits an op (mostly a high one): it and what it waits for are raised.
        guard let op = anyOp(&random) else { continue }
        steps.append(.escalate(op: op, priority: random.chance(60) ? 2 : random.below(2)))
      case 264..<268:
        steps.append(.setEscalation(queue: liveQueue(&random), reorders: random.chance(70)))
      default:
        steps.append(.advance(seconds: 1 + random.below(2)))
      }
    }
    return Script(seed: seed, queueLimits: limits, steps: steps, limiters: limiters)
  }
}

/// Generates random scripts from a seed: every public action, weighted so that the interesting
/// interleavings (cancellation cascades, barriers, limit and suspension changes) come up often.
struct ScriptGenerator: Sendable {
  var minSteps = 12
  var maxSteps = 40

  func script(seed: UInt64) -> Script {
    var random = SplitMix64(seed: seed)
    let queueCount = 2 + random.below(2)
    let limits = (0..<queueCount).map { _ in random.pick([1, 1, 2, 3, -1]) }
    var steps: [Step] = []
    var ops: [(op: Int, queue: Int, barrier: Bool)] = []
    var released: Set<Int> = []
    var nextOp = 0
    let count = minSteps + random.below(maxSteps - minSteps + 1)

    func body(_ random: inout SplitMix64, queues: Int) -> BodySpec {
      BodySpec(
        auto: random.chance(35), checksCancellation: random.chance(40), throwing: random.chance(25),
        capturesQueue: random.chance(12) ? random.below(queues) : nil,
        handlerCapturesQueue: random.chance(5) ? random.below(queues) : nil)
    }
    func anyOp(_ random: inout SplitMix64) -> Int? { ops.isEmpty ? nil : random.pick(ops).op }
    func liveQueue(_ random: inout SplitMix64) -> Int {
      let live = (0..<queueCount).filter { !released.contains($0) }
      return live.isEmpty ? 0 : random.pick(live)
    }

    while steps.count < count {
      let roll = random.below(100)
      switch roll {
      case 0..<20:
        let queue = liveQueue(&random)
        steps.append(
          .add(op: nextOp, queue: queue, priority: random.below(5), body: body(&random, queues: queueCount)))
        ops.append((nextOp, queue, false))
        nextOp += 1
      case 20..<27:
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
      case 27..<34:
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
      case 34..<38:
        let queue = liveQueue(&random)
        var barrierBody = body(&random, queues: queueCount)
        barrierBody.capturesQueue = nil
        barrierBody.handlerCapturesQueue = nil
        steps.append(.barrier(op: nextOp, queue: queue, body: barrierBody))
        ops.append((nextOp, queue, true))
        nextOp += 1
      case 38..<51:
        guard let dependent = anyOp(&random), let dependency = anyOp(&random) else { continue }
        steps.append(
          .depend(Dependency(dependent: dependent, dependency: dependency, mustSucceed: random.chance(45))))
      case 51..<54:
        guard let dependent = anyOp(&random), let dependency = anyOp(&random) else { continue }
        steps.append(.undepend(dependent: dependent, dependency: dependency))
      case 54..<55:
        guard let op = anyOp(&random) else { continue }
        steps.append(.addAgain(op: op, queue: liveQueue(&random)))
      case 55..<63:
        guard let op = anyOp(&random) else { continue }
        steps.append(.cancel(op: op))
      case 63..<66:
        steps.append(.cancelAll(queue: liveQueue(&random)))
      case 66..<71:
        steps.append(.setLimit(queue: liveQueue(&random), limit: random.pick([-1, 1, 1, 2, 3])))
      case 71..<78:
        steps.append(.setSuspended(queue: liveQueue(&random), suspended: random.chance(55)))
      case 78..<82:
        guard let op = anyOp(&random) else { continue }
        steps.append(.setPriority(op: op, priority: random.below(5)))
      case 82..<95:
        guard let op = anyOp(&random) else { continue }
        steps.append(.open(op: op))
      case 95..<98:
        guard let op = anyOp(&random) else { continue }
        steps.append(.dropHandle(op: op))
      default:
        let queue = liveQueue(&random)
        steps.append(.releaseQueue(queue: queue))
        released.insert(queue)
      }
    }
    return Script(seed: seed, queueLimits: limits, steps: steps)
  }
}

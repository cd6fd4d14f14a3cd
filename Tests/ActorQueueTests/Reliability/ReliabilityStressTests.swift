import ActorQueue
import Synchronization
import TestSupport
import Testing

extension Searching {
  /// Volume: nothing lost (every op terminal, the counts add up), everything freed afterwards, peak
  /// resident memory reported. CI size by default; `ACTORQUEUE_STRESS=full` runs the full size.
  @Suite("Reliability: stress")
  struct ReliabilityStressTests {
    struct Failure: Error {}

    final class Counters: Sendable {
      let returned = Atomic<Int>(0)
      let threw = Atomic<Int>(0)
    }

    private static func report(_ what: String, _ clock: ContinuousClock.Instant) {
      let peak = peakResidentKiB().map { "\($0 / 1024) MiB" } ?? "unknown"
      print(
        "Reliability stress: \(what) in \(clock.duration(to: .now)), peak resident memory (VmHWM) \(peak)")
    }

    private static func tally(_ ops: [AnyQueueOperation]) -> [OperationState: Int] {
      var states: [OperationState: Int] = [:]
      for op in ops { states[op.state, default: 0] += 1 }
      return states
    }

    @Test("One queue: ops with random cancels and limit changes all end, counted, and are freed")
    func oneQueueRandomCancelsAndLimits() async {
      let total = fullStress ? 1_000_000 : 50_000
      let start = ContinuousClock.now
      var random = SplitMix64(seed: 0x5EED)
      let counters = Counters()
      var weakOps: [Weak<AnyQueueOperation>] = []
      weakOps.reserveCapacity(total)
      weak var weakQueue: ActorQueue?
      do {
        let queue = ActorQueue(name: "stress", maxConcurrentOperationCount: 4)
        weakQueue = queue
        var ops: [AnyQueueOperation] = []
        ops.reserveCapacity(total)
        for index in 0..<total {
          let throwing = index % 97 == 0
          let op = queue.addOperation(priority: OperationPriority.allCases[random.below(5)]) {
            () throws -> Int in
            if throwing {
              counters.threw.add(1, ordering: .relaxed)
              throw Failure()
            }
            counters.returned.add(1, ordering: .relaxed)
            return index
          }
          ops.append(op)
          weakOps.append(Weak(object: op))
          if random.chance(5) { ops[random.below(ops.count)].cancel() }
          if random.chance(1) { queue.maxConcurrentOperationCount = random.pick([1, 2, 4, 8, -1]) }
        }
        await queue.waitUntilAllOperationsAreFinished()
        let states = Self.tally(ops)
        let allEnded = ops.allSatisfy { $0.isFinished }
        #expect(allEnded, "not every op ended: \(states)")
        #expect(states.values.reduce(0, +) == total)
        #expect(states[.finished, default: 0] == counters.returned.load(ordering: .relaxed), "\(states)")
        #expect(states[.failed, default: 0] <= counters.threw.load(ordering: .relaxed), "\(states)")
        #expect(queue.operationCount == 0)
      }
      #expect(await eventuallyFreed { weakQueue == nil && weakOps.allSatisfy { $0.object == nil } })
      Self.report("\(total) ops through one queue", start)
    }

    @Test("Many queues with cross-queue dependencies: all end as their dependencies require, all freed")
    func manyQueuesCrossDependencies() async {
      let queueCount = fullStress ? 50 : 10
      let perQueue = fullStress ? 10_000 : 2_000
      let start = ContinuousClock.now
      var random = SplitMix64(seed: 0xC055)
      let counters = Counters()
      var weakOps: [Weak<AnyQueueOperation>] = []
      var weakQueues: [Weak<ActorQueue>] = []
      do {
        let queues = (0..<queueCount).map {
          ActorQueue(name: "q\($0)", maxConcurrentOperationCount: random.pick([1, 2, 4, -1]))
        }
        weakQueues = queues.map { Weak(object: $0) }
        for queue in queues { queue.isSuspended = true }  // build the graph first, then let it run
        var ops: [QueueOperation<Int>] = []
        var requires: [(dependent: Int, dependency: Int)] = []
        ops.reserveCapacity(queueCount * perQueue)
        for index in 0..<(queueCount * perQueue) {
          let throwing = random.chance(1)
          let op = QueueOperation<Int>(priority: OperationPriority.allCases[random.below(5)]) {
            if throwing {
              counters.threw.add(1, ordering: .relaxed)
              throw Failure()
            }
            counters.returned.add(1, ordering: .relaxed)
            return index
          }
          if !ops.isEmpty && random.chance(50) {
            let dependency = random.below(ops.count)
            let mustSucceed = random.chance(30)
            try! op.addDependency(ops[dependency], requiring: mustSucceed ? .success : .completion)
            if mustSucceed { requires.append((index, dependency)) }
          }
          try! queues[random.below(queueCount)].addOperation(op)
          ops.append(op)
          weakOps.append(Weak(object: op))
        }
        for index in ops.indices where random.chance(2) { ops[index].cancel() }
        for queue in queues { queue.isSuspended = false }
        for queue in queues { await queue.waitUntilAllOperationsAreFinished() }
        let states = Self.tally(ops)
        let allEnded = ops.allSatisfy { $0.isFinished }
        #expect(allEnded, "not every op ended: \(states)")
        #expect(states[.finished, default: 0] == counters.returned.load(ordering: .relaxed), "\(states)")
        #expect(states[.failed, default: 0] >= counters.threw.load(ordering: .relaxed), "\(states)")
        for (dependent, dependency) in requires where ops[dependency].state != .finished {
          #expect(ops[dependent].state != .finished, "op \(dependent) finished though \(dependency) did not")
        }
        #expect(queues.allSatisfy { $0.operationCount == 0 })
      }
      #expect(
        await eventuallyFreed {
          weakQueues.allSatisfy { $0.object == nil } && weakOps.allSatisfy { $0.object == nil }
        })
      Self.report("\(queueCount) queues × \(perQueue) ops with cross-queue dependencies", start)
    }

    @Test("A long chain runs in order, ends whole, and is freed")
    func longChain() async {
      let length = fullStress ? 200_000 : 20_000
      let start = ContinuousClock.now
      let next = Atomic<Int>(0)
      let outOfOrder = Atomic<Int>(0)
      weak var weakQueue: ActorQueue?
      weak var weakFirst: AnyQueueOperation?
      weak var weakLast: AnyQueueOperation?
      do {
        let queue = ActorQueue(name: "chain", maxConcurrentOperationCount: 4)
        weakQueue = queue
        queue.isSuspended = true
        var last: QueueOperation<Void>?
        for index in 0..<length {
          let op = QueueOperation<Void> {
            if next.add(1, ordering: .relaxed).oldValue != index { outOfOrder.add(1, ordering: .relaxed) }
          }
          if let last { try! op.addDependency(last) }
          try! queue.addOperation(op)
          if index == 0 { weakFirst = op }
          last = op
        }
        weakLast = last
        queue.isSuspended = false
        await last!.waitUntilFinished()
        #expect(last!.state == .finished)
        #expect(next.load(ordering: .relaxed) == length)
        #expect(outOfOrder.load(ordering: .relaxed) == 0)
      }
      #expect(await eventuallyFreed { weakQueue == nil && weakFirst == nil && weakLast == nil })
      Self.report("a \(length)-step chain", start)
    }
  }
}

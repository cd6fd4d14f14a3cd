import Foundation
import Testing

@testable import ActorQueue

/// The random testers' time steps on hand-written scripts: each rule of deadlines and timeouts
/// (DeadlineTests) as the reference model decides it, then the same script on the scheduler
/// value and on real queues (in a child process), which must agree with the model.
@Suite("Reliability: time in the model-based scripts")
struct TimeScriptTests {
  private static let returns = BodySpec(auto: false, checksCancellation: false, throwing: false)
  private static let checks = BodySpec(auto: false, checksCancellation: true, throwing: false)
  private static let throwing = BodySpec(auto: false, checksCancellation: false, throwing: true)
  private static let paused = BodySpec(auto: false, checkpoints: 1, checksCancellation: true, throwing: false)

  /// A hand-written script, and the state the model must end each op in.
  struct Case: Sendable, CustomTestStringConvertible {
    var name: String
    var queueLimits: [Int]
    var steps: [Step]
    var ends: [Int: ModelState]
    /// Registrations the model must make (`mayTimeOut` ops, say).
    var mayTimeOut: Set<Int> = []
    var seed: UInt64 = 4

    var testDescription: String { name }
    var script: Script { Script(seed: seed, queueLimits: queueLimits, steps: steps) }
  }

  static let cases: [Case] = [
    Case(
      name: "executing past its timeout: a value finishes it, a throw fails it",
      queueLimits: [-1],
      steps: [
        .addTimed(op: 0, queue: 0, priority: 2, deadline: nil, timeout: 1, body: returns),
        .addTimed(op: 1, queue: 0, priority: 2, deadline: nil, timeout: 1, body: checks),
        .addTimed(op: 2, queue: 0, priority: 2, deadline: 3, timeout: 2, body: throwing),
        .advance(seconds: 1),
        .open(op: 0), .open(op: 1),
        .advance(seconds: 2),
        .open(op: 2),
      ],
      ends: [0: .finished, 1: .failed, 2: .failed]),
    Case(
      name: "a waiting op ends .failed at its deadline: held, suspended, already past",
      queueLimits: [1, 1],
      steps: [
        .add(op: 0, queue: 0, priority: 2, body: returns),
        .addTimed(op: 1, queue: 0, priority: 2, deadline: 1, timeout: nil, body: returns),
        .pause(op: 1),
        .setSuspended(queue: 1, suspended: true),
        .addTimed(op: 2, queue: 1, priority: 2, deadline: 2, timeout: 1, body: returns),
        .addTimed(op: 3, queue: 1, priority: 2, deadline: 0, timeout: nil, body: returns),
        .advance(seconds: 2),
        .setSuspended(queue: 1, suspended: false),
        .open(op: 0),
      ],
      ends: [0: .finished, 1: .failed, 2: .failed, 3: .failed]),
    Case(
      name: "dependents: .success ones fail, .completion ones run",
      queueLimits: [1],
      steps: [
        .add(op: 0, queue: 0, priority: 2, body: returns),
        .addTimed(op: 1, queue: 0, priority: 2, deadline: 1, timeout: nil, body: returns),
        .add(op: 2, queue: 0, priority: 2, body: returns),
        .add(op: 3, queue: 0, priority: 2, body: returns),
        .depend(Dependency(dependent: 2, dependency: 1, mustSucceed: true)),
        .depend(Dependency(dependent: 3, dependency: 1, mustSucceed: false)),
        .advance(seconds: 1),
        .open(op: 0), .open(op: 3),
      ],
      ends: [0: .finished, 1: .failed, 2: .failed, 3: .finished]),
    Case(
      name: "cancel() first: the timeout is ignored; the timeout first: cancel() changes nothing",
      queueLimits: [-1],
      steps: [
        .addTimed(op: 0, queue: 0, priority: 2, deadline: nil, timeout: 1, body: checks),
        .addTimed(op: 1, queue: 0, priority: 2, deadline: 1, timeout: nil, body: checks),
        .cancel(op: 0),
        .advance(seconds: 1),
        .cancel(op: 1),
        .open(op: 0), .open(op: 1),
      ],
      ends: [0: .cancelled, 1: .failed]),
    Case(
      name: "paused in its body (held, or resumed and competing): its checkpoint throws, it fails",
      queueLimits: [1],
      steps: [
        .addTimed(op: 0, queue: 0, priority: 2, deadline: 2, timeout: nil, body: paused),
        .pause(op: 0), .open(op: 0),
        .add(op: 1, queue: 0, priority: 2, body: returns),
        .addTimed(op: 2, queue: 0, priority: 2, deadline: nil, timeout: 3, body: paused),
        .open(op: 1),
        .pause(op: 2), .open(op: 2),
        .add(op: 3, queue: 0, priority: 2, body: returns),
        .resume(op: 2),
        .advance(seconds: 2),
        .resume(op: 0),
        .advance(seconds: 1),
        .open(op: 3),
      ],
      ends: [0: .failed, 1: .finished, 2: .failed, 3: .finished]),
    Case(
      name: "a timeout is armed at the first start, not again when a paused body gets a slot",
      queueLimits: [1],
      steps: [
        .addTimed(op: 0, queue: 0, priority: 2, deadline: nil, timeout: 2, body: paused),
        .pause(op: 0), .open(op: 0),
        .advance(seconds: 1),
        .resume(op: 0),
        .advance(seconds: 1),
        .open(op: 0),
      ],
      ends: [0: .failed]),
    Case(
      name: "a dependency's deadline ends a dependent whose own deadline is due in the same advance",
      queueLimits: [1],
      steps: [
        .setSuspended(queue: 0, suspended: true),
        .addTimed(op: 0, queue: 0, priority: 2, deadline: 1, timeout: nil, body: returns),
        .addTimed(op: 1, queue: 0, priority: 2, deadline: 2, timeout: nil, body: returns),
        .addTimed(op: 2, queue: 0, priority: 2, deadline: 1, timeout: nil, body: returns),
        .depend(Dependency(dependent: 1, dependency: 0, mustSucceed: true)),
        .depend(Dependency(dependent: 2, dependency: 0, mustSucceed: true)),
        .advance(seconds: 2),
      ],
      ends: [0: .failed, 1: .failed, 2: .failed], mayTimeOut: [1, 2]),
    Case(
      name: "the same for a retrying dependent between attempts: its timeout's error says it had started",
      queueLimits: [1, 1],
      steps: [
        .addRetrying(
          op: 0, queue: 0, priority: 2, retry: RetrySpec(attempts: 4, backoff: 1, failures: 1, deadline: 3),
          body: returns),
        .open(op: 0),
        .add(op: 1, queue: 1, priority: 2, body: returns),
        .addTimed(op: 2, queue: 1, priority: 2, deadline: 2, timeout: nil, body: returns),
        .depend(Dependency(dependent: 0, dependency: 2, mustSucceed: true)),
        .advance(seconds: 1),
        .advance(seconds: 2),
        .open(op: 1),
      ],
      ends: [0: .failed, 1: .finished, 2: .failed], mayTimeOut: [0]),
    Case(
      name:
        "retry: a backoff frees the slot; the retry keeps its order; attempts run out with the last error",
      queueLimits: [1],
      steps: [
        .addRetrying(
          op: 0, queue: 0, priority: 2, retry: RetrySpec(attempts: 3, backoff: 1, failures: 1), body: returns),
        .add(op: 1, queue: 0, priority: 2, body: returns),
        .add(op: 2, queue: 0, priority: 2, body: returns),
        .open(op: 0),
        .advance(seconds: 1),
        .open(op: 1), .open(op: 0), .open(op: 2),
        .addRetrying(
          op: 3, queue: 0, priority: 2, retry: RetrySpec(attempts: 2, backoff: 0, failures: 2), body: returns),
        .open(op: 3), .open(op: 3),
      ],
      ends: [0: .finished, 1: .finished, 2: .finished, 3: .failed]),
    Case(
      name:
        "retry: cancel and pause in a backoff; a deadline stops a retry it would outlast, or ends one held",
      queueLimits: [-1],
      steps: [
        .addRetrying(
          op: 0, queue: 0, priority: 2, retry: RetrySpec(attempts: 3, backoff: 2, failures: 3), body: returns),
        .addRetrying(
          op: 1, queue: 0, priority: 2, retry: RetrySpec(attempts: 3, backoff: 1, failures: 1), body: returns),
        .addRetrying(
          op: 2, queue: 0, priority: 2, retry: RetrySpec(attempts: 3, backoff: 3, failures: 3, deadline: 2),
          body: returns),
        .addRetrying(
          op: 3, queue: 0, priority: 2, retry: RetrySpec(attempts: 3, backoff: 1, failures: 3, deadline: 3),
          body: returns),
        .open(op: 0), .open(op: 1), .open(op: 2), .open(op: 3),
        .cancel(op: 0), .pause(op: 1), .pause(op: 3),
        .advance(seconds: 3),
        .resume(op: 1), .open(op: 1),
      ],
      ends: [0: .cancelled, 1: .finished, 2: .failed, 3: .failed]),
    Case(
      name: "retry: an attempt past its timeout runs again on a fresh task; one past its deadline does not",
      queueLimits: [-1],
      steps: [
        .addRetrying(
          op: 0, queue: 0, priority: 2, retry: RetrySpec(attempts: 2, backoff: 0, failures: 0, timeout: 1),
          body: checks),
        .addRetrying(
          op: 1, queue: 0, priority: 2, retry: RetrySpec(attempts: 2, backoff: 0, failures: 0, deadline: 1),
          body: checks),
        .advance(seconds: 1),
        .open(op: 0), .open(op: 1),
        .open(op: 0),
      ],
      ends: [0: .finished, 1: .failed]),
  ]

  /// Runs `script` on the model alone, as the executors drive it, and returns it at the end.
  private func modelRun(_ script: Script) -> ReferenceModel {
    var model = ReferenceModel(queueLimits: script.queueLimits)
    var index = 0
    for step in script.steps {
      _ = model.apply(step, index: index)
      while model.nextMove() != nil {}
      index += 1
    }
    for _ in 0..<16 {
      let steps = model.drainSteps()
      if steps.isEmpty { break }
      for step in steps {
        _ = model.apply(step, index: index)
        while model.nextMove() != nil {}
        index += 1
      }
    }
    return model
  }

  @Test("the model ends each op as the contract says", arguments: cases)
  func modelFollowsTheContract(_ test: Case) {
    let model = modelRun(test.script)
    for (op, expected) in test.ends {
      #expect(model.state(of: op) == expected, "op\(op)")
    }
    var mayTimeOut = Set<Int>()
    for entry in model.journal {
      if case .mayTimeOut(let op, _) = entry { mayTimeOut.insert(op) }
    }
    #expect(mayTimeOut == test.mayTimeOut)
    #expect(model.armedTimerCount == 0)
  }

  @Test("the scheduler value agrees, whatever the slice limit", arguments: cases)
  func valueAgrees(_ test: Case) async {
    // Seeds 4 (default slices), 3 (1 a slice), 5 (3 a slice).
    for seed: UInt64 in [4, 3, 5] {
      var script = test.script
      script.seed = seed
      let failure = await ValueExecutor().run(script)
      #expect(failure == nil, "seed \(seed): \(failure.map { "\($0)" } ?? "")")
    }
  }

  @Test("real queues agree (in a child process)")
  func realQueuesAgree() async {
    let scripts = Self.cases.flatMap { test in
      [4, 3].map { (seed: UInt64) in
        var script = test.script
        script.seed = seed
        return script
      }
    }
    let outcome = await Searching.ReliabilityRandomScriptTests.runInChild(scripts)
    #expect(outcome.status == .exitCode(ChildExit.passed), "\(outcome.log)")
  }

  /// A manual clock's advance does a timer's ends before its next timer fires: a dependent
  /// that `a`'s deadline fails ends with `a`'s failure, not by its own deadline of the same
  /// instant, whatever the slice limit. (Before, with 1 a slice, the dependents' ends were left
  /// to later slices and their own deadlines acted first.)
  @Test("a timer's ends are done before the next timer fires, whatever the slice limit")
  func cascadeInSlices() {
    for sliceLimit in [1, Scheduler.defaultSliceLimit] {
      var harness = SchedulerHarness()
      harness.scheduler.sliceLimit = sliceLimit
      harness.registerManualClock(7)
      let queue = harness.makeQueue(limit: 1, clock: 7)
      harness.event { s, now, e in s.setSuspended(true, of: queue, now: now, &e) }
      harness.add("a", traits: [.deadline(in: .seconds(1))], to: queue)
      harness.add("b", traits: [.deadline(in: .seconds(1))], to: queue)
      harness.add("c", traits: [.deadline(in: .seconds(1))], to: queue)
      for dependent in ["b", "c"] {
        #expect(throws: Never.self) {
          try harness.depend(harness[dependent], on: harness["a"], requiring: .success)
        }
      }
      harness.advance(7, by: .seconds(1))
      let leftToCaller = harness.continueBulk()
      #expect(!leftToCaller, "slice limit \(sliceLimit): the advance left no ends to its caller")
      let errors = ["b", "c"].map { name -> (any Error)? in
        if case .failure(let error) = harness.scheduler.outcome(of: harness.index(name))?.value {
          error
        } else {
          nil
        }
      }
      #expect(["a", "b", "c"].allSatisfy { harness.state($0) == .failed })
      #expect(errors.allSatisfy { $0 is DependencyFailedError }, "slice limit \(sliceLimit): \(errors)")
    }
  }

  @Test("scripts without time steps still decode; time steps round-trip")
  func coding() throws {
    let old = #"{"seed":1,"queueLimits":[1],"steps":[{"cancel":{"op":0}},{"releaseQueue":{"queue":0}}]}"#
    let decoded = try JSONDecoder().decode(Script.self, from: Data(old.utf8))
    #expect(decoded.steps == [.cancel(op: 0), .releaseQueue(queue: 0)])
    let script = Script(seed: 2, queueLimits: [1], steps: Self.cases[0].steps + [.advance(seconds: 2)])
    let again = try JSONDecoder().decode(Script.self, from: JSONEncoder().encode(script))
    #expect(again.steps == script.steps)
  }
}

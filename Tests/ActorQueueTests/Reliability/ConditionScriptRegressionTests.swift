import Foundation
import Testing

@testable import ActorQueue

/// Scripts the real-queue tester found against readiness conditions, kept as they were shrunk.
@Suite("Reliability: condition scripts the random tester found")
struct ConditionScriptRegressionTests {
  /// op0's condition produced op1, its dependency; the script removed that edge and dropped its
  /// handle of op1. The model then took op1 for unreachable, though op0's condition (the script's
  /// object, which op0 keeps until it ends) still holds it: the freeing check failed on a correct
  /// queue. The model now keeps an unfinished op's produced op alive.
  @Test("An unfinished op's condition keeps the op it produced alive, edge or not")
  func conditionKeepsItsProducedOp() async throws {
    let json = Self.conditionKeepsItsProducedOpScript
    let script = try JSONDecoder().decode(Script.self, from: Data(json.utf8))
    // Before the fix: "after give op1 every permit: still alive: … unreachable ops ["op1"]".
    let failure = await ValueExecutor().run(script)
    #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
  }

  /// op0's condition produced op1; op2 took both as inputs; op0 was cancelled while it waited.
  /// The scheduler read op1's dependents while op2's end was still in op0's work list and kept
  /// op1, while the model, which had ended op2 first, cancelled it: the run waited for a start
  /// the model made. Both now decide before the ended op's dependents are released: op2 still
  /// waits for op1 then, so op1 runs on.
  @Test("A produced op that another dependent of its operation waits for is decided before that one ends")
  func producedOpWhoseOtherDependentEndsWithIt() async throws {
    let json = Self.producedOpWhoseOtherDependentEndsWithItScript
    let script = try JSONDecoder().decode(Script.self, from: Data(json.utf8))
    let failure = await ValueExecutor().run(script)
    #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
  }

  /// op3's condition produced op4; op7 took op5 and op4 as inputs; one advance passed op5's
  /// deadline (1 s) and op3's (2 s). With a slice limit of 1, op7's end (op5 failed) was left
  /// to a later slice when op3's deadline fired, so the scheduler found op4 still waited for and
  /// kept it, while the model, which had ended op7 first, cancelled it: the run waited for a
  /// body the model had moved. A manual clock's timer's ends are now done before its next timer
  /// fires, whatever the slice limit.
  @Test("An advance ends what one deadline fails before the next deadline fires, whatever the slices")
  func timerEndsBeforeTheNextTimer() async throws {
    let json = Self.timerEndsBeforeTheNextTimerScript
    let script = try JSONDecoder().decode(Script.self, from: Data(json.utf8))
    #expect(script.sliceLimit == 1)
    let failure = await ValueExecutor().run(script)
    #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
  }

  /// The scripts above on real queues, where they were found: in one child process, as a
  /// script sets the process's slice limit (down to 1), which would change what every other
  /// test running beside it does.
  @Test("the scripts above agree with the model on real queues (one child process)")
  func onRealQueues() async throws {
    let scripts = try [
      Self.conditionKeepsItsProducedOpScript, Self.producedOpWhoseOtherDependentEndsWithItScript,
      Self.timerEndsBeforeTheNextTimerScript,
    ].map { try JSONDecoder().decode(Script.self, from: Data($0.utf8)) }
    let outcome = await Searching.ReliabilityRandomScriptTests.runInChild(scripts)
    #expect(outcome.status == .exitCode(ChildExit.passed), "\(outcome.log)")
  }

  static let conditionKeepsItsProducedOpScript = """
    {"seed": 13410367300346353330, "queueLimits": [-1, 3, 2], "limiters": [{"capacity":3,"seconds":1,"window":true},{"capacity":1,"seconds":2,"window":false}], "steps": [
      {"addConditional":{"answers":[4,5,4],"body":{"auto":false,"checkpoints":0,"checksCancellation":false,"pauseHandlers":false,"throwing":false},"keys":[],"op":0,"priority":1,"produced":{"body":{"auto":false,"checkpoints":0,"checksCancellation":false,"pauseHandlers":false,"throwing":true},"op":1},"queue":2}},
      {"undepend":{"dependency":1,"dependent":0}},
      {"dropHandle":{"op":1}}
    ]}
    """

  static let producedOpWhoseOtherDependentEndsWithItScript = """
    {"limiters":[{"capacity":2,"seconds":1,"window":false},{"capacity":3,"seconds":2,"window":false}],"queueLimits":[1,-1],"seed":5578545814830681892,"steps":[
      {"addConditional":{"answers":[],"body":{"auto":true,"checkpoints":0,"checksCancellation":false,"pauseHandlers":false,"throwing":true},"keys":[],"op":0,"priority":4,"produced":{"body":{"auto":false,"checkpoints":0,"checksCancellation":false,"pauseHandlers":false,"throwing":false},"op":1},"queue":0}},
      {"setSuspended":{"queue":0,"suspended":false}},
      {"addAfter":{"body":{"auto":false,"checkpoints":0,"checksCancellation":true,"pauseHandlers":false,"throwing":true},"inputs":[0,1],"op":2,"priority":1,"queue":1}},
      {"setLimitPausingExcess":{"limit":2,"queue":0}},
      {"setLimiters":{"limiters":[0],"queue":0}},
      {"cancel":{"op":0}},
      {"setLimit":{"limit":3,"queue":0}},
      {"addCoalesced":{"body":{"auto":true,"checkpoints":2,"checksCancellation":true,"pauseHandlers":true,"throwing":true},"key":1,"op":3,"priority":0,"queue":0,"work":4}}
    ]}
    """

  static let timerEndsBeforeTheNextTimerScript = """
    {"limiters":[{"capacity":2,"seconds":1,"window":false},{"capacity":2,"seconds":1,"window":false}],"queueLimits":[1,2],"seed":113360553054866007,"steps":[
      {"addCosted":{"body":{"auto":false,"capturesQueue":0,"checkpoints":1,"checksCancellation":false,"pauseHandlers":true,"throwing":false},"cost":0,"op":1,"priority":1,"queue":0}},
      {"addConditional":{"answers":[4,2],"body":{"auto":true,"capturesQueue":1,"checkpoints":0,"checksCancellation":true,"pauseHandlers":false,"throwing":false},"deadline":2,"keys":[0],"op":3,"priority":0,"produced":{"body":{"auto":false,"capturesQueue":1,"checkpoints":2,"checksCancellation":false,"pauseHandlers":true,"throwing":false},"op":4},"queue":1}},
      {"addTimed":{"body":{"auto":false,"checkpoints":0,"checksCancellation":false,"pauseHandlers":false,"throwing":true},"deadline":1,"op":5,"priority":0,"queue":0,"timeout":3}},
      {"addAfter":{"body":{"auto":true,"checkpoints":0,"checksCancellation":false,"pauseHandlers":false,"throwing":false},"inputs":[5,4],"op":7,"priority":3,"queue":1}},
      {"advance":{"seconds":2}}
    ]}
    """
}

import Foundation
import Testing

@testable import ActorQueue

/// Scripts the real-queue tester found against groups, kept as they were shrunk.
@Suite("Reliability: group scripts the random tester found")
struct GroupScriptRegressionTests {
  /// A child of a group on q1 was made to wait for op0, executing on q1 while q1 was unlimited;
  /// lowering q1's limit to 1 with the excess paused then paused op0 at a checkpoint, and the
  /// group, holding q1's one slot until its children end, left op0 nothing to resume on (the
  /// user's deadlock the Performance article describes). The model skipped such dependencies
  /// only on operations not yet started; it now skips them on any that may need a slot again,
  /// one with a checkpoint left among them.
  @Test("A group's child never waits for an op of the group's queue that may need a slot again")
  func childWaitingForPausableOp() async throws {
    let json = """
      {"seed": 997377862257883286, "queueLimits": [1, 1], "limiters": [{"capacity":3,"seconds":2,"window":false},{"capacity":1,"seconds":1,"window":true}], "steps": [
        {"batch":{"dependencies":[],"ops":[{"body":{"auto":false,"capturesQueue":0,"checkpoints":2,"checksCancellation":false,"pauseHandlers":false,"throwing":false},"op":0,"priority":2},{"body":{"auto":false,"checkpoints":1,"checksCancellation":true,"pauseHandlers":true,"throwing":false},"op":1,"priority":4}],"queue":1}},
        {"setLimit":{"limit":-1,"queue":1}},
        {"addGroup":{"body":{"auto":false,"checkpoints":2,"checksCancellation":false,"handlerCapturesQueue":0,"pauseHandlers":false,"throwing":false},"limit":1,"op":3,"policy":1,"priority":3,"queue":1}},
        {"addChild":{"body":{"auto":false,"checkpoints":2,"checksCancellation":true,"handlerCapturesQueue":0,"pauseHandlers":true,"throwing":false},"group":3,"op":4,"priority":1}},
        {"addChild":{"body":{"auto":false,"checkpoints":2,"checksCancellation":false,"pauseHandlers":false,"throwing":true},"group":3,"op":5,"priority":4}},
        {"depend":{"_0":{"dependency":0,"dependent":5,"mustSucceed":false}}},
        {"setLimitPausingExcess":{"limit":1,"queue":1}}
      ]}
      """
    let script = try JSONDecoder().decode(Script.self, from: Data(json.utf8))
    var model = ReferenceModel(queueLimits: script.queueLimits, limiters: script.limiters ?? [])
    let expectations = script.steps.enumerated().map { model.apply($0.element, index: $0.offset) }
    #expect(expectations[5] == .skip, "op5.addDependency(op0) would strand the group")
    let failure = await ValueExecutor().run(script)
    #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
  }
}

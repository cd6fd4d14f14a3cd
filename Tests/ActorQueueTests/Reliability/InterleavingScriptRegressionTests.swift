import Foundation
import Testing

@testable import ActorQueue

/// Scripts the value tester found against its own interleaving of steps, kept as they were shrunk.
@Suite("Reliability: interleaving scripts the random tester found")
struct InterleavingScriptRegressionTests {
  /// q0's `cancelAllOperations()` went in slices (limit 1); the next step, an add to q1, ran
  /// between them because no dependency connected the queues. But they shared a rate limiter,
  /// whose starts the scheduler arbitrates once the call has ended: the new op, of higher
  /// priority, took the permit op13 had waited for, where the model, which applies the call
  /// whole and then the step, had started op13. The scheduler was right; the tester no longer
  /// interleaves steps on queues whose starts are arbitrated together (keys, rate limiters).
  @Test("No step runs between a call's slices on a queue that shares arbitration with the call's")
  func addBetweenSlicesOnALimitedQueue() async throws {
    let json = """
      {"seed": 11107539290763456651, "queueLimits": [-1, 3], "limiters": [{"capacity":2,"window":false,"seconds":2},{"capacity":2,"window":true,"seconds":2}], "steps": [
        {"setLimiters":{"limiters":[1],"queue":1}},
        {"depend":{"_0":{"mustSucceed":false,"dependent":2,"dependency":2}}},
        {"setLimiters":{"limiters":[0,1],"queue":0}},
        {"addConditional":{"keys":[],"body":{"pauseHandlers":true,"throwing":false,"auto":false,"checkpoints":1,"checksCancellation":true},"priority":3,"queue":0,"op":3,"answers":[5]}},
        {"open":{"op":3}},
        {"addCosted":{"body":{"pauseHandlers":false,"checksCancellation":true,"auto":false,"throwing":false,"checkpoints":1},"cost":2,"priority":3,"queue":0,"op":4}},
        {"addExclusive":{"shared":true,"body":{"throwing":false,"auto":true,"checkpoints":1,"pauseHandlers":false,"checksCancellation":true},"priority":3,"queue":1,"op":13,"keys":[0]}},
        {"cancelAll":{"queue":0}},
        {"addTagged":{"body":{"auto":false,"pauseHandlers":false,"checksCancellation":false,"checkpoints":2,"throwing":false},"priority":4,"queue":1,"op":14,"tags":[0]}}
      ]}
      """
    let script = try JSONDecoder().decode(Script.self, from: Data(json.utf8))
    let failure = await ValueExecutor().run(script)
    #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
  }
}

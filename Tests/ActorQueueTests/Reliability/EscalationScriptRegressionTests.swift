import Foundation
import Testing

@testable import ActorQueue

/// Scripts the value tester found against priority escalation, kept as they were shrunk.
@Suite("Reliability: escalation scripts the random tester found")
struct EscalationScriptRegressionTests {
  /// q1 has a limiter in penalty and the reordering policy; escalating op3 (waiting, its head)
  /// raised it to .veryHigh with the scheduler's bare priority setter, which decides no start and
  /// arms no permit timer: q1's timer was left unarmed. Escalation now ends, as a priority change
  /// does, by settling what it touched.
  @Test("An escalation that moves a queue's head ahead re-arms its permit timer")
  func reorderingEscalationSettles() async throws {
    let json = """
      {"seed":4013598638420048965,"queueLimits":[-1,3,3],"steps":[{"setLimiters":{"limiters":[1],"queue":1}},{"penalize":{"seconds":2,"limiter":1}},{"setEscalation":{"reorders":true,"queue":1}},{"batch":{"ops":[{"priority":0,"body":{"auto":false,"pauseHandlers":false,"checkpoints":1,"checksCancellation":false,"throwing":false},"op":2},{"priority":0,"body":{"checkpoints":2,"pauseHandlers":true,"throwing":true,"checksCancellation":false,"auto":false},"op":3}],"dependencies":[{"mustSucceed":false,"dependent":2,"dependency":3}],"queue":1}},{"setLimiters":{"limiters":[0,1],"queue":2}},{"addTimed":{"queue":2,"deadline":2,"body":{"checkpoints":0,"pauseHandlers":false,"checksCancellation":true,"throwing":true,"auto":false},"timeout":1,"priority":2,"op":4}},{"escalate":{"priority":2,"op":3}}],"limiters":[{"capacity":1,"window":true,"seconds":1},{"capacity":2,"window":false,"seconds":1}]}
      """
    let script = try JSONDecoder().decode(Script.self, from: Data(json.utf8))
    // Before the fix: "after op3.escalate(to: TaskPriority.high): q1's permit timer is at none ns".
    let failure = await ValueExecutor().run(script)
    #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
  }
}

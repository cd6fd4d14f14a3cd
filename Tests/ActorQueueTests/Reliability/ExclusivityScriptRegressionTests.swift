import Foundation
import Testing

@testable import ActorQueue

/// Scripts the value tester found against exclusivity, kept as they were shrunk.
@Suite("Reliability: exclusivity scripts the random tester found")
struct ExclusivityScriptRegressionTests {
  /// Aging 1 (this seed's): op13 and op11 each wanted k1 and k2 of the shared domain; op13 had
  /// reserved k1 when op11, passed over, reserved k2, the one left, and each then waited for the
  /// other's reservation with every key free: op11 never started. Reservations are all or none
  /// now, and PhaseCheck refuses a partial one.
  @Test("Two waiters never reserve parts of each other's keys (a reservation is all or none)")
  func partialReservationsDeadlocked() async throws {
    let json = """
      {"seed": 12513420791817271341, "queueLimits": [1, 3], "steps": [
        {"addExclusive":{"queue":0,"shared":true,"op":3,"priority":2,"keys":[2,1],"body":{"throwing":false,"pauseHandlers":false,"checkpoints":0,"checksCancellation":true,"auto":false}}},
        {"addExclusive":{"queue":0,"shared":false,"op":4,"priority":3,"keys":[2],"body":{"checksCancellation":false,"throwing":false,"auto":false,"pauseHandlers":true,"checkpoints":2}}},
        {"addExclusive":{"queue":1,"shared":true,"op":5,"priority":2,"keys":[0],"body":{"pauseHandlers":false,"auto":false,"throwing":true,"checkpoints":2,"checksCancellation":true}}},
        {"addExclusive":{"queue":0,"shared":false,"op":6,"priority":0,"keys":[0],"body":{"pauseHandlers":false,"auto":false,"checksCancellation":true,"checkpoints":0,"throwing":false}}},
        {"addExclusive":{"queue":0,"shared":true,"op":11,"priority":2,"keys":[1,2],"body":{"checkpoints":2,"pauseHandlers":false,"throwing":true,"checksCancellation":false,"auto":true}}},
        {"addExclusive":{"queue":1,"shared":true,"op":13,"priority":0,"keys":[2,1],"body":{"auto":true,"checkpoints":1,"pauseHandlers":false,"throwing":false,"checksCancellation":false}}},
        {"addExclusive":{"queue":1,"shared":true,"op":14,"priority":0,"keys":[1,1],"body":{"pauseHandlers":false,"checkpoints":2,"throwing":false,"auto":false,"checksCancellation":false}}},
        {"addExclusive":{"queue":1,"shared":true,"op":20,"priority":1,"keys":[2,0],"body":{"throwing":false,"auto":false,"checksCancellation":false,"pauseHandlers":false,"checkpoints":1}}}
      ]}
      """
    let script = try JSONDecoder().decode(Script.self, from: Data(json.utf8))
    let failure = await ValueExecutor().run(script)
    #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
  }

  /// Run 9103, script 66928: op4, paused in its body on pauseAllOperations(), kept k0 and k2;
  /// op9, passed over while it waited for k0, reserved it. Resumed and waiting for its slot, op4's
  /// wait report named op9 as blocking k0, which op4 holds; a reservation waits for the holder and
  /// blocks nothing it already holds. It lists `slot` alone now.
  @Test("A resumed body that holds its keys is not reported blocked by a reservation of one of them")
  func reservedKeyOfAResumedHolder() async throws {
    let json = """
      {"seed": 317885924441868808, "queueLimits": [2, 1, 1], "limiters": [{"seconds":2,"window":false,"capacity":1},{"seconds":1,"window":false,"capacity":1}], "steps": [
        {"addExclusive":{"op":4,"queue":1,"priority":1,"shared":true,"body":{"checkpoints":2,"checksCancellation":true,"auto":false,"throwing":false,"pauseHandlers":false},"keys":[0,2]}},
        {"addExclusive":{"op":9,"queue":2,"priority":0,"shared":true,"body":{"auto":false,"checkpoints":1,"checksCancellation":false,"pauseHandlers":false,"throwing":false},"keys":[0,1]}},
        {"addExclusive":{"op":11,"queue":0,"priority":0,"shared":true,"body":{"checksCancellation":false,"checkpoints":0,"pauseHandlers":false,"auto":false,"throwing":false},"keys":[1]}},
        {"batch":{"queue":1,"ops":[{"body":{"pauseHandlers":true,"throwing":false,"auto":false,"checksCancellation":false,"checkpoints":1},"op":13,"priority":4},{"body":{"checkpoints":2,"pauseHandlers":false,"checksCancellation":false,"auto":true,"throwing":true},"op":14,"priority":2},{"body":{"pauseHandlers":false,"throwing":false,"checkpoints":2,"auto":false,"checksCancellation":false},"op":15,"priority":0}],"dependencies":[{"mustSucceed":false,"dependency":13,"dependent":14}]}},
        {"setLimiters":{"queue":1,"limiters":[1]}},
        {"pauseAll":{"queue":1}}
      ]}
      """
    let script = try JSONDecoder().decode(Script.self, from: Data(json.utf8))
    let failure = await ValueExecutor().run(script)
    #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
  }
}

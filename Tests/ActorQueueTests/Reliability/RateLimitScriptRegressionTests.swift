import Foundation
import Testing

@testable import ActorQueue

/// Scripts the value tester found against rate limits, kept as they were shrunk.
@Suite("Reliability: rate-limit scripts the random tester found")
struct RateLimitScriptRegressionTests {
  private func run(_ json: String) async throws {
    let script = try JSONDecoder().decode(Script.self, from: Data(json.utf8))
    let failure = await ValueExecutor().run(script)
    #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
  }

  /// op3 (keys k2, k0) waited for permits at the head of q1 (l1 penalized) when op16 took k0 in
  /// the same round: the round ended with op3 in the ready set, and the model's next settle
  /// parked it, a step before the scheduler did. A round whose passed-over head is blocked by
  /// keys runs again, so that arbitration is a fixpoint.
  @Test("A head passed over for permits and then blocked by keys is parked in the same arbitration")
  func passedOverHeadBlockedByKeys() async throws {
    try await run(
      """
      {"seed": 2252795565294403507, "queueLimits": [-1, 1, 3], "limiters": [{"capacity": 3, "seconds": 1, "window": true}, {"capacity": 1, "seconds": 1, "window": false}], "steps": [
        {"addExclusive": {"priority": 4, "shared": true, "queue": 0, "keys": [2], "body": {"pauseHandlers": false, "throwing": false, "checksCancellation": false, "capturesQueue": 0, "checkpoints": 1, "auto": false}, "op": 1}},
        {"addTimed": {"priority": 1, "deadline": 2, "queue": 2, "timeout": 2, "body": {"checkpoints": 1, "throwing": false, "auto": false, "checksCancellation": false, "pauseHandlers": true}, "op": 2}},
        {"addExclusive": {"priority": 4, "shared": true, "queue": 1, "keys": [2, 0], "body": {"checksCancellation": false, "capturesQueue": 2, "throwing": false, "auto": false, "pauseHandlers": false, "checkpoints": 1}, "op": 3}},
        {"setLimitPausingExcess": {"queue": 2, "limit": 2}},
        {"batch": {"queue": 2, "ops": [{"priority": 1, "body": {"pauseHandlers": false, "auto": false, "checksCancellation": true, "throwing": false, "checkpoints": 2}, "op": 8}, {"priority": 1, "body": {"throwing": false, "capturesQueue": 0, "auto": false, "pauseHandlers": false, "checkpoints": 2, "checksCancellation": false}, "op": 9}], "dependencies": [{"dependent": 8, "mustSucceed": false, "dependency": 9}]}},
        {"addExclusive": {"priority": 2, "shared": true, "queue": 2, "keys": [0], "body": {"auto": false, "checksCancellation": false, "checkpoints": 0, "throwing": false, "pauseHandlers": false}, "op": 16}},
        {"setLimiters": {"limiters": [1], "queue": 1}},
        {"penalize": {"seconds": 2, "limiter": 1}}
      ]}
      """)
  }

  /// A caller joined coalesced work with a higher priority: the work now ranked before the head
  /// of another queue sharing the limiters, but only the public priority change re-arbitrated,
  /// so the permit timers stayed on the other queue.
  @Test("A coalescing join that raises the work's priority re-arbitrates the limited queues")
  func coalescingRaiseReArbitrates() async throws {
    try await run(
      """
      {"seed": 756959589890910788, "queueLimits": [1, 3, 3], "limiters": [{"window": true, "capacity": 1, "seconds": 2}, {"window": true, "capacity": 2, "seconds": 1}], "steps": [
        {"setLimiters": {"queue": 2, "limiters": [0, 1]}},
        {"setLimiters": {"queue": 1, "limiters": [0, 1]}},
        {"addCosted": {"queue": 2, "priority": 3, "cost": 1, "op": 4, "body": {"pauseHandlers": false, "checkpoints": 2, "checksCancellation": true, "auto": true, "throwing": false}}},
        {"addTimed": {"queue": 2, "priority": 3, "timeout": 1, "body": {"auto": false, "pauseHandlers": false, "throwing": true, "checkpoints": 2, "checksCancellation": false}, "op": 5}},
        {"addCoalesced": {"queue": 1, "priority": 1, "key": 1, "body": {"auto": true, "checkpoints": 2, "pauseHandlers": false, "checksCancellation": true, "throwing": true}, "op": 11, "work": 12}},
        {"addCoalesced": {"queue": 1, "priority": 4, "key": 1, "body": {"throwing": false, "checkpoints": 2, "pauseHandlers": false, "auto": false, "checksCancellation": false}, "op": 13, "work": 14}}
      ]}
      """)
    try await run(
      """
      {"seed": 1968316164373375977, "queueLimits": [-1, -1], "limiters": [{"capacity": 3, "window": false, "seconds": 2}, {"capacity": 2, "window": true, "seconds": 1}], "steps": [
        {"setLimiters": {"queue": 1, "limiters": [0, 1]}},
        {"addCoalesced": {"queue": 1, "priority": 0, "body": {"throwing": true, "auto": true, "checksCancellation": true, "pauseHandlers": true, "checkpoints": 2}, "op": 0, "key": 0, "work": 1}},
        {"addCoalesced": {"queue": 1, "priority": 1, "body": {"pauseHandlers": true, "throwing": true, "checkpoints": 2, "checksCancellation": false, "auto": true}, "op": 4, "key": 0, "work": 5}},
        {"setLimiters": {"queue": 0, "limiters": [0, 1]}},
        {"addExclusive": {"queue": 0, "priority": 1, "keys": [0, 1], "shared": true, "op": 6, "body": {"auto": true, "checksCancellation": false, "throwing": false, "checkpoints": 2, "pauseHandlers": false}}},
        {"addCoalesced": {"queue": 1, "priority": 0, "body": {"checksCancellation": true, "checkpoints": 1, "auto": false, "throwing": false, "pauseHandlers": true}, "op": 7, "key": 1, "work": 8}},
        {"addCoalesced": {"queue": 1, "priority": 3, "body": {"pauseHandlers": false, "checksCancellation": true, "throwing": false, "checkpoints": 1, "auto": false}, "op": 10, "key": 1, "work": 11}}
      ]}
      """)
  }

  /// q1's permit timer made the advance stop at 1 s, where op3's backoff ended on q0, whose
  /// worker lingered: woken, it claimed only after the next stop had made op5 ready too, and
  /// took op5 (a higher priority) where the model started op3 at the stop. Until an advance's
  /// last stop, starts are claimed in their event.
  @Test("At a stop of an advance, what may start starts in that event, not when a worker next runs")
  func stopsStartEagerly() async throws {
    try await run(
      """
      {"seed": 6063504546303241863, "queueLimits": [1, 1], "limiters": [{"window": false, "capacity": 1, "seconds": 1}, {"window": true, "capacity": 2, "seconds": 1}], "steps": [
        {"setLimiters": {"queue": 1, "limiters": [0]}},
        {"addExclusive": {"queue": 1, "shared": true, "body": {"checksCancellation": false, "auto": true, "checkpoints": 0, "pauseHandlers": false, "throwing": false}, "op": 1, "priority": 4, "keys": [1, 2]}},
        {"addRetrying": {"queue": 0, "retry": {"attempts": 3, "backoff": 1, "failures": 2}, "body": {"auto": true, "checkpoints": 1, "pauseHandlers": false, "checksCancellation": false, "throwing": false}, "op": 3, "priority": 0}},
        {"addCosted": {"queue": 1, "cost": 1, "body": {"pauseHandlers": false, "throwing": false, "checksCancellation": true, "auto": false, "checkpoints": 2}, "op": 4, "priority": 4}},
        {"setSuspended": {"queue": 1, "suspended": false}},
        {"setSuspended": {"queue": 0, "suspended": false}},
        {"addRetrying": {"queue": 0, "retry": {"timeout": 1, "attempts": 2, "backoff": 2, "failures": 1}, "body": {"checksCancellation": false, "throwing": true, "auto": true, "checkpoints": 0, "pauseHandlers": false}, "op": 5, "priority": 1}},
        {"advance": {"seconds": 2}}
      ]}
      """)
  }
}

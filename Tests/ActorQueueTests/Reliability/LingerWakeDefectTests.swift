import Foundation
import Testing

/// Found by the random tester on the scheduler value once it paused bodies (issue 12).
///
/// A paused body keeps its worker while it holds no slot, so its queue can have that worker and
/// a lingering one at once. When the paused body is resumed and ends, its worker's claim clears
/// the queue's `isLingering` although the other worker still lingers (and still counts as the
/// starting worker). An op made ready afterwards (here by a dependency in another queue) sets no
/// wake flag and gets no new worker: it waits until the lingering worker's window runs out
/// (`LingerPolicy.window`, 100 µs), instead of starting at once. Latency, not a hang. Fixed:
/// only the lingering worker clears the flag (`QueueStartRule.lingerEnded()`).
@Suite("Reliability: defects found by the random tester")
struct LingerWakeDefectTests {
  /// The shrunk script (value-level, deterministic): at step 22 (the drain's
  /// `q0.resumeAllOperations()`), op10 is ready in q0 and the model starts it; the scheduler
  /// value leaves it to a lingering worker nobody wakes.
  static let script = """
    {"seed":226021898594143007,"queueLimits":[3,-1],"steps":[\
    {"addCoalesced":{"key":0,"body":{"checksCancellation":true,"throwing":false,"auto":false,"checkpoints":0},\
    "priority":1,"op":1,"work":2,"queue":0}},{"open":{"op":2}},\
    {"addCoalesced":{"key":0,"body":{"checkpoints":2,"auto":false,"checksCancellation":false,"throwing":false},\
    "priority":3,"op":3,"work":4,"queue":0}},{"pause":{"op":3}},\
    {"batch":{"dependencies":[{"dependency":3,"mustSucceed":true,"dependent":5}],\
    "ops":[{"priority":4,"op":5,"body":{"checksCancellation":false,"checkpoints":0,"throwing":false,"auto":false}}],\
    "queue":1}},\
    {"add":{"priority":0,"op":9,"queue":0,"body":{"throwing":false,"auto":false,"checksCancellation":false,"checkpoints":2}}},\
    {"addAfter":{"inputs":[5,9],"priority":3,"op":10,"queue":0,\
    "body":{"checksCancellation":false,"auto":false,"throwing":false,"checkpoints":0}}}]}
    """

  @Test(
    "An op made ready while a worker of its queue lingers is started at once, after a paused body's worker claimed"
  )
  func lingeringWorkerIsWoken() async throws {
    let script = try JSONDecoder().decode(Script.self, from: Data(Self.script.utf8))
    let failure = await ValueExecutor(waitsOutLingers: false).run(script)
    #expect(failure == nil, "\(failure.map(\.description) ?? "")")
  }
}

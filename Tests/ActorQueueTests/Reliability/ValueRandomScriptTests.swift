import Foundation
import Testing

@testable import ActorQueue

/// The random tester on the scheduler value: many more scripts than on real queues, in-process
/// (a trap here is a failed test run, which CI reports with the seed printed first).
extension Searching {
  @Suite("Reliability: random scripts on the scheduler value")
  struct ValueRandomScriptTests {
    @Test("random scripts on the scheduler value agree with the reference model")
    func randomScriptsOnTheValue() async {
      let count = SearchDepth.count("ACTORQUEUE_VALUE_SCRIPTS", quick: 1_000, deep: 20_000)
      let seed = runSeed()
      let generator = ScriptGenerator()
      let executor = ValueExecutor()
      if let json = ProcessInfo.processInfo.environment["ACTORQUEUE_RANDOM_REPLAY_JSON"] {
        guard let script = try? JSONDecoder().decode(Script.self, from: Data(json.utf8)) else {
          Issue.record("ACTORQUEUE_RANDOM_REPLAY_JSON is not a script")
          return
        }
        if let failure = await executor.run(script) {
          Issue.record("replay failed on the scheduler value: \(failure)")
        }
        return
      }
      progress("Reliability value scripts: ACTORQUEUE_RANDOM_SEED=\(seed), \(count) scripts")
      let clock = ContinuousClock()
      let start = clock.now
      // On a thread of its own: a script on the value never suspends, and the run would hold one
      // of the cooperative pool's threads (of two, on the CI machine) that other tests wait for.
      let found = await onThreadOfItsOwn { () -> (index: Int, script: Script, failure: ScriptFailure)? in
        var reported = start
        for index in 0..<count {
          if reported.duration(to: clock.now) > .seconds(10) {
            reported = clock.now
            progress("Reliability value scripts: \(index) of \(count) passed")
          }
          let script = generator.script(seed: SplitMix64.scriptSeed(run: seed, index: index))
          if let failure = executor.runHere(script) { return (index, script, failure) }
        }
        return nil
      }
      if case let (index, script, failure)? = found {
        let shrunk = await shrink(script) { await executor.run($0) != nil }
        let json = (try? JSONEncoder().encode(shrunk)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        Issue.record(
          """
          script \(index) (seed \(script.seed)) of run ACTORQUEUE_RANDOM_SEED=\(seed) failed on the \
          scheduler value: \(failure)
          shrunk to \(shrunk.steps.count) steps:
          \(shrunk)
          ACTORQUEUE_RANDOM_REPLAY_JSON='\(json)'
          """)
        return
      }
      progress(
        "Reliability value scripts: \(count) passed in \(seconds(since: start)); "
          + "\(ValueExecutor.checkedCycles.load(ordering: .relaxed)) refused cycles were real cycles of the model "
          + "(\(ValueExecutor.checkedCyclesThroughSharedWork.load(ordering: .relaxed)) through shared work); "
          + "\(ValueExecutor.interleavedSteps.load(ordering: .relaxed)) steps ran between the slices of another "
          + "(\(ValueExecutor.arbitratedBetweenSlices.load(ordering: .relaxed)) with keys, decided at once); "
          + "timers acted on \(ValueExecutor.timedOutWaiting.load(ordering: .relaxed)) waiting ops and "
          + "\(ValueExecutor.timedOutExecuting.load(ordering: .relaxed)) executing ones "
          + "(\(ValueExecutor.timedOutFinished.load(ordering: .relaxed)) finished anyway), "
          + "\(ValueExecutor.mayTimeOut.load(ordering: .relaxed)) ends either way; "
          + "\(ValueExecutor.rescheduled.load(ordering: .relaxed)) failed attempts were retried; "
          + "\(ValueExecutor.parked.load(ordering: .relaxed)) ops parked for keys, "
          + "\(ValueExecutor.reserved.load(ordering: .relaxed)) waiters reserved theirs; "
          + "\(ValueExecutor.grants.load(ordering: .relaxed)) starts took permits, "
          + "\(ValueExecutor.throttled.load(ordering: .relaxed)) times a head waited for them; "
          + "\(ValueExecutor.evaluations.load(ordering: .relaxed)) conditions answered, "
          + "\(ValueExecutor.deferrals.load(ordering: .relaxed)) said not yet; "
          + "\(ValueExecutor.groupsEnded.load(ordering: .relaxed)) groups ended after their "
          + "\(ValueExecutor.groupChildren.load(ordering: .relaxed)) children, "
          + "\(ValueExecutor.groupsFailedByChildren.load(ordering: .relaxed)) of them failed by a child; "
          + "\(ValueExecutor.cancelledByTag.load(ordering: .relaxed)) ops cancelled by tag; "
          + "\(ValueExecutor.linedUp.load(ordering: .relaxed)) submitters waited for space, "
          + "\(ValueExecutor.served.load(ordering: .relaxed)) were served, "
          + "\(ValueExecutor.cancelledWaiting.load(ordering: .relaxed)) gave up; "
          + "\(ValueExecutor.refusedTries.load(ordering: .relaxed)) tryAdds found the queue full; "
          + "\(ValueExecutor.escalatedOps.load(ordering: .relaxed)) ops escalated, "
          + "\(ValueExecutor.reorderedOps.load(ordering: .relaxed)) of them moved ahead; "
          + "\(FreeRecordCheck.checkedRecords.load(ordering: .relaxed)) free records were as reuse assumes; "
          + "\(PhaseCheck.checkedRecords.load(ordering: .relaxed)) live records' phases agreed with their queues"
      )
    }
  }
}

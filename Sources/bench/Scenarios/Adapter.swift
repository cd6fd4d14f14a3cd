// ============================================================================================
// ADAPTER SCENARIO — placeholder, for the lead to fill in once OperationAdapter has landed.
// ============================================================================================
//
// What belongs here (issue 5, "the adapter and pause scenarios when those issues land"):
// legacy `Operation` subclasses run through OperationAdapter, side by side with the same
// subclasses on OperationQueue, e.g. N = 100,000 trivial `BlockOperation`s / a synchronous
// `Operation` subclass / an asynchronous (isExecuting/isFinished KVO) subclass:
//
//   - OperationQueue:  queue.addOperation(op) for each, waitUntilAllOperationsAreFinished()
//   - adapter:         actorQueue.addOperation(legacy: op) for each (inside `blocking { }`),
//                      await actorQueue.waitUntilAllOperationsAreFinished()
//
// Build the samples with `runInterleaved(...)` using `Contender(system: .operationQueue …)` and
// `Contender(system: .adapter …)` (`System.adapter` exists and has a colour in the chart), and
// turn them into rows with `makeRows(scenario: "adapter", variant: …, …)`; ratios against
// OperationQueue are then computed like every other row's. Add goals, if any, in
// Output/Goals.swift. A pause scenario (pause()/resume() under load) would follow the same
// pattern in a file of its own, registered in ScenarioName and main.swift.
import ActorQueue
import OperationAdapter

enum AdapterScenario {
  /// Whether the scenario is implemented; until then the bench reports it as skipped.
  static let isAvailable = false

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    // TODO(lead): measure legacy Operations through OperationAdapter here (see above).
    []
  }
}

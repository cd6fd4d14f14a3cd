import ActorQueue
import Foundation

/// Retry (issue 29), N ops at limit 4, each body reading `ActorQueue.currentAttempt`:
/// - "fail once, zero delay": ActorQueue's ops each fail their first attempt and are retried at
///   once (`.retry(.attempts(2, backoff: .constant(.zero), jitter: .none))`); its task-per-op row
///   is the same ops, with the same trait, succeeding at once, measured in turn: the ratio is
///   what a retry costs. OperationQueue retries as its users do: the failed operation's block
///   adds a new operation for the second attempt.
/// - "the trait alone": ActorQueue's ops with the trait, succeeding at once; its task-per-op row
///   is the same bodies without the trait: what carrying a retry policy costs.
enum Retry {
  static let variant = "fail once, zero delay, max 4"
  static let traitVariant = "the trait alone, max 4"
  static let policy = RetryPolicy.attempts(2, backoff: .constant(.zero), jitter: .none)

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let n = sizes.retry
    let retried = runInterleaved(
      "retry \(variant) n=\(n)",
      [
        Contender(system: .operationQueue) { [operationQueue(n: n)] },
        Contender(system: .actorQueue) { [actorQueue(n: n, failures: 1)] },
        Contender(system: .taskPerOp) { [actorQueue(n: n, failures: 0)] },
      ], metrics: 1, options: options)
    let trait = runInterleaved(
      "retry \(traitVariant) n=\(n)",
      [
        Contender(system: .actorQueue) { [actorQueue(n: n, failures: 0)] },
        Contender(system: .taskPerOp) { [actorQueue(n: n, failures: 0, trait: false)] },
      ], metrics: 1, options: options)
    return makeRows(
      scenario: "retry", variant: variant, metrics: ["time"], n: n, ops: n, samples: retried,
      runs: options.runs,
      note:
        "retry: each op fails its first attempt and is retried at once; its task per op row is ActorQueue's "
        + "same ops (same trait) succeeding at once; OperationQueue adds a new operation per retry")
      + makeRows(
        scenario: "retry", variant: traitVariant, metrics: ["time"], n: n, ops: n, samples: trait,
        runs: options.runs,
        note:
          "retry, the trait alone: ops with the retry trait succeeding at once; task per op: the same bodies "
          + "without the trait")
  }

  private struct AttemptFails: Error {}

  /// `n` ops whose bodies fail their first `failures` attempts (read from
  /// `ActorQueue.currentAttempt`), with the retry trait unless `trait` is false.
  static func actorQueue(n: Int, failures: Int, trait: Bool = true) -> Double {
    blocking {
      let counter = Counter()
      let queue = ActorQueue(maxConcurrentOperationCount: 4)
      let traits: [OperationTrait] = trait ? [.retry(policy)] : []
      let body: @Sendable () async throws -> Void = {
        if (ActorQueue.currentAttempt?.number ?? 1) <= failures { throw AttemptFails() }
        counter.increment()
      }
      let start = now()
      for _ in 0..<n { queue.addOperation(traits: traits, body) }
      await queue.waitUntilAllOperationsAreFinished()
      let elapsed = secondsSince(start)
      verify(counter.count == n, "ActorQueue ran \(counter.count) of \(n) ops to success")
      return elapsed
    }
  }

  static func operationQueue(n: Int) -> Double {
    let counter = Counter()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 4
    let start = now()
    for _ in 0..<n {
      queue.addOperation {
        // The first attempt fails: a new operation runs the second.
        queue.addOperation { counter.increment() }
      }
    }
    queue.waitUntilAllOperationsAreFinished()
    let elapsed = secondsSince(start)
    verify(counter.count == n, "OperationQueue ran \(counter.count) of \(n) ops to success")
    return elapsed
  }
}

import ActorQueue
import Foundation
import OperationAdapter
import TestSupport
import Testing

/// The `Foundation.Progress` bridge (beyond.md §1.5 d8): KVO on `fractionCompleted` follows the
/// operation's progress (on Linux, which has no KVO, the values read at each step), and cancelling
/// either side cancels the other.
@Suite struct FoundationProgressTests {
  @Test func kvoOnFractionCompletedMatchesTheOperationsProgress() async throws {
    let queue = ActorQueue(name: "bridged")
    let steps = (0..<4).map { _ in Gate() }
    let reported = (0..<4).map { _ in Gate() }
    let operation = queue.addOperation(
      name: "upload",
      reportingProgress: { progress in
        progress.setTotal(4)
        for (step, report) in zip(steps, reported) {
          await step.wait()
          progress.complete()
          report.open()
        }
      })
    let progress = operation.foundationProgress
    #expect(progress.isIndeterminate || progress.fractionCompleted == 0)
    let seen = Recorder<Double>()
    #if canImport(ObjectiveC)  // KVO: Apple's Foundation only (swift-corelibs-foundation has none)
      let observation = progress.observe(\.fractionCompleted, options: [.new]) { _, change in
        if let value = change.newValue { seen.append(value) }
      }
    #endif
    for (index, (step, report)) in zip(steps, reported).enumerated() {
      step.open()
      await report.wait()
      let expected = Double(index + 1) / 4
      #expect(operation.progress.fraction == expected)
      #expect(await eventually { progress.fractionCompleted == expected })
      #if !canImport(ObjectiveC)
        seen.append(progress.fractionCompleted)
      #endif
    }
    await operation.waitUntilFinished()
    #expect(await eventually { progress.fractionCompleted == 1 && progress.isFinished })
    #if canImport(ObjectiveC)
      observation.invalidate()
    #endif
    // KVO saw the fractions in order, ending at the operation's.
    #expect(seen.snapshot == seen.snapshot.sorted())
    #expect(seen.snapshot.last == operation.progress.fraction)
    #expect(Set(seen.snapshot).isSubset(of: [0, 0.25, 0.5, 0.75, 1]))
    #expect(!progress.isCancelled)
  }

  @Test func cancellingTheProgressCancelsTheOperationAndTheReverse() async throws {
    let queue = ActorQueue(name: "cancel")
    queue.isSuspended = true
    let first = queue.addOperation(name: "first") {}
    let progress = first.foundationProgress
    progress.cancel()
    #expect(await eventually { first.state == .cancelled })  // the handler may run on another thread

    let second = queue.addOperation(name: "second") {}
    let other = second.foundationProgress
    second.cancel()
    #expect(await eventually { other.isCancelled })
  }
}

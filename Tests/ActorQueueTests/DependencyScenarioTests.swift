import ActorQueue
import Foundation
import TestSupport
import Testing

/// Field scenarios 4 and 6 (spec/operation-model.md §4), each also built with OperationQueue.
@Suite("Dependency scenarios")
struct DependencyScenarioTests {
  // MARK: Scenario 4: load image → tilt-shift filter receiving the loaded image directly

  struct Image: Sendable, Equatable {
    var pixels: [UInt8]
    var filters: [String] = []
  }

  static func loadImage(_ seed: UInt8) throws -> Image {
    if seed == 0 { throw TestError(code: 404) }
    return Image(pixels: [seed, seed &+ 1, seed &+ 2])
  }

  static func tiltShift(_ image: Image) -> Image {
    var blurred = image
    blurred.pixels = image.pixels.map { $0 / 2 }
    blurred.filters.append("tilt-shift")
    return blurred
  }

  @Test("Scenario 4: the filter receives the loaded image directly, typed (limit 4)")
  func scenario4LoadThenFilter() async throws {
    let queue = ActorQueue(name: "images", maxConcurrentOperationCount: 4)
    let probe = ConcurrencyProbe()
    let seeds: [UInt8] = [10, 20, 30, 40, 50, 60]
    let filtered = seeds.map { seed in
      let load = queue.addOperation(name: "load \(seed)") {
        probe.enter()
        defer { probe.leave() }
        return try Self.loadImage(seed)
      }
      return queue.addOperation(name: "tilt-shift \(seed)", after: load) { image in
        probe.enter()
        defer { probe.leave() }
        return Self.tiltShift(image)
      }
    }
    var images: [Image] = []
    for operation in filtered { images.append(try await operation.value) }
    let expected = try seeds.map { Self.tiltShift(try Self.loadImage($0)) }
    #expect(images == expected)
    #expect(probe.maximum <= 4)

    // The same pipeline in Foundation needs a hand-over: the filter finds its input among
    // its dependencies by casting (P6).
    final class LoadOperation: Operation, @unchecked Sendable {
      let seed: UInt8
      // Written in main(), read by the filter after this operation finished: the queue
      // orders the two.
      var image: Image?
      init(seed: UInt8) { self.seed = seed }
      override func main() { image = try? DependencyScenarioTests.loadImage(seed) }
    }
    final class FilterOperation: Operation, @unchecked Sendable {
      var output: Image?
      override func main() {
        guard let input = dependencies.compactMap({ ($0 as? LoadOperation)?.image }).first else { return }
        output = DependencyScenarioTests.tiltShift(input)
      }
    }
    let foundationQueue = OperationQueue()
    foundationQueue.maxConcurrentOperationCount = 4
    let foundationFilters = seeds.map { seed in
      let load = LoadOperation(seed: seed)
      let filter = FilterOperation()
      filter.addDependency(load)
      foundationQueue.addOperation(load)
      foundationQueue.addOperation(filter)
      return filter
    }
    await foundationQueue.allFinished()
    #expect(foundationFilters.map(\.output) == expected)
  }

  @Test("Scenario 4: a failed load fails the filter with the load's error; the filter never runs")
  func scenario4FailedLoad() async throws {
    let queue = ActorQueue(name: "images", maxConcurrentOperationCount: 4)
    let ran = RunFlag()
    let load = queue.addOperation(name: "load missing") { try Self.loadImage(0) }
    let filter = queue.addOperation(name: "tilt-shift", after: load) { image in
      ran.mark()
      return Self.tiltShift(image)
    }
    let failure = try #require(dependencyFailure(await filter.result))
    #expect(failure.dependencyName == "load missing")
    #expect(failure.underlyingError as? TestError == TestError(code: 404))
    #expect(filter.state == .failed)
    #expect(!ran.didRun)
  }

  // MARK: Scenario 6: a batch on a suspended queue (limit 2), results appended through a serial queue

  /// Field scenario 6's setup: `count` items (each squares its index, then appends the square
  /// through the serial `results` queue) built for `batch`, a queue with limit 2 that is
  /// suspended and still empty.
  static func suspendedBatch(count: Int) -> (
    batch: ActorQueue, results: ActorQueue, collected: Recorder<Int>, ran: RunFlag,
    operations: [QueueOperation<Int>]
  ) {
    let batch = ActorQueue(name: "batch", maxConcurrentOperationCount: 2)
    batch.isSuspended = true
    let results = ActorQueue(name: "results", maxConcurrentOperationCount: 1)
    let collected = Recorder<Int>()
    let ran = RunFlag()
    let operations = (0..<count).map { index in
      QueueOperation(name: "item \(index)") {
        ran.mark()
        let value = index * index
        results.addOperation(name: "append \(index)") { collected.append(value) }
        return value
      }
    }
    return (batch, results, collected, ran, operations)
  }

  @Test("Scenario 6: a batch built on a suspended queue runs when started, at most 2 at once")
  func scenario6Started() async throws {
    let count = 40
    let (batch, results, collected, ran, operations) = Self.suspendedBatch(count: count)
    let events = batch.events
    try batch.addOperations(operations)
    #expect(batch.operationCount == count)
    #expect(operations.allSatisfy { $0.state == .ready })
    #expect(!ran.didRun)

    batch.isSuspended = false
    await batch.waitUntilAllOperationsAreFinished()
    await results.waitUntilAllOperationsAreFinished()
    #expect(collected.snapshot.sorted() == (0..<count).map { $0 * $0 })
    #expect(ran.runs == count)

    // The limit, from the queue's own record: never more than 2 executing.
    var finished = 0
    var maximumExecuting = 0
    for await event in events {
      maximumExecuting = max(maximumExecuting, event.executingCount)
      if event.operationState == .finished { finished += 1 }
      if finished == count { break }
    }
    #expect(maximumExecuting <= 2)
    #expect(maximumExecuting >= 1)

    // Foundation, the same batch.
    let foundationBatch = OperationQueue()
    foundationBatch.maxConcurrentOperationCount = 2
    foundationBatch.isSuspended = true
    let foundationResults = OperationQueue()
    foundationResults.maxConcurrentOperationCount = 1
    let foundationCollected = Recorder<Int>()
    let foundationProbe = ConcurrencyProbe()
    for index in 0..<count {
      foundationBatch.addOperation {
        foundationProbe.enter()
        defer { foundationProbe.leave() }
        let value = index * index
        foundationResults.addOperation { foundationCollected.append(value) }
      }
    }
    #expect(foundationBatch.operationCount == count)
    #expect(foundationProbe.maximum == 0)
    foundationBatch.isSuspended = false
    await foundationBatch.allFinished()
    await foundationResults.allFinished()
    #expect(foundationCollected.snapshot.sorted() == (0..<count).map { $0 * $0 })
    #expect(foundationProbe.maximum <= 2)
  }

  @Test(
    "Scenario 6: cancelling the batch before starting it ends every item at once (Foundation keeps them queued)"
  )
  func scenario6Cancelled() async throws {
    let count = 40
    let (batch, results, collected, ran, operations) = Self.suspendedBatch(count: count)
    try batch.addOperations(operations)
    batch.cancelAllOperations()
    #expect(batch.operationCount == 0, "every waiting item ended at once, while suspended (P2)")
    #expect(operations.allSatisfy { $0.state == .cancelled && $0.isCancelled })
    batch.isSuspended = false
    await batch.waitUntilAllOperationsAreFinished()
    await results.waitUntilAllOperationsAreFinished()
    #expect(!ran.didRun)
    #expect(collected.snapshot.isEmpty)
    for operation in operations {
      await #expect(throws: CancellationError.self) { try await operation.value }
    }

    // Foundation: cancelled items stay queued until the queue is started (P2), then end
    // without running.
    let foundationBatch = OperationQueue()
    foundationBatch.maxConcurrentOperationCount = 2
    foundationBatch.isSuspended = true
    let foundationRan = RunFlag()
    let foundationOperations = (0..<count).map { _ in BlockOperation { foundationRan.mark() } }
    for operation in foundationOperations { foundationBatch.addOperation(operation) }
    foundationBatch.cancelAllOperations()
    #expect(foundationBatch.operationCount == count)
    #expect(foundationOperations.allSatisfy { $0.isCancelled && !$0.isFinished })
    foundationBatch.isSuspended = false
    await foundationBatch.allFinished()
    #expect(!foundationRan.didRun)
    #expect(foundationOperations.allSatisfy { $0.isCancelled && $0.isFinished })
  }

  @Test(
    "Scenario 6: waiting for the batch with addOperations(_:waitUntilFinished:) returns once every result is in"
  )
  func scenario6WaitedFor() async throws {
    let count = 40
    let (batch, results, collected, ran, operations) = Self.suspendedBatch(count: count)
    let events = batch.events
    let waiter = Task {
      try await batch.addOperations(operations, waitUntilFinished: true)
      // What the waiter sees the moment its wait ends.
      return (batch.operationCount, operations.allSatisfy { $0.state == .finished })
    }
    // Start the batch once every item is in (seen through the queue's events, not a sleep).
    var added = 0
    for await event in events where event.operationState == .ready {
      added += 1
      if added == count { break }
    }
    #expect(!ran.didRun)
    batch.isSuspended = false
    let (remaining, allFinished) = try await waiter.value
    #expect(remaining == 0)
    #expect(allFinished)
    await results.waitUntilAllOperationsAreFinished()
    #expect(collected.snapshot.sorted() == (0..<count).map { $0 * $0 })

    // Foundation: the same wait blocks a thread (P7); run it on one of its own.
    let foundationBatch = OperationQueue()
    foundationBatch.maxConcurrentOperationCount = 2
    let foundationResults = OperationQueue()
    foundationResults.maxConcurrentOperationCount = 1
    let foundationCollected = Recorder<Int>()
    let foundationOperations = (0..<count).map { index in
      BlockOperation {
        let value = index * index
        foundationResults.addOperation { foundationCollected.append(value) }
      }
    }
    let foundationAllFinished = await onBlockingThread {
      foundationBatch.addOperations(foundationOperations, waitUntilFinished: true)
      return foundationOperations.allSatisfy(\.isFinished)
    }
    #expect(foundationAllFinished)
    await foundationResults.allFinished()
    #expect(foundationCollected.snapshot.sorted() == (0..<count).map { $0 * $0 })
  }
}

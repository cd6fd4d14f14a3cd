import ActorQueue
import Testing

/// The errors match as users write them (issue 14, item 1): `catch ActorQueueError.x`, a
/// `switch` over `any Error`, `catch let e as ActorQueueError where e == .x`, and Swift Testing's
/// `#expect(throws:)`; `DependencyFailedError` by its type and its fields.
@Suite("Error matching")
struct ErrorMatchingTests {
  /// An operation that waits for another: adding the reverse edge closes a cycle.
  private func cycle() throws -> (first: QueueOperation<Int>, second: QueueOperation<Int>) {
    let first = QueueOperation(name: "first") { 1 }
    let second = QueueOperation(name: "second") { 2 }
    try second.addDependency(first)
    return (first, second)
  }

  @Test("catch ActorQueueError.dependencyCycle catches the cycle, and only it")
  func catchClauseMatchesTheCode() throws {
    let (first, second) = try cycle()
    var caught: String?
    do {
      try first.addDependency(second)
    } catch ActorQueueError.alreadyStarted {
      caught = "alreadyStarted"
    } catch ActorQueueError.dependencyCycle {
      caught = "dependencyCycle"
    }
    #expect(caught == "dependencyCycle")
  }

  @Test("A switch over any Error matches each code")
  func switchOverAnyErrorMatchesEachCode() async throws {
    let queue = ActorQueue(name: "q")
    queue.isSuspended = true
    let operation = QueueOperation(name: "once") { 1 }
    try queue.addOperation(operation)
    let errors: [any Error] = [
      ActorQueueError.dependencyCycle, ActorQueueError.alreadyEnqueued, ActorQueueError.alreadyStarted,
      CancellationError(),
    ]
    var names: [String] = []
    for error in errors {
      switch error {
      case ActorQueueError.dependencyCycle: names.append("cycle")
      case ActorQueueError.alreadyEnqueued: names.append("enqueued")
      case ActorQueueError.alreadyStarted: names.append("started")
      default: names.append("other")
      }
    }
    #expect(names == ["cycle", "enqueued", "started", "other"])
    // A pattern never matches an error of another type, nor another code.
    #expect(!(ActorQueueError.dependencyCycle ~= CancellationError()))
    #expect(!(ActorQueueError.dependencyCycle ~= ActorQueueError.alreadyStarted as any Error))
    queue.isSuspended = false
    _ = try await operation.value
  }

  @Test("A switch over an ActorQueueError value still compiles and matches")
  func switchOverTheConcreteTypeStillWorks() {
    let error = ActorQueueError.alreadyEnqueued
    let name: String
    switch error {
    case .dependencyCycle: name = "cycle"
    case .alreadyEnqueued: name = "enqueued"
    default: name = "other"
    }
    #expect(name == "enqueued")
  }

  @Test("catch let e as ActorQueueError where e == .alreadyEnqueued")
  func castAndCompare() async throws {
    let queue = ActorQueue(name: "q")
    let operation = QueueOperation(name: "once") { 1 }
    try queue.addOperation(operation)
    var caught = false
    do {
      try queue.addOperation(operation)
    } catch let error as ActorQueueError where error == .alreadyEnqueued {
      caught = true
    }
    #expect(caught)
    _ = try await operation.value
  }

  @Test("#expect(throws:) with a code")
  func expectThrowsWithACode() throws {
    let (first, second) = try cycle()
    #expect(throws: ActorQueueError.dependencyCycle) { try first.addDependency(second) }
  }

  @Test("A thrown dependencyCycle carries its cycle and still matches by its code")
  func thrownCycleMatchesWhateverItsPath() throws {
    let fetch = QueueOperation(name: "fetch") { 1 }
    let parse = QueueOperation { 2 }
    let save = QueueOperation(name: "save") { 3 }
    try parse.addDependency(fetch)
    try save.addDependency(parse)

    var thrown: (any Error)?
    do { try fetch.addDependency(save) } catch { thrown = error }
    let error = try #require(thrown as? ActorQueueError)
    var caught = false
    do {
      throw error
    } catch ActorQueueError.alreadyStarted {
      Issue.record("matched another code")
    } catch ActorQueueError.dependencyCycle {
      caught = true
    }
    #expect(caught, "catch ActorQueueError.dependencyCycle matches the error that names its cycle")
    // fetch was to wait for save, which waits for parse, which waits for fetch.
    #expect(error.cycle.map(\.id) == [fetch.id, save.id, parse.id])
    #expect(error.cycle.map(\.name) == ["fetch", "save", nil])
    #expect(error.cycle.allSatisfy { !$0.isSharedWork })
    #expect(
      error.description.contains(
        "'fetch' (\(fetch.id)) → 'save' (\(save.id)) → \(parse.id) → 'fetch' (\(fetch.id))"),
      "\(error)")
    #expect(error == .dependencyCycle && ActorQueueError.dependencyCycle.cycle.isEmpty)
    #expect(error != .alreadyStarted)
    #expect(throws: ActorQueueError.dependencyCycle) { try fetch.addDependency(save) }
    // What #expect(throws:) matched is an error with the same path.
    let matched = #expect(throws: ActorQueueError.dependencyCycle) { try fetch.addDependency(save) }
    #expect(matched?.cycle.map(\.id) == [fetch.id, save.id, parse.id])
    switch error as any Error {
    case ActorQueueError.dependencyCycle: break
    default: Issue.record("a switch over any Error did not match the code")
    }
    // Every other code carries no cycle.
    #expect(ActorQueueError.alreadyStarted.cycle.isEmpty)
  }

  @Test("DependencyFailedError: caught by type, matched on its fields")
  func dependencyFailedErrorByTypeAndFields() async throws {
    struct Offline: Error, Equatable {}
    let queue = ActorQueue(name: "q")
    let load = queue.addOperation(name: "load") { () throws -> Int in throw Offline() }
    let filter = queue.addOperation(name: "filter", after: load) { $0 + 1 }
    let save = queue.addOperation(name: "save", after: filter) { $0 * 2 }

    await #expect(throws: DependencyFailedError.self) { try await save.value }
    var origin: String?
    do {
      _ = try await save.value
    } catch let failure as DependencyFailedError where failure.underlyingError is Offline {
      origin = failure.originName
      #expect(failure.dependencyID == filter.id && failure.originID == load.id)
    }
    #expect(origin == "load")
    // The origin's own error is thrown by the origin itself.
    await #expect(throws: Offline()) { try await load.value }
  }
}

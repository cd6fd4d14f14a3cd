import TestSupport
import Testing

@testable import ActorQueue

/// Consumes an `AsyncStream` in a task of its own and records every element, so a test can
/// wait until the record says something happened (instead of sleeping) and then check the
/// whole trace.
final class StreamLog<Element: Sendable>: Sendable {
  private struct State {
    var elements: [Element] = []
    var isFinished = false
    var waiters:
      [(condition: @Sendable ([Element]) -> Bool, continuation: CheckedContinuation<[Element], Never>)] = []
  }

  private final class Storage: Sendable {
    let state = LockedValue(State())
  }

  private let storage = Storage()
  private let consumer: Task<Void, Never>

  init(_ stream: AsyncStream<Element>) {
    let storage = self.storage
    consumer = Task {
      for await element in stream {
        let ready = storage.state.withLock { state in
          state.elements.append(element)
          return Self.takeSatisfied(&state)
        }
        for (continuation, elements) in ready { continuation.resume(returning: elements) }
      }
      let waiters = storage.state.withLock { state in
        state.isFinished = true
        defer { state.waiters = [] }
        return state.waiters.map { ($0.continuation, state.elements) }
      }
      for (continuation, elements) in waiters { continuation.resume(returning: elements) }
    }
  }

  private static func takeSatisfied(
    _ state: inout State
  ) -> [(CheckedContinuation<[Element], Never>, [Element])] {
    var ready: [(CheckedContinuation<[Element], Never>, [Element])] = []
    state.waiters.removeAll { waiter in
      guard waiter.condition(state.elements) else { return false }
      ready.append((waiter.continuation, state.elements))
      return true
    }
    return ready
  }

  /// The elements received so far.
  var elements: [Element] { storage.state.withLock { $0.elements } }

  /// Whether the stream has ended.
  var isFinished: Bool { storage.state.withLock { $0.isFinished } }

  /// Suspends until the elements received satisfy `condition` (or the stream ends), and
  /// returns them.
  @discardableResult
  func wait(until condition: @escaping @Sendable ([Element]) -> Bool) async -> [Element] {
    await withCheckedContinuation { continuation in
      let now: [Element]? = storage.state.withLock { state in
        if state.isFinished || condition(state.elements) { return state.elements }
        state.waiters.append((condition, continuation))
        return nil
      }
      if let now { continuation.resume(returning: now) }
    }
  }

  /// Suspends until the stream ends, and returns every element.
  func waitUntilFinished() async -> [Element] {
    await consumer.value
    return elements
  }

  /// Stops consuming (the stream's subscription ends).
  func stop() { consumer.cancel() }
}

extension StreamLog where Element == QueueEvent {
  /// Waits until `operation` has reached a terminal state in this trace.
  @discardableResult
  func waitForEnd(of operation: AnyQueueOperation) async -> [QueueEvent] {
    let id = operation.id
    return await wait(until: {
      $0.contains { $0.operationID == id && ($0.operationState?.isTerminal ?? false) }
    })
  }

  /// Waits until every operation in `operations` has reached a terminal state in this trace.
  @discardableResult
  func waitForEnd(of operations: [AnyQueueOperation]) async -> [QueueEvent] {
    let ids = Set(operations.map(\.id))
    return await wait(until: { events in
      let ended = Set(
        events.compactMap { event -> OperationID? in
          guard let id = event.operationID, event.operationState?.isTerminal == true else { return nil }
          return id
        })
      return ids.isSubset(of: ended)
    })
  }
}

/// A weak reference that can cross tasks, for "is it freed?" checks.
///
/// `@unchecked Sendable`: the only state is a `weak` reference behind a lock.
final class WeakReference<Object: AnyObject>: @unchecked Sendable {
  private let reference: LockedValue<WeakBox>
  private struct WeakBox: @unchecked Sendable { weak var object: Object? }

  init(_ object: Object) { reference = LockedValue(WeakBox(object: object)) }

  var isFreed: Bool { reference.withLock { $0.object == nil } }
}

/// Waits until `condition` holds, yielding in between, for things the code under test does
/// after the moment a test can observe (a worker task ending after it woke a waiter). Not a
/// timing assumption: it only bounds how long a correct implementation may take, so a broken
/// one fails instead of hanging. The bound is five minutes, under the tests' limit (see
/// `hangLimitMinutes`): in a full run on 2 cores every test shares the pool with all the others,
/// and a step that takes milliseconds alone can take a minute. Returns whether it held.
func eventually(
  within limit: Duration = .seconds(300), _ condition: @Sendable () -> Bool
) async -> Bool {
  let clock = ContinuousClock()
  let deadline = clock.now.advanced(by: limit)
  while !condition() {
    if clock.now >= deadline { return false }
    await Task.yield()
  }
  return true
}

/// Holds a value set after creation, for bodies that need their own operation (set before the
/// operation is added to a queue, so before the body can run).
final class Box<Value: Sendable>: Sendable {
  private let storage: LockedValue<Value?>
  init(_ value: Value? = nil) { storage = LockedValue(value) }
  var value: Value? {
    get { storage.withLock { $0 } }
    set { storage.withLock { $0 = newValue } }
  }
}

/// A counter safe to bump from any thread.
final class Counter: Sendable {
  private let count = LockedValue(0)
  init() {}
  func increment() { count.withLock { $0 += 1 } }
  var value: Int { count.withLock { $0 } }
}

/// A small seeded generator, so "random" stress scripts replay exactly.
typealias SeededGenerator = SplitMix64

/// An error thrown by test bodies.
struct TestFailure: Error, Equatable {
  var code = 0
}

// MARK: Peeks into the core (white-box, through @testable import)

/// The number of tasks currently suspended in `waitUntilFinished()`/`value`/`result` of
/// `operation`. Lets a test know a waiter is really registered before it cancels it.
func registeredWaiters(of operation: AnyQueueOperation) -> Int {
  Engine.read { $0.operations[operation.recordIndex].waiters.count }
}

/// The number of tasks suspended in `waitUntilAllOperationsAreFinished()` of `queue`.
func registeredAllFinishedWaiters(of queue: ActorQueue) -> Int {
  Engine.read { $0.queues[queue.index].allFinishedWaiters.count }
}

/// The submitters suspended in `addOperationWaitingForCapacity` of `queue` (lined up and
/// attached to their continuation), first served first: their operations' ids.
func suspendedSubmitters(of queue: ActorQueue) -> [OperationID] {
  Engine.read { scheduler in
    scheduler.suspendedSubmitters(of: queue.index).map { scheduler.operations[$0].id }
  }
}

/// The number of live subscribers of `queue.events`.
func queueSubscriberCount(of queue: ActorQueue) -> Int {
  Engine.read { $0.queues[queue.index].subscribers.count }
}

/// The OperationState sequence of one operation in a queue trace.
func states(of operation: AnyQueueOperation, in events: [QueueEvent]) -> [OperationState] {
  events.filter { $0.operationID == operation.id }.compactMap(\.operationState)
}

/// The operations (by id) in the order they started (entered `.executing`) in a trace.
func startOrder(in events: [QueueEvent]) -> [OperationID] {
  events.compactMap { $0.operationState == .executing ? $0.operationID : nil }
}

/// Makes the next worker that finds `queue` idle linger, as if its last idle spell had been
/// short (it still does not if another worker in the process lingers at that moment).
func primeLinger(_ queue: ActorQueue) {
  Engine.mutate { $0.queues[queue.index].linger.observe(idleSpell: .zero) }
}

/// Whether a worker of `queue` lingers now.
func workerLingers(on queue: ActorQueue) -> Bool {
  Engine.read { $0.queues[queue.index].machine.isLingering }
}

/// What a worker of a queue primed to linger did when the queue went idle.
enum LingerSeen: Sendable, Equatable {
  /// It lingers.
  case lingers
  /// It did not, though no other worker held the one place.
  case didNot
  /// It could not: another queue's worker lingers (read in the same hold).
  case placeTaken
}

/// ``LingerSeen`` for `queue` now, its worker and the process's lingerers read in one hold.
func lingerSeen(on queue: ActorQueue) -> LingerSeen {
  Engine.read {
    if $0.queues[queue.index].machine.isLingering { return .lingers }
    return $0.lingeringWorkers > 0 ? .placeTaken : .didNot
  }
}

/// The workers lingering in the process now (at most one).
func lingeringWorkers() -> Int {
  Engine.read { $0.lingeringWorkers }
}

/// Tells whether a queue's scheduling record has been freed (the `ActorQueue` and all its work
/// are gone), without keeping the queue alive.
struct QueueRecordProbe: Sendable {
  let reference: QueueReference

  init(_ queue: ActorQueue) {
    reference = queue.reference
  }

  var isFreed: Bool { !Engine.read { $0.isLive(reference) } }
}

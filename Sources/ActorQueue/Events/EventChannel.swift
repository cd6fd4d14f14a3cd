/// One subscriber's buffer of events: the producer pushes under the engine's lock (so every
/// subscriber sees events in the order they happened), the consumer pulls through
/// `AsyncStream(unfolding:)`.
///
/// Pull-based so that a bounded subscriber can be told what it lost: when the buffer is full
/// the oldest event is dropped and counted, and the consumer receives one "N dropped" event in
/// place of the dropped ones. A push costs an append under this channel's own lock, a leaf lock
/// taken inside the engine's; a consumer waiting for an event is resumed after the engine's
/// lock is released.
final class EventChannel<Element: Sendable>: Sendable {
  private struct State {
    var buffer: [Element] = []
    var head = 0
    var dropped = 0
    var lastDropped: Element?
    var isFinished = false
    var isAbandoned = false
    var consumer: CheckedContinuation<Element?, Never>?

    var isEmpty: Bool { head == buffer.count }

    mutating func popFirst() -> Element? {
      guard head < buffer.count else { return nil }
      let element = buffer[head]
      head += 1
      if head == buffer.count {
        buffer.removeAll(keepingCapacity: true)
        head = 0
      } else if head >= 256 && head * 2 >= buffer.count {
        buffer.removeFirst(head)
        head = 0
      }
      return element
    }
  }

  private let state = LockedValue(State())
  private let capacity: Int?
  private let droppedMarker: (@Sendable (_ count: Int, _ last: Element) -> Element)?

  /// - Parameters:
  ///   - capacity: `nil` keeps every event; otherwise at most this many are buffered.
  ///   - droppedMarker: makes the event that stands in for `count` dropped ones.
  init(
    capacity: Int? = nil,
    droppedMarker: (@Sendable (_ count: Int, _ last: Element) -> Element)? = nil
  ) {
    precondition(
      capacity.map { $0 >= 1 } ?? true,
      "Internal inconsistency: a bounded subscriber's capacity below 1 was not refused by its caller")
    self.capacity = capacity
    self.droppedMarker = droppedMarker
  }

  /// Delivers `element`. Returns `false` once the consumer is gone, so the producer can drop
  /// this channel.
  func push(_ element: Element, effects: inout SchedulerEffects) -> Bool {
    let waiting: CheckedContinuation<Element?, Never>?? = state.withLock { state in
      guard !state.isAbandoned, !state.isFinished else { return .some(nil) }
      if let consumer = state.consumer {
        state.consumer = nil
        return .some(consumer)
      }
      if let capacity, state.buffer.count - state.head >= capacity {
        state.lastDropped = state.popFirst()
        state.dropped += 1
      }
      state.buffer.append(element)
      return .none
    }
    switch waiting {
    case .none: return true
    case .some(.none): return false
    case .some(.some(let consumer)):
      effects.resume(consumer, returning: element)
      return true
    }
  }

  /// Ends the stream after the buffered events.
  func finish(effects: inout SchedulerEffects) {
    let waiting = state.withLock { state -> CheckedContinuation<Element?, Never>? in
      state.isFinished = true
      defer { state.consumer = nil }
      return state.consumer
    }
    if let waiting { effects.resume(waiting, returning: nil) }
  }

  /// The consumer went away: the stream was released, or its task cancelled.
  func abandon() {
    let waiting = state.withLock { state -> CheckedContinuation<Element?, Never>? in
      state.isAbandoned = true
      state.buffer = []
      state.head = 0
      defer { state.consumer = nil }
      return state.consumer
    }
    waiting?.resume(returning: nil)
  }

  /// The next event, or `nil` at the end. Returns `nil` when the consuming task is cancelled,
  /// whether before it suspended or while suspended.
  func next() async -> Element? {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
        let immediate: Element?? = state.withLock { state in
          if state.dropped > 0, let droppedMarker, let last = state.lastDropped {
            defer {
              state.dropped = 0
              state.lastDropped = nil
            }
            return .some(droppedMarker(state.dropped, last))
          }
          if let element = state.popFirst() { return .some(element) }
          if state.isFinished || state.isAbandoned { return .some(nil) }
          if state.consumer != nil {
            fatalError(
              "ActorQueue: two tasks are iterating one event stream at once. An AsyncStream has one "
                + "consumer: give each task its own stream (each access to `events` creates a new subscriber)."
            )
          }
          state.consumer = continuation
          return .none
        }
        if let immediate { continuation.resume(returning: immediate) }
      }
    } onCancel: {
      abandon()
    }
  }

  /// An `AsyncStream` over this channel. Releasing the stream (and its iterator) abandons the
  /// channel, so the producer stops buffering for a consumer that is gone.
  /// Every element pushed so far and not consumed, in order: for a recorder that never consumes
  /// (`ActorQueueTesting`'s), the whole history, read synchronously.
  func snapshot() -> [Element] {
    state.withLock { Array($0.buffer[$0.head...]) }
  }

  func makeStream() -> AsyncStream<Element> {
    let lifetime = Lifetime(self)
    return AsyncStream(unfolding: { await lifetime.channel.next() })
  }

  /// Owned by the stream's closure only: its deinit is the moment the stream is released.
  private final class Lifetime: Sendable {
    let channel: EventChannel<Element>
    init(_ channel: EventChannel<Element>) { self.channel = channel }
    deinit { channel.abandon() }
  }
}

public import ActorQueue

/// Records what happens in queues, losslessly and synchronously: every transition is in the
/// recording by the time the call that caused it returns, so a test reads it without waiting.
///
/// ```swift
/// let recorder = QueueRecorder(queue)
/// // … run operations …
/// #expect(recorder.maxConcurrency(in: queue) == 3)
/// ```
///
/// For tests: it keeps every event for as long as it lives.
public final class QueueRecorder: Sendable {
  private let recordings: [(queue: ObjectIdentifier, recording: EventRecording, keys: KeyRecording)]

  /// Starts recording `queues` (what happened before is not recorded).
  public init(_ queues: ActorQueue...) {
    recordings = queues.map { (ObjectIdentifier($0), $0.recordEvents(), $0.recordKeys()) }
  }

  /// Every event of the recorded queues, in the order it happened (by sequence number).
  public var events: [QueueEvent] {
    recordings.flatMap(\.recording.events).sorted { $0.sequence < $1.sequence }
  }

  private func events(of queue: ActorQueue) -> [QueueEvent] {
    guard let recording = recordings.first(where: { $0.queue == ObjectIdentifier(queue) })?.recording else {
      fatalError(
        "QueueRecorder: \(queue.name ?? "this queue") is not one of the recorded queues; "
          + "pass it to QueueRecorder(_:) with the others")
    }
    return recording.events
  }

  /// The most operations `queue` had executing at once while recorded.
  public func maxConcurrency(in queue: ActorQueue) -> Int {
    events(of: queue).map(\.executingCount).max() ?? 0
  }

  /// The most operations of the recorded queues that held `key` at once, in any one domain
  /// (``ExclusivityDomain``): `1` when exclusivity holds and some operation took it, `0` when
  /// none did. An operation holds its keys from its start until it ends or a retry sends it back
  /// to wait (paused at a checkpoint, it keeps them).
  ///
  /// ```swift
  /// #expect(recorder.maxConcurrency(holding: "migration") == 1)
  /// ```
  public func maxConcurrency(holding key: ExclusivityKey) -> Int {
    let number = ActorQueue.internedNumber(of: key)
    var holders: [UInt64: Set<OperationID>] = [:]  // by domain
    var most = 0
    for event in events {
      guard case .operation(let id, _, let state) = event.kind else { continue }
      switch state {
      case .executing:
        let domains = recordings.flatMap { $0.keys.locks(of: id) }.filter { $0.key == number }.map(\.domain)
        for domain in Set(domains) {
          holders[domain, default: []].insert(id)
          most = max(most, holders[domain]!.count)
        }
      case .pending, .finished, .failed, .cancelled:
        for domain in holders.keys { holders[domain]!.remove(id) }
      case .ready, .paused:
        break  // a paused body, and one resumed waiting for a slot, keep their keys
      }
    }
    return most
  }

  /// The names of `queue`'s operations in the order they first started (`nil` for an unnamed
  /// one).
  public func startOrder(in queue: ActorQueue) -> [String?] {
    var started: Set<OperationID> = []
    var order: [String?] = []
    for event in events(of: queue) {
      guard case .operation(let id, let name, .executing) = event.kind, started.insert(id).inserted else {
        continue
      }
      order.append(name)
    }
    return order
  }

  /// The states `operation` entered while recorded, in order, as its queue's events show them.
  public func states(of operation: AnyQueueOperation) -> [OperationState] {
    events.compactMap { event in
      if case .operation(operation.id, _, let state) = event.kind { state } else { nil }
    }
  }
}

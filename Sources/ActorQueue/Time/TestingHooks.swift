/// What the `ActorQueueTesting` library reads of the scheduler (package access: the same
/// package, no `@_spi`).

/// A queue's events as they happen, kept in full and read synchronously: every event is in it
/// by the time the call that caused it returns.
package final class EventRecording: Sendable {
  private let channel: EventChannel<QueueEvent>

  init(_ channel: EventChannel<QueueEvent>) {
    self.channel = channel
  }

  /// Every event of the queue since the recording began, in order.
  package var events: [QueueEvent] { channel.snapshot() }
}

/// The locks (key, domain) each operation of some queues started with, noted by the scheduler as
/// it emits the start (`ActorQueueTesting`'s `QueueRecorder.maxConcurrency(holding:)`): events
/// carry no keys.
package final class KeyRecording: Sendable {
  private let locks = LockedValue<[OperationID: [(domain: UInt64, key: UInt64)]]>([:])

  /// The locks `operation` started with (the latest start's; none if it had no keys).
  package func locks(of operation: OperationID) -> [(domain: UInt64, key: UInt64)] {
    locks.withLock { $0[operation] ?? [] }
  }

  func note(_ operation: OperationID, _ ids: [LockID]) {
    locks.withLock { $0[operation] = ids.map { ($0.domain, $0.key) } }
  }
}

/// What may still happen on the queues of one clock without the clock advancing.
package struct ClockQuiescence: Sendable {
  /// Operations executing (holding a slot, or their external work running) on a task that has
  /// run, by identifier and name, in no particular order, that may move by themselves: not
  /// parked (`parked`), and not awaiting only what cannot move (``Scheduler/awaitsSomethingStill(_:isStill:visiting:)``).
  package var moving: [(id: OperationID, name: String?)] = []
  /// Some queue on the clock has a ready operation it may start now, a worker starting, an
  /// operation claimed by a worker task the pool has not run yet, or an arbitration owed.
  package var mayStart = false
}

extension ActorQueue {
  /// Starts recording this queue's events (lossless; never consumed, so it grows: for tests).
  package nonisolated func recordEvents() -> EventRecording {
    let channel = EventChannel<QueueEvent>()
    Engine.mutate { $0.subscribe(channel, to: index) }
    return EventRecording(channel)
  }

  /// Starts noting the keys each operation of this queue starts with (for `QueueRecorder`).
  package nonisolated func recordKeys() -> KeyRecording {
    let recording = KeyRecording()
    Engine.mutate { $0.keyRecordings[index, default: []].append(recording) }
    return recording
  }

  /// The interned number of `key` (for `QueueRecorder`).
  package static func internedNumber(of key: ExclusivityKey) -> UInt64 { key.id }

  /// The operation whose body runs on the calling task, if any (O(queues + started bodies)).
  package static var currentOperationID: OperationID? {
    let address = currentTaskAddress()
    guard address != 0 else { return nil }
    return Engine.read { scheduler in
      scheduler.bodyRunning(onTask: address).map { scheduler.operations[$0.index].id }
    }
  }
}

extension QueueClock {
  /// What may still happen on this clock's queues without it advancing, given the operations
  /// whose bodies are `parked` (at a test gate, or asleep on a manual clock).
  package func quiescence(parked: Set<OperationID>) -> ClockQuiescence {
    Engine.read { $0.quiescence(ofClock: id, parked: parked) }
  }
}

extension Scheduler {
  /// See ``ClockQuiescence``. O(operations of the clock's queues), and what they await.
  func quiescence(ofClock clock: UInt64, parked: Set<OperationID> = []) -> ClockQuiescence {
    var result = ClockQuiescence()
    let isStill = { (index: Int) in parked.contains(self.operations[index].id) }
    var visiting = Set<Int>()
    for queue in queues.indices where queues[queue].isLive && queues[queue].clock == clock {
      let machine = queues[queue].machine
      // An arbitration owed and deferred (a call in slices) may yet start a parked operation.
      if machine.startingWorkers > 0 || (machine.readyCount > 0 && machine.canStartNow)
        || (needsArbitration && queues[queue].isArbitrated)
      {
        result.mayStart = true
      }
      var index = queues[queue].first
      while index >= 0 {
        if case .executing = operations[index].phase {
          // Claimed by a worker whose task the pool has not run: it waits to start, as a start does.
          if !(operations[index].worker?.hasBegun ?? true) {
            result.mayStart = true
          } else if !isStill(index) && !awaitsSomethingStill(index, isStill: isStill, visiting: &visiting) {
            result.moving.append((operations[index].id, operations[index].name))
          }
        }
        index = operations[index].nextInQueue
      }
    }
    return result
  }
}

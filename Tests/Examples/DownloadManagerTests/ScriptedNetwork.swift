import ActorQueue
import DownloadManagerKit
import TestSupport

/// A network the test answers chunk by chunk: a connection's `receive` waits until the test has
/// delivered a chunk to its file (`deliver`), or takes one delivered earlier. Nothing depends on
/// time: the test decides when each chunk arrives.
///
/// It records every connection (the offset it asked to start from) and counts the open ones.
final class ScriptedNetwork: Transport {
  let chunkSize: Int

  private struct Receiver {
    let token: Int
    let continuation: CheckedContinuation<Void, any Error>
  }

  private struct File {
    /// Chunks delivered and not received yet; `Int.max`: every chunk, at once.
    var credits = 0
    var receivers: [Receiver] = []
    /// How many times `receive` was called (each call asks for one chunk).
    var receiveCalls = 0
    var offsets: [Int] = []
  }

  private struct State {
    var files: [String: File] = [:]
    var open = 0
    var peak = 0
    /// Connection objects not deinitialised yet: a transfer's body holds its connection until it
    /// ends, so 0 means every body that connected has ended.
    var alive = 0
    var aliveWaiters: [CheckedContinuation<Void, Never>] = []
    var nextToken = 0
    /// Files whose next connection is answered 429, with the Retry-After.
    var busy: [String: Duration] = [:]
    /// Waiters for "`file` has asked for its `count`th chunk".
    var callWaiters: [(file: String, count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }

  private let state = LockedValue(State())

  init(chunkSize: Int = 1024) { self.chunkSize = chunkSize }

  func connect(to file: RemoteFile, from offset: Int) async throws -> any Connection {
    try Task.checkCancellation()
    if let retryAfter = state.withLock({ $0.busy.removeValue(forKey: file.name) }) {
      throw ServerBusy(retryAfter: retryAfter)
    }
    state.withLock { state in
      state.files[file.name, default: File()].offsets.append(offset)
      state.open += 1
      state.peak = max(state.peak, state.open)
      state.alive += 1
    }
    return ScriptedConnection(network: self, file: file.name)
  }

  // MARK: What the test does

  /// The next connection to `name` is answered "429 Too Many Requests" with `retryAfter`.
  func answerTooManyRequests(to name: String, retryAfter: Duration) {
    state.withLock { $0.busy[name] = retryAfter }
  }

  /// Lets `count` more chunks of `name` arrive.
  func deliver(_ count: Int = 1, to name: String) {
    let resumed = state.withLock { state -> [Receiver] in
      var file = state.files[name, default: File()]
      if file.credits != .max { file.credits += count }
      let taken = min(file.credits, file.receivers.count)
      let resumed = Array(file.receivers.prefix(taken))
      file.receivers.removeFirst(taken)
      if file.credits != .max { file.credits -= taken }
      state.files[name] = file
      return resumed
    }
    for receiver in resumed { receiver.continuation.resume() }
  }

  /// Lets every chunk of `name` arrive, now and later.
  func deliverAll(to name: String) {
    let resumed = state.withLock { state -> [Receiver] in
      state.files[name, default: File()].credits = .max
      defer { state.files[name]?.receivers = [] }
      return state.files[name]?.receivers ?? []
    }
    for receiver in resumed { receiver.continuation.resume() }
  }

  /// Lets every chunk of `names` arrive, now and later.
  func deliverAll(to names: [String]) {
    for name in names { deliverAll(to: name) }
  }

  /// Suspends until `name` has asked for its `count`th chunk: the transfer went past the
  /// checkpoint before that chunk (it did not pause there).
  func waitUntilReceiving(_ name: String, chunk count: Int) async {
    // Ends when the test is cancelled too (its time limit), so a wrong test fails, not hangs.
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let reached = state.withLock { state in
          if Task.isCancelled || state.files[name, default: File()].receiveCalls >= count { return true }
          state.callWaiters.append((name, count, continuation))
          return false
        }
        if reached { continuation.resume() }
      }
    } onCancel: {
      let waiters = state.withLock { state in
        defer { state.callWaiters = [] }
        return state.callWaiters.map(\.continuation)
      }
      for waiter in waiters { waiter.resume() }
    }
  }

  /// Suspends until every connection object is gone: every transfer that connected has ended
  /// and let go of its connection.
  func waitUntilEveryConnectionIsReleased() async {
    // Ends when the test is cancelled too (its time limit), so a wrong test fails, not hangs.
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let released = state.withLock { state in
          if Task.isCancelled || state.alive == 0 { return true }
          state.aliveWaiters.append(continuation)
          return false
        }
        if released { continuation.resume() }
      }
    } onCancel: {
      let waiters = state.withLock { state in
        defer { state.aliveWaiters = [] }
        return state.aliveWaiters
      }
      for waiter in waiters { waiter.resume() }
    }
  }

  // MARK: What the test reads

  /// The offsets `name`'s connections asked to start from, in order: `[0]` for a transfer that
  /// never paused; `[0, n]` for one that paused after `n` bytes and was resumed.
  func offsets(of name: String) -> [Int] { state.withLock { $0.files[name]?.offsets ?? [] } }

  var openConnections: Int { state.withLock { $0.open } }

  /// The most connections open at once since the start or ``resetPeak()``.
  var peakOpenConnections: Int { state.withLock { $0.peak } }

  func resetPeak() { state.withLock { $0.peak = $0.open } }

  // MARK: Connections

  fileprivate func receive(_ name: String, upTo limit: Int) async throws -> Int {
    let token = state.withLock { state in
      state.nextToken += 1
      return state.nextToken
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        let (ready, called) = state.withLock {
          state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
          var file = state.files[name, default: File()]
          file.receiveCalls += 1
          let calls = file.receiveCalls
          var called: [CheckedContinuation<Void, Never>] = []
          state.callWaiters.removeAll { waiter in
            guard waiter.file == name, waiter.count <= calls else { return false }
            called.append(waiter.continuation)
            return true
          }
          if Task.isCancelled {
            state.files[name] = file
            return (.failure(CancellationError()), called)
          }
          if file.credits > 0 {
            if file.credits != .max { file.credits -= 1 }
            state.files[name] = file
            return (.success(()), called)
          }
          file.receivers.append(Receiver(token: token, continuation: continuation))
          state.files[name] = file
          return (nil, called)
        }
        for waiter in called { waiter.resume() }
        if let ready { continuation.resume(with: ready) }
      }
    } onCancel: {
      let receiver = state.withLock { state -> Receiver? in
        guard let index = state.files[name]?.receivers.firstIndex(where: { $0.token == token }) else {
          return nil
        }
        return state.files[name]?.receivers.remove(at: index)
      }
      receiver?.continuation.resume(throwing: CancellationError())
    }
    return min(chunkSize, limit)
  }

  fileprivate func closed() { state.withLock { $0.open -= 1 } }

  fileprivate func released() {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.alive -= 1
      guard state.alive == 0 else { return [] }
      defer { state.aliveWaiters = [] }
      return state.aliveWaiters
    }
    for waiter in waiters { waiter.resume() }
  }
}

/// A connection of a ``ScriptedNetwork``.
private final class ScriptedConnection: Connection {
  private let network: ScriptedNetwork
  private let file: String
  private let isOpen = LockedValue(true)

  init(network: ScriptedNetwork, file: String) {
    self.network = network
    self.file = file
  }

  deinit { network.released() }

  func receive(upTo limit: Int) async throws -> Int {
    precondition(isOpen.withLock { $0 }, "receive on a closed connection")
    return try await network.receive(file, upTo: limit)
  }

  func close() async {
    let wasOpen = isOpen.withLock { open in
      defer { open = false }
      return open
    }
    if wasOpen { network.closed() }
  }
}

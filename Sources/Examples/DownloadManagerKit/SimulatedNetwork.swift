import ActorQueue
import Synchronization

/// A network without a network: every chunk arrives `chunkDuration` after it was asked for,
/// on `clock`. It counts its open connections, so a caller can check that no more than the
/// limit transfer at once, and records when each was asked for; it can answer a 429, as a busy
/// host does.
public final class SimulatedNetwork: Transport {
  /// The bytes per chunk (the last chunk of a file may be shorter).
  public let chunkSize: Int
  /// How long each chunk takes.
  public let chunkDuration: Duration
  private let clock: any Clock<Duration>
  private let counts = ConnectionCounts()
  // The package's pthread lock, not `Synchronization.Mutex`: its tests run under ThreadSanitizer,
  // which cannot see a contended `Mutex` hand-over on Linux.
  private let requests = LockedValue(Requests())

  private struct Requests {
    var instants: [ContinuousClock.Instant] = []
    var busyAnswers = 0
    var retryAfter = Duration.zero
  }

  /// A network that sends `chunkSize` bytes every `chunkDuration` on each connection.
  public init(chunkSize: Int, chunkDuration: Duration, clock: any Clock<Duration> = ContinuousClock()) {
    precondition(chunkSize > 0, "a chunk has at least one byte")
    self.chunkSize = chunkSize
    self.chunkDuration = chunkDuration
    self.clock = clock
  }

  /// Opens a connection (the offset changes nothing here: any chunk takes as long).
  public func connect(to file: RemoteFile, from offset: Int) async throws -> any Connection {
    try Task.checkCancellation()
    let busy = requests.withLock { requests -> ServerBusy? in
      requests.instants.append(ContinuousClock.now)
      guard requests.busyAnswers > 0 else { return nil }
      requests.busyAnswers -= 1
      return ServerBusy(retryAfter: requests.retryAfter)
    }
    if let busy { throw busy }
    counts.opened()
    return SimulatedConnection(network: self)
  }

  /// The connections open now.
  public var openConnections: Int { counts.open }

  /// The most connections open at once since the network was created or ``resetPeak()``.
  public var peakOpenConnections: Int { counts.peak }

  /// When each connection was asked for (those answered 429 included), in order.
  public var requestInstants: [ContinuousClock.Instant] { requests.withLock { $0.instants } }

  /// The next `count` connections asked for are answered 429 with `retryAfter`.
  public func answerTooManyRequests(_ count: Int, retryAfter: Duration) {
    requests.withLock { requests in
      requests.busyAnswers = count
      requests.retryAfter = retryAfter
    }
  }

  /// Starts counting ``peakOpenConnections`` again from the connections open now.
  public func resetPeak() { counts.resetPeak() }

  fileprivate func receive(upTo limit: Int) async throws -> Int {
    try await clock.sleep(for: chunkDuration)
    return min(chunkSize, limit)
  }

  fileprivate func closed() { counts.closed() }
}

/// A connection of a ``SimulatedNetwork``.
private final class SimulatedConnection: Connection {
  private let network: SimulatedNetwork
  private let isOpen = Atomic<Bool>(true)

  init(network: SimulatedNetwork) { self.network = network }

  func receive(upTo limit: Int) async throws -> Int {
    precondition(isOpen.load(ordering: .acquiring), "receive on a closed connection")
    return try await network.receive(upTo: limit)
  }

  func close() async {
    if isOpen.exchange(false, ordering: .acquiringAndReleasing) { network.closed() }
  }
}

/// How many connections are open, and the most that were at once.
final class ConnectionCounts: Sendable {
  private let current = Atomic<Int>(0)
  private let highest = Atomic<Int>(0)

  init() {}

  var open: Int { current.load(ordering: .acquiring) }
  var peak: Int { highest.load(ordering: .acquiring) }

  func opened() {
    let now = current.add(1, ordering: .acquiringAndReleasing).newValue
    var seen = highest.load(ordering: .relaxed)
    while now > seen {
      let (exchanged, original) = highest.compareExchange(
        expected: seen, desired: now, ordering: .acquiringAndReleasing)
      if exchanged { break }
      seen = original
    }
  }

  func closed() { current.subtract(1, ordering: .acquiringAndReleasing) }

  func resetPeak() { highest.store(current.load(ordering: .acquiring), ordering: .releasing) }
}

public import ActorQueue

/// A download manager: at most N transfers at once, each of which can be paused and resumed
/// (a paused one gives its slot to the next waiting download), pause all / resume all, and a
/// limit that can change while it runs, honoured the way a user expects.
///
/// The download manager apps build, on ``ActorQueue``. With `OperationQueue`, a
/// "paused" download keeps its slot, so the downloads waiting behind it never start, and
/// lowering the limit from 10 to 5 leaves 10 running (it only governs later starts). Here:
/// - each transfer is an operation whose body calls ``ActorQueue/checkpoint(isolation:onPause:onResume:)``
///   between chunks: pausing it there closes its connection (keeping the bytes received as
///   resume data) and frees its slot; resuming it waits for a slot, then reconnects from
///   where it stopped;
/// - ``pauseAll()`` / ``resumeAll()`` are the queue's `pauseAllOperations()` /
///   `resumeAllOperations()`;
/// - ``setMaxConcurrentTransfers(_:)`` raises the limit with the queue's setter (waiting
///   downloads start at once) and lowers it with `setMaxConcurrentOperationCount(_:pausingExcess:)`,
///   so the most recently started transfers beyond the new limit pause at their next chunk
///   boundary, and continue by themselves as slots free; those the user paused stay paused;
/// - a host's rate limit is a ``RateLimiter`` given to the manager (and to whatever else calls
///   that host): each transfer's start takes a permit, and a 429 answer penalizes the limiter for
///   its Retry-After, so nothing reaches the host until then, and the transfer is retried.
///
/// What the manager knows of each download comes from the queue's events, in order (states),
/// and from the transfers themselves (bytes, connection): the model a download screen would
/// show. ``waitUntil(_:)`` waits for that model to reach a condition, which is how the demo and
/// the tests follow it without sleeping.
public actor DownloadManager {
  private let queue: ActorQueue
  private let transport: any Transport
  private let host: RateLimiter?
  private let log: @Sendable (String) -> Void

  private struct Entry {
    let download: Download
    let operation: QueueOperation<Int>
    /// The operation's state as of its latest event.
    var state: OperationState = .pending
    var hasStarted = false
    var pausedByUser = false
    var bytesReceived = 0
    var isConnected = false
  }

  private var entries: [Entry] = []
  private var entryByOperation: [OperationID: Int] = [:]
  private var limit: Int
  private var executingCount = 0
  private struct Waiter {
    let token: Int
    let condition: @Sendable (Snapshot) -> Bool
    let continuation: CheckedContinuation<Void, Never>
  }

  private var waiters: [Waiter] = []
  private var nextWaiterToken = 0

  /// A manager that transfers at most `maxConcurrentTransfers` files at once over `transport`,
  /// starts them no faster than `host` allows (a limiter the app may share with its other
  /// queues that call the same host), and tells `log` what happens, line by line.
  public init(
    maxConcurrentTransfers: Int, transport: any Transport, host: RateLimiter? = nil,
    log: @escaping @Sendable (String) -> Void = { _ in }
  ) {
    let queue = ActorQueue(
      name: "downloads", maxConcurrentOperationCount: maxConcurrentTransfers, clock: host?.clock ?? .system)
    if let host { queue.rateLimiters = [host] }
    self.queue = queue
    self.host = host
    self.transport = transport
    self.log = log
    limit = maxConcurrentTransfers
    // Subscribed before any download is added, so no event is missed. The stream ends once the
    // manager (and with it the queue) is gone and the last transfer has ended.
    let events = queue.events
    Task { [weak self] in
      for await event in events {
        guard let self else { return }
        await self.apply(event)
      }
    }
  }

  /// A manager that goes away cancels its downloads: a paused one would otherwise wait forever
  /// for a `resume()` that nobody can call any more (a paused operation stays paused until its
  /// handle or its queue resumes it, and both were the manager's).
  deinit {
    queue.cancelAllOperations()
  }

  // MARK: Downloads

  /// Adds a download of `file`: it starts at once if fewer than the limit transfer, and waits
  /// otherwise.
  @discardableResult
  public func add(_ file: RemoteFile) -> Download {
    let download = Download(id: entries.count, file: file)
    let (transport, host, manager) = (transport, host, WeakManager(self))
    let operation = queue.addOperation(name: file.name, traits: [.retry(Self.afterServerBusy)]) {
      try await Self.transfer(download, over: transport, host: host, reportingTo: manager)
    }
    entryByOperation[operation.id] = entries.count
    entries.append(Entry(download: download, operation: operation))
    return download
  }

  /// Pauses `download`: a waiting one does not start until resumed; a transferring one pauses at
  /// its next chunk boundary, closing its connection and freeing its slot for the next waiting
  /// download.
  public func pause(_ download: Download) {
    entries[download.id].pausedByUser = true
    entries[download.id].operation.pause()
    changed()
  }

  /// Resumes `download`: it waits for a free slot (ahead of the downloads added after it),
  /// then reconnects from the bytes it had received.
  public func resume(_ download: Download) {
    entries[download.id].pausedByUser = false
    entries[download.id].operation.resume()
    changed()
  }

  /// Cancels `download`, in whatever phase it is (paused included).
  public func cancel(_ download: Download) {
    entries[download.id].operation.cancel()
  }

  /// Pauses every download: the transferring ones at their next chunk boundary, the waiting
  /// ones at once. Downloads added afterwards are not paused.
  public func pauseAll() {
    for index in entries.indices where !entries[index].state.isTerminal { entries[index].pausedByUser = true }
    queue.pauseAllOperations()
    changed()
  }

  /// Resumes every download, whether the user paused it or it paused for a lowered limit.
  public func resumeAll() {
    for index in entries.indices { entries[index].pausedByUser = false }
    queue.resumeAllOperations()
    changed()
  }

  /// Cancels every download (the user cleared the list).
  public func cancelAll() {
    queue.cancelAllOperations()
  }

  // MARK: The limit

  /// The most downloads that transfer at once.
  public var maxConcurrentTransfers: Int { queue.maxConcurrentOperationCount }

  /// Changes the limit, live, as a user expects in both directions:
  /// - raised: waiting downloads start at once (the queue's setter);
  /// - lowered: the transfers beyond the new limit (the most recently started first) pause at
  ///   their next chunk boundary, so that no more than `limit` transfer from then on; each
  ///   continues by itself as soon as a slot is free. A download the user paused stays paused.
  ///
  /// The property setter alone would leave the excess running until it ends, as
  /// `OperationQueue` does (only later starts obey it).
  public func setMaxConcurrentTransfers(_ limit: Int) {
    if limit >= queue.maxConcurrentOperationCount {
      queue.maxConcurrentOperationCount = limit
    } else {
      queue.setMaxConcurrentOperationCount(limit, pausingExcess: true)
    }
  }

  // MARK: Observing

  /// Every download's status, as of the latest event and report from the transfers.
  public var snapshot: Snapshot {
    Snapshot(
      maxConcurrentTransfers: limit, executingCount: executingCount,
      downloads: entries.map { entry in
        DownloadStatus(
          download: entry.download, phase: Self.phase(of: entry), bytesReceived: entry.bytesReceived,
          isConnected: entry.isConnected)
      })
  }

  /// Suspends until the snapshot satisfies `condition` (at once if it does now), or until the
  /// calling task is cancelled. Checked after each event and each report of a transfer.
  public func waitUntil(_ condition: @escaping @Sendable (Snapshot) -> Bool) async {
    if condition(snapshot) { return }
    nextWaiterToken += 1
    let token = nextWaiterToken
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        // Runs on this actor, before any `stopWaiting` the cancellation handler schedules.
        if Task.isCancelled { return continuation.resume() }
        waiters.append(Waiter(token: token, condition: condition, continuation: continuation))
      }
    } onCancel: {
      Task { await self.stopWaiting(token) }
    }
  }

  private func stopWaiting(_ token: Int) {
    guard let index = waiters.firstIndex(where: { $0.token == token }) else { return }
    waiters.remove(at: index).continuation.resume()
  }

  /// The bytes `download` received, once it has finished; throws `CancellationError` if it was
  /// cancelled, or the transport's error.
  public func bytes(of download: Download) async throws -> Int {
    try await entries[download.id].operation.value
  }

  /// Suspends until every download added so far has ended and the snapshot shows it.
  public func waitUntilAllFinished() async {
    await queue.waitUntilAllOperationsAreFinished()
    await waitUntil { $0.unfinishedCount == 0 }
  }

  private static func phase(of entry: Entry) -> DownloadPhase {
    switch entry.state {
    case .finished: .finished
    case .failed: .failed
    case .cancelled: .cancelled
    case .executing: entry.pausedByUser ? .pausing : .transferring
    case .paused: entry.pausedByUser ? .paused : .pausedForLimit
    case .pending, .ready: entry.pausedByUser ? .paused : .waiting
    }
  }

  private func changed() {
    guard !waiters.isEmpty else { return }
    let snapshot = snapshot
    var waiting: [Waiter] = []
    for waiter in waiters {
      if waiter.condition(snapshot) { waiter.continuation.resume() } else { waiting.append(waiter) }
    }
    waiters = waiting
  }

  // MARK: Events

  private func apply(_ event: QueueEvent) {
    executingCount = event.executingCount
    limit = event.maxConcurrentOperationCount
    let slots = "(\(event.executingCount) transferring, limit \(event.maxConcurrentOperationCount))"
    switch event.kind {
    case .operation(let id, _, let state):
      guard let index = entryByOperation[id] else { return }
      let previous = entries[index].state
      entries[index].state = state
      let entry = entries[index]
      let name = entry.download.file.name
      switch state {
      case .executing where !entry.hasStarted:
        entries[index].hasStarted = true
        log("▶ \(name) starts \(slots)")
      case .executing:
        log("▶ \(name) continues from \(Self.size(entry.bytesReceived)) \(slots)")
      case .paused:
        let why = entry.pausedByUser ? "by you" : "for the lower limit, continues when a slot is free"
        log("⏸ \(name) paused \(why); its slot is free \(slots)")
      case .ready where previous == .paused:
        log("⏵ \(name) resumed: waits for a free slot \(slots)")
      case .finished: log("✓ \(name) finished, \(Self.size(entry.bytesReceived)) \(slots)")
      case .cancelled: log("✗ \(name) cancelled \(slots)")
      case .failed: log("✗ \(name) failed \(slots)")
      case .pending, .ready: break
      }
    case .limitChanged(let limit):
      log("limit: at most \(limit) at once \(slots)")
    case .suspended, .resumed, .eventsDropped, .detail:
      break
    }
    changed()
  }

  // MARK: Transfers

  /// The manager, as a transfer reaches it: weakly, so that a paused transfer does not keep
  /// its manager alive (the manager's `deinit` is what cancels it).
  private struct WeakManager: Sendable {
    weak var manager: DownloadManager?
    init(_ manager: DownloadManager) { self.manager = manager }

    func connected(_ download: Download, at offset: Int) async {
      await manager?.connected(download, at: offset)
    }
    func disconnected(_ download: Download, pausing: Bool) async {
      await manager?.disconnected(download, pausing: pausing)
    }
    func received(_ download: Download, total: Int) async {
      await manager?.received(download, total: total)
    }
    func refused(_ download: Download, _ busy: ServerBusy) async {
      await manager?.refused(download, busy)
    }
  }

  /// A transfer the host answered 429 is tried again: its next attempt takes a permit of the
  /// host's limiter, so it waits for the penalty to end. No backoff of its own: the limiter's is
  /// the host's.
  private static let afterServerBusy = RetryPolicy.attempts(
    5, backoff: .constant(.zero), jitter: .none, retryIf: { $0 is ServerBusy })

  /// The body of a download's operation: receives the file chunk by chunk, and between two
  /// chunks reaches a checkpoint, where it pauses if asked to (closing its connection and
  /// keeping the bytes received) or stops if cancelled.
  private static func transfer(
    _ download: Download, over transport: any Transport, host: RateLimiter?, reportingTo manager: WeakManager
  ) async throws -> Int {
    let file = download.file
    var received = 0  // the resume data: a resumed transfer asks for the rest from here
    var connection: any Connection
    do {
      connection = try await transport.connect(to: file, from: received)
    } catch let busy as ServerBusy {
      host?.penalize(for: busy.retryAfter)  // nothing starts through the host before then
      await manager.refused(download, busy)
      throw busy  // retried: the next attempt waits for the host's permits
    }
    await manager.connected(download, at: received)
    do {
      while received < file.size {
        try await ActorQueue.checkpoint(
          onPause: {  // still holding the slot: the limit also bounds the open connections
            await connection.close()
            await manager.disconnected(download, pausing: true)
          },
          onResume: {  // a slot again: reconnect where it stopped
            connection = try await transport.connect(to: file, from: received)
            await manager.connected(download, at: received)
          })
        received += try await connection.receive(upTo: file.size - received)
        await manager.received(download, total: received)
      }
    } catch {
      await connection.close()
      await manager.disconnected(download, pausing: false)
      throw error
    }
    await connection.close()
    await manager.disconnected(download, pausing: false)
    return received
  }

  private func refused(_ download: Download, _ busy: ServerBusy) {
    log("  \(download): the host answered \(busy); it is retried when the host's limiter allows")
    changed()
  }

  private func connected(_ download: Download, at offset: Int) {
    entries[download.id].isConnected = true
    if offset > 0 { log("  \(download) reconnects, asking for the rest from \(Self.size(offset))") }
    changed()
  }

  private func disconnected(_ download: Download, pausing: Bool) {
    guard entries[download.id].isConnected else { return }
    entries[download.id].isConnected = false
    let bytes = entries[download.id].bytesReceived
    if pausing { log("  \(download) closes its connection, keeps \(Self.size(bytes)) to resume from") }
    changed()
  }

  private func received(_ download: Download, total: Int) {
    entries[download.id].bytesReceived = total
    changed()
  }

  /// `1.5 MiB`, `384 KiB`.
  static func size(_ bytes: Int) -> String {
    if bytes >= 1 << 20 {
      let tenths = (bytes * 10) >> 20
      return "\(tenths / 10).\(tenths % 10) MiB"
    }
    return "\(bytes >> 10) KiB"
  }
}

import ActorQueue
import ActorQueueTesting
import DownloadManagerKit
import TestSupport
import Testing

/// A manager over a scripted network, and its downloads added in order: `names` of `chunks`
/// chunks each.
private func start(
  limit: Int, _ names: [String], chunks: Int = 4
) async -> (DownloadManager, ScriptedNetwork, [Download]) {
  let network = ScriptedNetwork()
  let manager = DownloadManager(maxConcurrentTransfers: limit, transport: network)
  var downloads: [Download] = []
  for name in names {
    downloads.append(await manager.add(RemoteFile(name: name, size: chunks * network.chunkSize)))
  }
  return (manager, network, downloads)
}

private func names(_ prefix: String, _ range: Range<Int>) -> [String] { range.map { "\(prefix)\($0)" } }

/// Lets everything arrive, waits for the end, and checks every file arrived whole.
private func finishAll(_ manager: DownloadManager, _ network: ScriptedNetwork, _ downloads: [Download])
  async throws
{
  network.deliverAll(to: downloads.map(\.file.name))
  await manager.waitUntilAllFinished()
  for download in downloads {
    #expect(try await manager.bytes(of: download) == download.file.size, "\(download)")
  }
  #expect(network.openConnections == 0)
}

@Suite("Download manager", .timeLimit(.minutes(hangLimitMinutes)))
struct DownloadManagerTests {
  @Test("At most N transfer: the others wait, and start in order as transfers finish")
  func limitHolds() async throws {
    let (manager, network, downloads) = await start(limit: 3, ["a", "b", "c", "d", "e"])
    await manager.waitUntil { $0.count(.transferring) == 3 && $0.downloads.filter(\.isConnected).count == 3 }
    var snapshot = await manager.snapshot
    #expect(snapshot.names(.transferring) == ["a", "b", "c"])
    #expect(snapshot.names(.waiting) == ["d", "e"])

    network.deliverAll(to: "b")
    await manager.waitUntil { $0["b"]?.phase == .finished && $0["d"]?.phase == .transferring }
    snapshot = await manager.snapshot
    #expect(snapshot.names(.waiting) == ["e"])
    #expect(snapshot.executingCount == 3)
    try await finishAll(manager, network, downloads)
    #expect(network.peakOpenConnections == 3)
  }

  @Test(
    "Field scenario, limit 5: two downloading, pause one → 4 more start; resumed, it waits for a slot, then goes on from its resume data"
  )
  func pauseHandsTheSlotOver() async throws {
    let (manager, network, first) = await start(limit: 5, ["a", "b"])
    let a = first[0]
    let chunk = network.chunkSize
    await manager.waitUntil { $0.count(.transferring) == 2 && $0.downloads.allSatisfy(\.isConnected) }

    await manager.pause(a)
    #expect(await manager.snapshot[a].phase == .pausing, "it pauses at its next chunk boundary")
    network.deliver(to: "a")
    await manager.waitUntil { $0[a].phase == .paused }
    var snapshot = await manager.snapshot
    #expect(!snapshot[a].isConnected, "paused: its connection is closed")
    #expect(snapshot[a].bytesReceived == chunk, "its resume data is kept")
    #expect(snapshot.executingCount == 1)

    var more: [Download] = []
    for name in ["c", "d", "e", "f", "g"] {
      more.append(await manager.add(RemoteFile(name: name, size: 4 * chunk)))
    }
    await manager.waitUntil { $0.count(.transferring) == 5 && $0.isSettled }
    snapshot = await manager.snapshot
    #expect(snapshot.names(.transferring) == ["b", "c", "d", "e", "f"], "4 more started: a holds no slot")
    #expect(snapshot.names(.waiting) == ["g"])
    #expect(network.openConnections == 5)

    await manager.resume(a)
    await manager.waitUntil { $0[a].phase == .waiting }
    #expect(await manager.snapshot.executingCount == 5, "resumed, it waits: 5 transfer")

    network.deliverAll(to: "c")
    await manager.waitUntil { $0[a].phase == .transferring }
    snapshot = await manager.snapshot
    #expect(snapshot["c"]?.phase == .finished)
    #expect(snapshot.names(.waiting) == ["g"], "a resumed before g, added later, started")
    #expect(network.offsets(of: "a") == [0, chunk], "it reconnected from the bytes it had")
    try await finishAll(manager, network, first + more)
    #expect(network.peakOpenConnections == 5)
  }

  @Test(
    "Lowering 10 → 5 with the excess paused: exactly 5 transfer, and the paused ones continue by themselves, before the waiting ones, as others finish"
  )
  func lowerPausesTheExcess() async throws {
    let (manager, network, downloads) = await start(limit: 10, names("t", 0..<12))
    await manager.waitUntil {
      $0.count(.transferring) == 10 && $0.downloads.filter(\.isConnected).count == 10
    }

    await manager.setMaxConcurrentTransfers(5)
    #expect(await manager.maxConcurrentTransfers == 5)
    for name in names("t", 0..<10) { network.deliver(to: name) }
    await manager.waitUntil { $0.count(.pausedForLimit) == 5 && $0.executingCount == 5 }
    var snapshot = await manager.snapshot
    #expect(snapshot.names(.pausedForLimit) == names("t", 5..<10), "the most recently started paused")
    #expect(snapshot.names(.transferring) == names("t", 0..<5))
    #expect(snapshot.names(.waiting) == ["t10", "t11"])
    #expect(network.openConnections == 5)
    network.resetPeak()

    for index in 0..<5 {
      network.deliverAll(to: "t\(index)")
      await manager.waitUntil {
        $0["t\(index)"]?.phase == .finished && $0["t\(5 + index)"]?.phase == .transferring
      }
      snapshot = await manager.snapshot
      #expect(snapshot.executingCount == 5)
      #expect(snapshot.names(.waiting) == ["t10", "t11"], "paused ones go first: they were added first")
    }
    #expect(network.offsets(of: "t7") == [0, network.chunkSize])
    try await finishAll(manager, network, downloads)
    #expect(network.peakOpenConnections == 5, "never more than 5 once the excess had paused")
  }

  @Test(
    "3 → 10 → 5: raising starts the waiting at once; lowering pauses the excess; a download the user paused stays paused until resumed, and resume all resumes both kinds"
  )
  func liveLimitChanges() async throws {
    let (manager, network, downloads) = await start(limit: 3, names("t", 0..<12))
    await manager.waitUntil { $0.count(.transferring) == 3 }

    await manager.setMaxConcurrentTransfers(10)
    await manager.waitUntil { $0.count(.transferring) == 10 }
    #expect(await manager.snapshot.names(.transferring) == names("t", 0..<10))

    let t1 = downloads[1]
    await manager.pause(t1)
    network.deliver(to: "t1")
    await manager.waitUntil { $0[t1].phase == .paused && $0["t10"]?.phase == .transferring }

    await manager.setMaxConcurrentTransfers(5)
    for name in ["t0"] + names("t", 2..<11) { network.deliver(to: name) }
    await manager.waitUntil { $0.executingCount == 5 && $0.count(.pausedForLimit) == 5 }
    var snapshot = await manager.snapshot
    #expect(snapshot.names(.transferring) == ["t0", "t2", "t3", "t4", "t5"])
    #expect(snapshot.names(.pausedForLimit) == names("t", 6..<11))
    #expect(snapshot.names(.paused) == ["t1"])
    #expect(snapshot.names(.waiting) == ["t11"])

    network.deliverAll(to: "t0")
    await manager.waitUntil { $0["t0"]?.phase == .finished && $0["t6"]?.phase == .transferring }
    #expect(await manager.snapshot[t1].phase == .paused, "the user paused it: it stays paused")

    await manager.resumeAll()
    await manager.waitUntil { $0.count(.pausedForLimit) == 0 && $0[t1].phase == .waiting }
    snapshot = await manager.snapshot
    #expect(snapshot.names(.waiting) == ["t1", "t7", "t8", "t9", "t10", "t11"])
    #expect(snapshot.executingCount == 5)

    network.deliverAll(to: "t2")
    await manager.waitUntil { $0[t1].phase == .transferring }
    #expect(await manager.snapshot.names(.waiting) == names("t", 7..<12), "t1 was added first: it goes first")
    try await finishAll(manager, network, downloads)
  }

  @Test(
    "Pause all closes every connection and frees every slot, holding the waiting ones; downloads added later start; resume all brings the rest back"
  )
  func pauseAllResumeAll() async throws {
    let (manager, network, downloads) = await start(limit: 2, ["a", "b", "c", "d"])
    await manager.waitUntil { $0.count(.transferring) == 2 }

    await manager.pauseAll()
    var snapshot = await manager.snapshot
    #expect(snapshot.names(.pausing) == ["a", "b"])
    #expect(snapshot.names(.paused) == ["c", "d"])
    network.deliver(to: "a")
    network.deliver(to: "b")
    await manager.waitUntil { $0.executingCount == 0 && $0.count(.paused) == 4 }
    #expect(network.openConnections == 0)
    #expect(network.offsets(of: "c").isEmpty && network.offsets(of: "d").isEmpty, "held: never started")

    let e = await manager.add(RemoteFile(name: "e", size: 4 * network.chunkSize))
    await manager.waitUntil { $0[e].phase == .transferring }

    await manager.resumeAll()
    await manager.waitUntil { $0.count(.paused) == 0 && $0.isSettled }
    snapshot = await manager.snapshot
    #expect(snapshot.names(.transferring) == ["a", "e"], "one free slot: the first added takes it")
    #expect(snapshot.names(.waiting) == ["b", "c", "d"])
    try await finishAll(manager, network, downloads + [e])
    #expect(network.offsets(of: "b") == [0, network.chunkSize])
  }

  @Test("Lowering and raising again before any chunk boundary withdraws the requests: nothing pauses")
  func lowerThenRaiseWithdraws() async throws {
    let (manager, network, downloads) = await start(limit: 4, ["a", "b", "c", "d"])
    await manager.waitUntil { $0.count(.transferring) == 4 }
    await manager.setMaxConcurrentTransfers(2)
    await manager.setMaxConcurrentTransfers(4)
    for name in ["a", "b", "c", "d"] {
      network.deliver(to: name)
      await network.waitUntilReceiving(name, chunk: 2)  // past the checkpoint after chunk 1
    }
    let snapshot = await manager.snapshot
    #expect(snapshot.count(.transferring) == 4)
    #expect(snapshot.count(.pausedForLimit) == 0)
    #expect(["a", "b", "c", "d"].allSatisfy { network.offsets(of: $0) == [0] }, "no connection was closed")
    try await finishAll(manager, network, downloads)
  }

  @Test("Pausing a waiting download holds it: the ones behind it start first")
  func pauseWaitingHoldsIt() async throws {
    let (manager, network, downloads) = await start(limit: 1, ["a", "b", "c"])
    await manager.waitUntil { $0["a"]?.phase == .transferring }
    await manager.pause(downloads[1])
    network.deliverAll(to: "a")
    await manager.waitUntil { $0["c"]?.phase == .transferring }
    #expect(await manager.snapshot["b"]?.phase == .paused)
    #expect(network.offsets(of: "b").isEmpty)
    network.deliverAll(to: "c")
    await manager.waitUntil { $0["c"]?.phase == .finished }
    #expect(await manager.snapshot["b"]?.phase == .paused, "a free slot does not start a held download")
    await manager.resume(downloads[1])
    try await finishAll(manager, network, downloads)
  }

  @Test(
    "A manager that goes away cancels its downloads, the paused ones included: no transfer is left waiting for a resume"
  )
  func droppedManagerCancelsItsTransfers() async {
    let network = ScriptedNetwork()
    weak var released: DownloadManager?
    do {
      let manager = DownloadManager(maxConcurrentTransfers: 2, transport: network)
      released = manager
      let a = await manager.add(RemoteFile(name: "a", size: 4 * network.chunkSize))
      await manager.add(RemoteFile(name: "b", size: 4 * network.chunkSize))
      await manager.add(RemoteFile(name: "c", size: 4 * network.chunkSize))
      await manager.pause(a)
      network.deliver(to: "a")
      await manager.waitUntil { $0[a].phase == .paused && $0["c"]?.phase == .transferring }
    }
    // a waits at its checkpoint, b and c for a chunk: only the manager's deinit can end them.
    await network.waitUntilEveryConnectionIsReleased()
    #expect(network.openConnections == 0)
    #expect(released == nil)
  }

  @Test(
    "Cancelling a paused download ends it at once, holding no slot; cancelling a transferring one stops it")
  func cancelPausedAndTransferring() async throws {
    let (manager, network, downloads) = await start(limit: 2, ["a", "b", "c"])
    let (a, b) = (downloads[0], downloads[1])
    await manager.waitUntil { $0.count(.transferring) == 2 }
    await manager.pause(a)
    network.deliver(to: "a")
    await manager.waitUntil { $0[a].phase == .paused && $0["c"]?.phase == .transferring }

    await manager.cancel(a)
    await manager.waitUntil { $0[a].phase == .cancelled }
    await #expect(throws: CancellationError.self) { try await manager.bytes(of: a) }
    #expect(network.offsets(of: "a") == [0], "cancelled while paused: never reconnected")

    await manager.cancel(b)  // waits for its next chunk: the connection sees the cancellation
    await manager.waitUntil { $0[b].phase == .cancelled }
    #expect(await manager.snapshot[b].isConnected == false)
    #expect(network.openConnections == 1)
    try await finishAll(manager, network, [downloads[2]])
  }

  @Test(
    "A host's limiter: a 429 penalizes it for its Retry-After; the refused download is retried after it, not before"
  )
  func hostAnswers429() async throws {
    let clock = ManualClock()
    let host = RateLimiter.tokenBucket(permits: 10, per: .seconds(1), burst: 10, clock: clock.queueClock)
    let network = ScriptedNetwork()
    network.answerTooManyRequests(to: "a", retryAfter: .seconds(30))
    let (lines, log) = AsyncStream<String>.makeStream()
    let manager = DownloadManager(
      maxConcurrentTransfers: 4, transport: network, host: host, log: { log.yield($0) })
    let a = await manager.add(RemoteFile(name: "a", size: 4 * network.chunkSize))
    for await line in lines where line.contains("429") { break }  // logged once the host is penalized
    #expect(host.availablePermits == 0, "penalized: nothing starts through the host")
    let b = await manager.add(RemoteFile(name: "b", size: 4 * network.chunkSize))
    clock.advance(by: .seconds(30) - .nanoseconds(1))
    #expect(network.offsets(of: "a").isEmpty && network.offsets(of: "b").isEmpty)
    clock.advance(by: .nanoseconds(1))
    await manager.waitUntil { $0[a].isConnected && $0[b].isConnected }
    try await finishAll(manager, network, [a, b])
    #expect(network.offsets(of: "a") == [0], "one connection after the refusal, from the start")
    log.finish()
  }
}

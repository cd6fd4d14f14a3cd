import ActorQueue

/// The story `swift run DownloadManager` tells: 14 simulated downloads, paused, resumed, and a
/// limit changed 3 → 10 → 5 while they run; then two managers share a host's rate limiter, and
/// the host answers a 429. Each step says what it does, the manager logs what
/// happens, and the story checks what it claims (the executable exits 1 if a check fails).
///
/// Steps wait for the manager's state (``DownloadManager/waitUntil(_:)``), never for a time, so
/// the story holds on a slow machine too; only the chunks take time (4 ms each).
public enum DownloadManagerDemo {
  /// The files: 2 to 4 MiB, 32 to 64 chunks of 64 KiB.
  public static let files: [RemoteFile] = [
    ("report.pdf", 48), ("video.mp4", 64), ("photos.zip", 40), ("podcast.mp3", 56), ("dataset.csv", 36),
    ("backup.tar", 60), ("slides.key", 32), ("album.flac", 52), ("maps.pack", 44), ("book.epub", 34),
    ("game.pak", 62), ("fonts.zip", 38), ("logs.gz", 46), ("model.bin", 58),
  ].map { RemoteFile(name: $0.0, size: $0.1 << 16) }

  /// Runs the story, printing each line with `print`; returns whether every check held.
  public static func run(print: @escaping @Sendable (String) -> Void) async -> Bool {
    let clock = ContinuousClock()
    let origin = clock.now
    let say: @Sendable (String) -> Void = { line in
      let milliseconds = (clock.now - origin) / .milliseconds(1)
      print("[\(String(Int(milliseconds)).leftPadded(to: 5)) ms] \(line)")
    }
    var checks = Checks(say: say)
    let network = SimulatedNetwork(chunkSize: 64 << 10, chunkDuration: .milliseconds(4))
    let manager = DownloadManager(maxConcurrentTransfers: 3, transport: network, log: say)

    say("STEP 1. Add \(files.count) downloads; at most 3 transfer at once.")
    var downloads: [Download] = []
    for file in files { downloads.append(await manager.add(file)) }
    await manager.waitUntil { $0.executingCount == 3 }
    checks.expect(network.peakOpenConnections <= 3, "never more than 3 connections open")
    say(table(await manager.snapshot))

    let report = downloads[0]
    say("STEP 2. Pause \(report) while it transfers: it pauses at its next chunk boundary.")
    await manager.pause(report)
    say("  \(report) is \(await manager.snapshot[report].phase)")
    await manager.waitUntil { $0[report].phase == .paused && $0.isSettled }
    var snapshot = await manager.snapshot
    checks.expect(
      !snapshot[report].isConnected && snapshot[report].bytesReceived > 0,
      "\(report) closed its connection and kept \(DownloadManager.size(snapshot[report].bytesReceived))")
    checks.expect(
      snapshot.count(.transferring) == 3, "its slot went to the next waiting download: 3 transfer without it")
    say(table(snapshot))

    say("STEP 3. Resume \(report): it waits for a free slot, ahead of the downloads not started yet.")
    let kept = snapshot[report].bytesReceived
    await manager.resume(report)
    await manager.waitUntil { $0[report].phase == .transferring }
    snapshot = await manager.snapshot
    checks.expect(snapshot[report].bytesReceived >= kept, "\(report) went on from the bytes it kept")

    say("STEP 4. Raise the limit to 10: waiting downloads start at once.")
    await manager.setMaxConcurrentTransfers(10)
    await manager.waitUntil { $0.maxConcurrentTransfers == 10 && $0.isSettled }
    snapshot = await manager.snapshot
    checks.expect(
      snapshot.executingCount == min(10, snapshot.unfinishedCount),
      "\(snapshot.executingCount) transfer: all that may, up to 10")
    say(table(snapshot))

    say("STEP 5. Pause all (every connection closes, no slot is held), then resume all.")
    await manager.pauseAll()
    await manager.waitUntil { $0.executingCount == 0 && !$0.downloads.contains(where: \.isConnected) }
    checks.expect(network.openConnections == 0, "no connection open while everything is paused")
    say(table(await manager.snapshot))
    await manager.resumeAll()
    await manager.waitUntil { $0.count(.paused) == 0 && $0.count(.pausing) == 0 && $0.isSettled }
    say(table(await manager.snapshot))

    snapshot = await manager.snapshot
    guard let mine = snapshot.downloads.last(where: { $0.phase == .transferring })?.download else {
      checks.expect(false, "something still transfers at step 6")
      return checks.allHeld
    }
    say("STEP 6. Pause \(mine) yourself, then lower the limit to 5, pausing the excess.")
    await manager.pause(mine)
    await manager.waitUntil { $0[mine].phase == .paused }
    let before = await manager.snapshot.executingCount
    await manager.setMaxConcurrentTransfers(5)
    await manager.waitUntil { $0.executingCount <= 5 }
    network.resetPeak()
    snapshot = await manager.snapshot
    say(
      "  \(before) were transferring; \(snapshot.count(.pausedForLimit)) paused for the limit at their next chunk "
        + "boundary")
    say(table(snapshot))

    say(
      "STEP 7. As transfers finish, those paused for the limit continue by themselves; \(mine) stays paused.")
    await manager.waitUntil { $0.unfinishedCount == 1 }
    snapshot = await manager.snapshot
    checks.expect(snapshot[mine].phase == .paused, "\(mine) is still paused: you paused it")
    checks.expect(
      network.peakOpenConnections <= 5,
      "never more than 5 connections open once the excess had paused (peak \(network.peakOpenConnections))")

    say("STEP 8. Resume \(mine); it finishes.")
    await manager.resume(mine)
    await manager.waitUntilAllFinished()
    var complete = true
    for download in downloads {
      let bytes = try? await manager.bytes(of: download)
      if bytes != download.file.size { complete = false }
    }
    checks.expect(complete, "all \(downloads.count) files arrived complete, every byte once")

    say(
      "STEP 9. A host that takes 20 new transfers a second, 2 at once, shared by two managers; it answers one 429."
    )
    let host = RateLimiter.tokenBucket(permits: 20, per: .seconds(1), burst: 2)
    let busyNetwork = SimulatedNetwork(chunkSize: 64 << 10, chunkDuration: .milliseconds(1))
    busyNetwork.answerTooManyRequests(1, retryAfter: .milliseconds(300))
    let documents = DownloadManager(maxConcurrentTransfers: 4, transport: busyNetwork, host: host, log: say)
    let media = DownloadManager(maxConcurrentTransfers: 4, transport: busyNetwork, host: host, log: say)
    let limitedFiles = files.prefix(8).map { RemoteFile(name: "host/" + $0.name, size: 4 << 16) }
    var limited: [(DownloadManager, Download)] = []
    for (number, file) in limitedFiles.enumerated() {
      let manager = number.isMultiple(of: 2) ? documents : media
      limited.append((manager, await manager.add(file)))
    }
    await documents.waitUntilAllFinished()
    await media.waitUntilAllFinished()
    let requests = busyNetwork.requestInstants
    checks.expect(
      requests.count == limitedFiles.count + 1,
      "\(requests.count) requests: one per file, and the one refused")
    // The first two took the burst at once; the first of them was refused, and penalized the host.
    let refused = requests[0]
    checks.expect(
      requests.dropFirst(2).allSatisfy { refused.duration(to: $0) >= .milliseconds(300) },
      "nothing more reached the host in the 300 ms after its 429")
    let withinRate = requests.indices.allSatisfy { index in
      let elapsed = requests[0].duration(to: requests[index])
      // At most 2 + 20·t in the first t: the request at `index` comes index − 1 intervals of 50 ms on.
      return elapsed >= .milliseconds(50) * max(0, index - 1)
    }
    checks.expect(
      withinRate, "the two managers together never asked more than the host allows (2 + 20 a second)")
    var allArrived = true
    for (manager, download) in limited where (try? await manager.bytes(of: download)) != download.file.size {
      allArrived = false
    }
    checks.expect(allArrived, "all \(limitedFiles.count) files arrived, the refused one on its retry")
    say(checks.allHeld ? "Done: every check held." : "Done, but \(checks.failures) check(s) failed.")
    return checks.allHeld
  }

  /// The downloads by phase, one line per phase that has any.
  static func table(_ snapshot: DownloadManager.Snapshot) -> String {
    let phases: [DownloadPhase] = [
      .transferring, .pausing, .waiting, .paused, .pausedForLimit, .finished, .cancelled, .failed,
    ]
    var lines = ["  ┌ limit \(snapshot.maxConcurrentTransfers), \(snapshot.executingCount) executing"]
    for phase in phases {
      let downloads = snapshot.downloads.filter { $0.phase == phase }
      guard !downloads.isEmpty else { continue }
      let items = downloads.map { status in
        phase == .waiting || phase == .finished
          ? status.download.file.name
          : "\(status.download.file.name) \(DownloadManager.size(status.bytesReceived))"
      }
      lines.append("  │ \("\(phase):".padded(to: 16)) \(items.joined(separator: ", "))")
    }
    lines.append("  └")
    return lines.joined(separator: "\n")
  }
}

/// The story's claims, printed as they are checked.
struct Checks {
  let say: @Sendable (String) -> Void
  private(set) var failures = 0

  init(say: @escaping @Sendable (String) -> Void) { self.say = say }

  var allHeld: Bool { failures == 0 }

  mutating func expect(_ condition: Bool, _ claim: String) {
    if condition {
      say("  ✔ \(claim)")
    } else {
      failures += 1
      say("  ✘ FAILED: \(claim)")
    }
  }
}

extension String {
  func padded(to width: Int) -> String {
    count >= width ? self : self + String(repeating: " ", count: width - count)
  }

  func leftPadded(to width: Int) -> String {
    count >= width ? self : String(repeating: " ", count: width - count) + self
  }
}

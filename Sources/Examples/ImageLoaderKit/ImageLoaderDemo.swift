import Foundation

/// The story `swift run ImageLoader` tells: a gallery screen whose cells ask for images, some
/// of them the same; cells that scroll away; the screen shown again (from the cache); and a
/// screen left before its images arrive, its requests cancelled by tag. Each step says what it does, the loader logs what
/// happens, and the story checks what it claims (the executable exits 1 if a check fails). Last,
/// prefetches queued behind a visible cell's image that the screen now waits for: the wait
/// raises that load ahead of them.
///
/// Every image takes 150 ms to arrive. What the checks assert holds however the machine
/// schedules the story; where an outcome depends on timing (a cell that scrolls away just as
/// its image arrives gets it), the story says which one happened.
public enum ImageLoaderDemo {
  static let host = URL(string: "https://images.example/")!

  static func url(_ name: String) -> URL { host.appendingPathComponent(name) }

  /// The gallery's cells: 8 cells, 6 images (cells 7 and 8 repeat cells 1 and 3).
  public static let gallery = [
    "sunset.jpg", "harbor.jpg", "forest.jpg", "desert.jpg", "glacier.jpg", "canyon.jpg", "sunset.jpg",
    "forest.jpg",
  ]

  /// Runs the story, printing each line with `print`; returns whether every check held.
  public static func run(print: @escaping @Sendable (String) -> Void) async -> Bool {
    let clock = ContinuousClock()
    let origin = clock.now
    let say: @Sendable (String) -> Void = { line in
      let milliseconds = Int((clock.now - origin) / .milliseconds(1))
      let stamp = String(milliseconds)
      print("[\(String(repeating: " ", count: max(0, 5 - stamp.count)))\(stamp) ms] \(line)")
    }
    var failures = 0
    func check(_ condition: Bool, _ claim: String) {
      if !condition { failures += 1 }
      say(condition ? "  ✔ \(claim)" : "  ✘ FAILED: \(claim)")
    }
    let server = SimulatedImageServer(latency: .milliseconds(150))
    let cache = ImageCache()
    let loader = ImageLoader(maxConcurrentLoads: 4, fetcher: server, cache: cache, log: say)

    say(
      "STEP 1. The gallery appears: \(gallery.count) cells ask for \(Set(gallery).count) images, at most 4 load at once."
    )
    say("        Cells 7 and 8 show the images of cells 1 and 3: their requests join the loads in flight.")
    var requests: [ImageRequest] = []
    for (cell, name) in gallery.enumerated() {
      say("  cell \(cell + 1) asks for \(name)")
      requests.append(await loader.request(url(name)))
    }
    say("  \(requests.count) requests, \(loader.loadCount) loads not ended (each image loads once)")

    say("STEP 2. Cell 8 scrolls away: it cancels its request for forest.jpg, which cell 3 still wants.")
    say("        Cell 6 scrolls away: it cancels its request for canyon.jpg, which nobody else wants.")
    requests[7].cancel()
    requests[5].cancel()
    let cell8 = await outcome(requests[7])
    say("  cell 8: \(cell8.description)")

    say("STEP 3. The other cells get their images.")
    for cell in [0, 1, 2, 3, 4, 6] {
      let result = await outcome(requests[cell])
      say("  cell \(cell + 1): \(result.description)")
      check(result.image != nil, "cell \(cell + 1) shows \(gallery[cell])")
    }
    let canyon = await outcome(requests[5])
    say("  cell 6: \(canyon.description)")
    await loader.waitUntilIdle()
    for name in Set(gallery) {
      let fetches = await server.fetchCount(of: url(name))
      check(
        fetches <= 1,
        fetches == 1
          ? "\(name) was fetched once, however many cells asked for it" : "\(name) was never fetched")
    }
    let canyonCached = await cache.image(for: url("canyon.jpg")) != nil
    check(
      canyonCached == (canyon.image != nil),
      canyonCached
        ? "canyon.jpg had arrived before cell 6 left: it is cached"
        : "canyon.jpg's load was cancelled with the only request for it: nothing cached")

    say("STEP 4. The gallery appears again: what was loaded comes from the cache, at once.")
    var cachedCount = 0
    for (cell, name) in gallery.enumerated() {
      let request = await loader.request(url(name))
      if request.isCached { cachedCount += 1 }
      let result = await outcome(request)
      check(
        result.image != nil, "cell \(cell + 1) shows \(name)\(request.isCached ? " (cache)" : " (loaded)")")
    }
    check(cachedCount >= gallery.count - 1, "\(cachedCount) of \(gallery.count) cells served from the cache")

    say("STEP 5. The user opens the Mountains screen (12 images) and leaves it at once.")
    say("        One loader serves both screens; each request carries its screen's tag. The gallery")
    say("        asks for aurora.jpg, and so does the Mountains screen: its request joins that load.")
    let before = await server.totalFetches
    let aurora = await loader.request(url("aurora.jpg"), for: "gallery")
    let mountainsAurora = await loader.request(url("aurora.jpg"), for: "mountains")
    var names: [String] = []
    var left: [ImageRequest] = []
    for index in 1...12 {
      names.append("peak\(index).jpg")
      left.append(await loader.request(url("peak\(index).jpg"), for: "mountains"))
    }
    say(
      "  \(loader.loadCount) loads: at most 4 running, the others waiting for a slot. The screen goes away:"
    )
    loader.cancelRequests(for: "mountains")
    var cancelled = 0
    for (index, request) in left.enumerated() {
      let result = await outcome(request)
      if case .cancelled = result { cancelled += 1 }
      let cached = await cache.image(for: url(names[index])) != nil
      check(cached == (result.image != nil), "\(names[index]): \(result.description)")
    }
    let leftAurora = await outcome(mountainsAurora)
    check(leftAurora.image == nil, "the Mountains screen's request for aurora.jpg: \(leftAurora.description)")
    let kept = await outcome(aurora)
    check(kept.image != nil, "the gallery's aurora.jpg, which its cell still waits for: \(kept.description)")
    await loader.waitUntilIdle()
    let fetched = await server.totalFetches - before
    say("  \(cancelled) of 12 requests cancelled; \(fetched) fetches had started, the others never did")
    check(loader.loadCount == 0, "no load left")
    say("STEP 6. The gallery prefetches 10 images below the fold (priority .low): 4 load, the rest wait.")
    say("        The user scrolls: a cell now shows lake.jpg, asked for last, and the screen waits for it.")
    say("        Awaiting it from a .userInitiated task raises its load ahead of the waiting prefetches.")
    // The order the queue gave the loads their slots; the server sees their fetches in whatever
    // order their bodies reach it, and 4 slots freed at once start 4 bodies side by side.
    let events = loader.events
    let starts = Task { () -> [String] in
      var names: [String] = []
      for await event in events {
        guard case .operation(_, let name?, .executing) = event.kind, !names.contains(name) else { continue }
        names.append(name)
        if names.count == 11 { break }
      }
      return names
    }
    var prefetches: [ImageRequest] = []
    for index in 1...10 {
      prefetches.append(await loader.request(url("below\(index).jpg"), for: "gallery", priority: .low))
    }
    let lake = await loader.request(url("lake.jpg"), for: "gallery", priority: .low)
    let shown = Task(priority: .userInitiated) { await outcome(lake) }
    while (lake.effectivePriority ?? .low) < .userInitiated { await Task.yield() }
    check(
      lake.effectivePriority == .userInitiated, "lake.jpg's load runs at .userInitiated, raised by the wait")
    let lakeResult = await shown.value
    check(lakeResult.image != nil, "the visible cell shows lake.jpg: \(lakeResult.description)")
    for prefetch in prefetches { _ = await outcome(prefetch) }
    await loader.waitUntilIdle()
    let order = await starts.value
    let lakeAt = order.firstIndex(of: "lake.jpg") ?? order.count
    let overtaken = order[lakeAt...].filter { $0.hasPrefix("below") }.count
    // At most 4 prefetches start before it (fewer when their workers were still starting when
    // the cell asked); every one not started then comes after it.
    check(
      overtaken >= 6,
      "lake.jpg's load started before the \(overtaken) prefetches not started yet when the cell asked"
    )
    let peak = await server.peakConcurrentFetches
    check(peak <= 4, "never more than 4 fetches at once (peak \(peak))")
    say(failures == 0 ? "Done: every check held." : "Done, but \(failures) check(s) failed.")
    return failures == 0
  }

  /// What a request ended with.
  enum Outcome: CustomStringConvertible {
    case image(Image)
    case cancelled
    case failed(any Error)

    var image: Image? {
      if case .image(let image) = self { return image }
      return nil
    }

    var description: String {
      switch self {
      case .image(let image): "got \(image.url.lastPathComponent) (\(image.width)×\(image.height))"
      case .cancelled: "cancelled"
      case .failed(let error): "failed: \(error)"
      }
    }
  }

  static func outcome(_ request: ImageRequest) async -> Outcome {
    do {
      return .image(try await request.image)
    } catch is CancellationError {
      return .cancelled
    } catch {
      return .failed(error)
    }
  }
}

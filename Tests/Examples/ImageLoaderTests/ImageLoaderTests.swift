import Foundation
import ImageLoaderKit
import TestSupport
import Testing

private func url(_ name: String) -> URL { URL(string: "https://images.test/\(name)")! }

/// What a request ended with: its image, or `nil` if it was cancelled.
private func imageOrCancelled(_ request: ImageRequest) async throws -> Image? {
  do {
    return try await request.image
  } catch is CancellationError {
    return nil
  }
}

@Suite("Image loader", .timeLimit(.minutes(hangLimitMinutes)))
struct ImageLoaderTests {
  @Test("At most 4 loads at once: the 5th fetches only when one of them has ended")
  func fourAtOnce() async throws {
    let server = ScriptedImageServer()
    let loader = ImageLoader(fetcher: server)
    let names = ["a", "b", "c", "d", "e"]
    var requests: [ImageRequest] = []
    for name in names { requests.append(await loader.request(url(name))) }
    for name in names.prefix(4) { await server.waitUntilFetched(url(name)) }
    #expect(server.activeFetches == 4)
    #expect(server.fetchCount(of: url("e")) == 0)
    #expect(loader.loadCount == 5)

    server.respond(to: url("b"))
    #expect(try await requests[1].image == ScriptedImageServer.image(url("b")))
    await server.waitUntilFetched(url("e"))
    for name in names { server.respond(to: url(name)) }
    for (request, name) in zip(requests, names) {
      #expect(try await request.image.url == url(name))
    }
    #expect(server.peakConcurrentFetches == 4)
  }

  @Test(
    "A second request for a URL already loading joins it: one fetch, one load in the queue, a result for each"
  )
  func joinsLoadInFlight() async throws {
    let server = ScriptedImageServer()
    let loader = ImageLoader(fetcher: server)
    let first = await loader.request(url("a"))
    await server.waitUntilFetched(url("a"))
    let second = await loader.request(url("a"))
    let third = await loader.request(url("a"))
    #expect(loader.loadCount == 1)
    #expect(!second.isCached && !third.isCached)
    server.respond(to: url("a"))
    let image = ScriptedImageServer.image(url("a"))
    #expect(try await first.image == image)
    #expect(try await second.image == image)
    #expect(try await third.image == image)
    #expect(server.fetchCount(of: url("a")) == 1)
  }

  @Test("A request for a URL whose load waits for a slot joins that load too")
  func joinsWaitingLoad() async throws {
    let server = ScriptedImageServer()
    let loader = ImageLoader(fetcher: server)
    for name in ["a", "b", "c", "d"] { _ = await loader.request(url(name)) }
    for name in ["a", "b", "c", "d"] { await server.waitUntilFetched(url(name)) }
    let first = await loader.request(url("e"))
    let second = await loader.request(url("e"))
    #expect(loader.loadCount == 5)
    for name in ["a", "b", "c", "d", "e"] { server.respond(to: url(name)) }
    #expect(try await first.image == second.image)
    #expect(server.fetchCount(of: url("e")) == 1)
  }

  @Test("A loaded image comes from the cache: no load, no fetch")
  func cacheHit() async throws {
    let server = ScriptedImageServer()
    let loader = ImageLoader(fetcher: server)
    server.respond(to: url("a"))
    let loaded = try await loader.request(url("a")).image
    await loader.waitUntilIdle()
    let again = await loader.request(url("a"))
    #expect(again.isCached)
    #expect(loader.loadCount == 0)
    #expect(try await again.image == loaded)
    #expect(server.fetchCount(of: url("a")) == 1)
    #expect(await loader.cache.count == 1)
  }

  @Test("Cancelling one caller's request ends it at once; the other caller gets the image; the fetch goes on")
  func cancelOneCaller() async throws {
    let server = ScriptedImageServer()
    let loader = ImageLoader(fetcher: server)
    let leaving = await loader.request(url("a"))
    let staying = await loader.request(url("a"))
    await server.waitUntilFetched(url("a"))
    leaving.cancel()
    await #expect(throws: CancellationError.self) { try await leaving.image }  // before any answer
    server.respond(to: url("a"))
    #expect(try await staying.image == ScriptedImageServer.image(url("a")))
    #expect(server.cancelledCount(of: url("a")) == 0)
    #expect(await loader.cache.image(for: url("a")) != nil)
  }

  @Test(
    "Cancelling the only request cancels its fetch: nothing is cached, and the next request loads again")
  func cancelOnlyCaller() async throws {
    let server = ScriptedImageServer()
    let loader = ImageLoader(fetcher: server)
    let request = await loader.request(url("a"))
    await server.waitUntilFetched(url("a"))
    request.cancel()
    await #expect(throws: CancellationError.self) { try await request.image }
    await server.waitUntilCancelled(url("a"))
    await loader.waitUntilIdle()
    #expect(await loader.cache.image(for: url("a")) == nil)

    let again = await loader.request(url("a"))
    #expect(!again.isCached)
    server.respond(to: url("a"))
    _ = try await again.image
    #expect(server.fetchCount(of: url("a")) == 2)
  }

  @Test("Cancelling the request of a load that waits for a slot: it never fetches")
  func cancelWaitingLoad() async throws {
    let server = ScriptedImageServer()
    let loader = ImageLoader(fetcher: server)
    var busy: [ImageRequest] = []
    for name in ["a", "b", "c", "d"] { busy.append(await loader.request(url(name))) }
    let waiting = await loader.request(url("e"))
    waiting.cancel()
    await #expect(throws: CancellationError.self) { try await waiting.image }
    #expect(loader.loadCount == 4)
    for name in ["a", "b", "c", "d"] { server.respond(to: url(name)) }
    for request in busy { _ = try await request.image }
    await loader.waitUntilIdle()
    #expect(server.fetchCount(of: url("e")) == 0)
  }

  @Test(
    "The screen goes away: cancel all ends every request, cancels the running fetches, never starts the waiting ones, and keeps the cache"
  )
  func screenGoesAway() async throws {
    let server = ScriptedImageServer()
    let loader = ImageLoader(fetcher: server)
    server.respond(to: url("kept"))
    _ = try await loader.request(url("kept")).image

    let names = ["a", "b", "c", "d", "e", "f"]
    var requests: [ImageRequest] = []
    for name in names + ["a"] { requests.append(await loader.request(url(name))) }
    for name in names.prefix(4) { await server.waitUntilFetched(url(name)) }
    #expect(loader.loadCount == 6)

    loader.cancelAll()
    for request in requests { #expect(try await imageOrCancelled(request) == nil) }
    for name in names.prefix(4) { await server.waitUntilCancelled(url(name)) }
    await loader.waitUntilIdle()
    #expect(server.fetchCount(of: url("e")) == 0 && server.fetchCount(of: url("f")) == 0)
    #expect(server.totalCancelled == 4)
    #expect(await loader.cache.count == 1, "what had loaded stays cached")
    #expect(await loader.request(url("kept")).isCached)
  }

  @Test("A failed load fails every request that joined it; nothing is cached; the next request loads again")
  func failedLoad() async throws {
    let server = ScriptedImageServer()
    let loader = ImageLoader(fetcher: server)
    let first = await loader.request(url("a"))
    let second = await loader.request(url("a"))
    server.fail(url("a"))
    await #expect(throws: ScriptedImageServer.Failure.self) { try await first.image }
    await #expect(throws: ScriptedImageServer.Failure.self) { try await second.image }
    await loader.waitUntilIdle()
    #expect(await loader.cache.image(for: url("a")) == nil)
    server.forget(url("a"))
    let again = await loader.request(url("a"))
    server.respond(to: url("a"))
    _ = try await again.image
    #expect(server.fetchCount(of: url("a")) == 2)
  }

  @Test(
    "One loader, requests tagged by screen: leaving a screen cancels its requests, not a load another screen waits for"
  )
  func requestsTaggedByScreen() async throws {
    let server = ScriptedImageServer()
    let loader = ImageLoader(fetcher: server)
    let shared = await loader.request(url("shared"), for: "gallery")
    let joined = await loader.request(url("shared"), for: "details")
    let own = await loader.request(url("own"), for: "details")
    await server.waitUntilFetched(url("shared"))
    await server.waitUntilFetched(url("own"))
    loader.cancelRequests(for: "details")
    await #expect(throws: CancellationError.self) { try await joined.image }
    await #expect(throws: CancellationError.self) { try await own.image }
    await server.waitUntilCancelled(url("own"))
    server.respond(to: url("shared"))
    #expect(try await shared.image.url == url("shared"))
    #expect(server.fetchCount(of: url("shared")) == 1 && server.totalCancelled == 1)
  }

  @Test("One loader per screen, one cache: leaving a screen cancels its loads, not another screen's")
  func loaderPerScreen() async throws {
    let server = ScriptedImageServer()
    let cache = ImageCache()
    let gallery = ImageLoader(fetcher: server, cache: cache)
    let details = ImageLoader(fetcher: server, cache: cache)
    let stays = await gallery.request(url("a"))
    let leaves = await details.request(url("b"))
    await server.waitUntilFetched(url("a"))
    await server.waitUntilFetched(url("b"))
    details.cancelAll()
    await #expect(throws: CancellationError.self) { try await leaves.image }
    server.respond(to: url("a"))
    #expect(try await stays.image.url == url("a"))
    #expect(await details.request(url("a")).isCached, "the cache is shared")
  }
}

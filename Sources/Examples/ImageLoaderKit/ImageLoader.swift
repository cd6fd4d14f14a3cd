public import ActorQueue
public import Foundation

/// A decoded image (simulated: its URL and size stand for the pixels).
public struct Image: Sendable, Hashable {
  /// Where it came from.
  public let url: URL
  /// Its width in pixels.
  public let width: Int
  /// Its height in pixels.
  public let height: Int

  /// An image of `width` × `height` pixels loaded from `url`.
  public init(url: URL, width: Int, height: Int) {
    self.url = url
    self.width = width
    self.height = height
  }
}

/// Where images come from: the network in an app; ``SimulatedImageServer`` in the example; a
/// server the tests answer request by request.
public protocol ImageFetcher: Sendable {
  /// Fetches and decodes the image at `url`. Throws `CancellationError` if the calling task is
  /// cancelled while it waits.
  func fetch(_ url: URL) async throws -> Image
}

/// The images loaded so far, in memory.
public actor ImageCache {
  private var images: [URL: Image] = [:]

  /// An empty cache.
  public init() {}

  /// The image of `url`, if it was loaded.
  public func image(for url: URL) -> Image? { images[url] }

  /// Keeps `image`.
  public func insert(_ image: Image) { images[image.url] = image }

  /// How many images it holds.
  public var count: Int { images.count }
}

/// An image loader for one screen: at most 4 loads at once, an in-memory cache, one load per
/// URL however many cells ask for it, a request each cell can cancel, and everything cancelled
/// when the screen goes away.
///
/// The image loader apps build, on ``ActorQueue``. With `OperationQueue`,
/// apps keep a dictionary of the operations in flight by URL to attach a second cell to the
/// first load, and a cancelled cell must not cancel the load another cell still waits for.
/// Here:
/// - a load is `addOperation(coalescingBy: url)`: a request for a URL already loading (or
///   waiting for a slot) joins that load; each caller gets a handle of its own;
/// - cancelling a request cancels that caller's handle only: it ends at once, and the shared
///   load is cancelled only when every caller that joined it has cancelled;
/// - ``cancelAll()`` is the queue's `cancelAllOperations()`: waiting loads end at once without
///   fetching, running ones have their fetch cancelled;
/// - one loader can serve several screens: each screen's requests carry its tag, and
///   ``cancelRequests(for:)`` cancels that screen's requests alone (`cancelOperations(tagged:)`),
///   never a load another screen's request still waits for;
/// - prefetches wait behind visible cells (`.low`), and a load a visible cell now awaits moves
///   ahead of the prefetches waiting for a slot: the queue's escalation policy is
///   `.taskPriorityAndOrder`, so awaiting ``ImageRequest/image`` from a task of higher priority
///   raises that load (and its fetch's task).
public final class ImageLoader: Sendable {
  private let queue: ActorQueue
  private let fetcher: any ImageFetcher
  private let log: @Sendable (String) -> Void
  /// The cache the loads fill (share one between screens to keep images across them).
  public let cache: ImageCache

  /// A loader that runs at most `maxConcurrentLoads` fetches at once on `fetcher`, keeps what
  /// it loads in `cache`, and tells `log` what it does.
  public init(
    maxConcurrentLoads: Int = 4, fetcher: any ImageFetcher, cache: ImageCache = ImageCache(),
    log: @escaping @Sendable (String) -> Void = { _ in }
  ) {
    queue = ActorQueue(name: "images", maxConcurrentOperationCount: maxConcurrentLoads)
    queue.escalation = .taskPriorityAndOrder
    self.fetcher = fetcher
    self.cache = cache
    self.log = log
  }

  /// Asks for the image at `url`: from the cache if it is there (no load); otherwise the load
  /// in flight for `url` if there is one (this request joins it), or a new load. `screen` tags
  /// the request, for ``cancelRequests(for:)``; a prefetch (`priority: .low`) waits behind the
  /// requests of visible cells.
  public func request(_ url: URL, for screen: OperationTag? = nil, priority: OperationPriority = .normal)
    async
    -> ImageRequest
  {
    if let image = await cache.image(for: url) {
      log("  \(url.lastPathComponent): from the cache")
      return ImageRequest(url: url, source: .cached(image))
    }
    let (queue, cache, fetcher, log) = (queue, cache, fetcher, log)
    let traits: [OperationTrait] = screen.map { [.tags($0)] } ?? []
    let load = queue.addOperation(
      name: url.lastPathComponent, priority: priority, traits: traits, coalescingBy: url
    ) {
      // It may have arrived while this load waited for a slot (a load of the same URL that
      // ended just before this one was added).
      if let image = await cache.image(for: url) { return image }
      let loading = queue.operations.lazy.filter(\.isExecuting).count
      log(
        "⇣ \(url.lastPathComponent): loading (\(loading) loading, at most \(queue.maxConcurrentOperationCount))"
      )
      do {
        let image = try await fetcher.fetch(url)
        await cache.insert(image)
        log("✓ \(url.lastPathComponent): loaded and cached")
        return image
      } catch {
        log(
          "✗ \(url.lastPathComponent): load stopped (\(error is CancellationError ? "cancelled" : "\(error)"))"
        )
        throw error
      }
    }
    return ImageRequest(url: url, source: .load(load))
  }

  /// Cancels every load: the screen went away. Loads waiting for a slot end at once, without
  /// fetching; running ones have their fetch cancelled. Every request ends, throwing
  /// `CancellationError`. The cache keeps what was loaded.
  public func cancelAll() {
    queue.cancelAllOperations()
  }

  /// Cancels the requests tagged `screen` (the user left it): each ends at once, throwing
  /// `CancellationError`. A load that only they wait for is cancelled with them (waiting: it
  /// never fetches; running: its fetch is cancelled); a load another request still waits for
  /// goes on. Costs what it cancels, whatever else the loader has in flight.
  public func cancelRequests(for screen: OperationTag) {
    queue.cancelOperations(tagged: screen)
  }

  /// The loads not ended yet (running or waiting for a slot), each counted once however many
  /// requests joined it.
  public var loadCount: Int { queue.operationCount }

  /// Every load's transitions from now on, in the order the loader's queue decided them (each
  /// event's `sequence`): a load `.executing` took one of the slots. For one subscriber.
  public var events: AsyncStream<QueueEvent> { queue.events }

  /// Suspends until no load is left.
  public func waitUntilIdle() async {
    await queue.waitUntilAllOperationsAreFinished()
  }
}

/// One caller's request for an image: a cell's.
public struct ImageRequest: Sendable {
  /// The image's URL.
  public let url: URL

  enum Source: Sendable {
    case cached(Image)
    case load(QueueOperation<Image>)
  }

  let source: Source

  /// Whether the image came from the cache, without a load.
  public var isCached: Bool {
    if case .cached = source { return true }
    return false
  }

  /// The image, once loaded. Throws `CancellationError` if this request, or the load, was
  /// cancelled; the fetcher's error if it failed.
  public var image: Image {
    get async throws {
      switch source {
      case .cached(let image): return image
      case .load(let load): return try await load.value
      }
    }
  }

  /// The priority its load's task runs at, or will: raised while a task of a higher priority
  /// awaits ``image``; `nil` for an image from the cache.
  public var effectivePriority: TaskPriority? {
    if case .load(let load) = source { return load.effectiveTaskPriority }
    return nil
  }

  /// Cancels this request (the cell scrolled away): it ends at once, throwing
  /// `CancellationError`. The load goes on for the other requests that joined it, and is
  /// cancelled only once every one of them has been cancelled. No effect once the image
  /// arrived.
  public func cancel() {
    if case .load(let load) = source { load.cancel() }
  }
}

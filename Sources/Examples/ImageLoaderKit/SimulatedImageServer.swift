public import Foundation

/// A server without a network: each image takes `latency` to arrive, on `clock`. It counts
/// what it was asked, so the demo can check that each image was fetched once and that no more
/// than the limit were fetched at once.
public actor SimulatedImageServer: ImageFetcher {
  private let latency: Duration
  private let clock: any Clock<Duration>
  private var fetches: [URL: Int] = [:]
  private var active = 0
  private var peak = 0
  private var cancelled = 0

  /// A server whose every image takes `latency`.
  public init(latency: Duration, clock: any Clock<Duration> = ContinuousClock()) {
    self.latency = latency
    self.clock = clock
  }

  /// Sends the image at `url` after `latency`; throws `CancellationError` if the caller's task
  /// is cancelled meanwhile.
  public func fetch(_ url: URL) async throws -> Image {
    fetches[url, default: 0] += 1
    active += 1
    peak = max(peak, active)
    defer { active -= 1 }
    do {
      try await clock.sleep(for: latency)
    } catch {
      cancelled += 1
      throw error
    }
    let side = 64 + url.path.utf8.count * 8
    return Image(url: url, width: side, height: side * 3 / 4)
  }

  /// How many times `url` was fetched (cancelled fetches included).
  public func fetchCount(of url: URL) -> Int { fetches[url, default: 0] }

  /// Every fetch so far.
  public var totalFetches: Int { fetches.values.reduce(0, +) }

  /// The most fetches that ran at once.
  public var peakConcurrentFetches: Int { peak }

  /// The fetches cancelled while they waited for their image.
  public var cancelledFetches: Int { cancelled }
}

import ActorQueue
import Foundation
import ImageLoaderKit

/// A server the test answers request by request: a fetch waits until the test calls
/// `respond(to:)` or `fail(_:)` for its URL (or answered it earlier), and throws
/// `CancellationError` if its task is cancelled meanwhile. Nothing depends on time.
///
/// It counts fetches per URL, the fetches running at once, and the cancelled ones.
final class ScriptedImageServer: ImageFetcher {
  struct Failure: Error, Equatable {}

  private struct Pending {
    let token: Int
    let continuation: CheckedContinuation<Image, any Error>
  }

  private struct State {
    var answers: [URL: Result<Image, any Error>] = [:]
    var pending: [URL: [Pending]] = [:]
    var fetches: [URL: Int] = [:]
    var cancelled: [URL: Int] = [:]
    var active = 0
    var peak = 0
    var nextToken = 0
    /// Waiters for "`url` has been fetched `count` times", or cancelled `count` times.
    var fetchWaiters: [(url: URL, count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    var cancelWaiters: [(url: URL, count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }

  private let state = LockedValue(State())

  func fetch(_ url: URL) async throws -> Image {
    let token = state.withLock { state in
      state.nextToken += 1
      return state.nextToken
    }
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Image, any Error>) in
        let (answer, woken) = state.withLock {
          state -> (Result<Image, any Error>?, [CheckedContinuation<Void, Never>]) in
          state.fetches[url, default: 0] += 1
          let woken = Self.take(&state.fetchWaiters, url: url, reached: state.fetches[url]!)
          if Task.isCancelled {
            return (.failure(Self.cancelled(url, &state)), woken)
          }
          if let answer = state.answers[url] { return (answer, woken) }
          state.active += 1
          state.peak = max(state.peak, state.active)
          state.pending[url, default: []].append(Pending(token: token, continuation: continuation))
          return (nil, woken)
        }
        for waiter in woken { waiter.resume() }
        if let answer { continuation.resume(with: answer) }
      }
    } onCancel: {
      let (pending, woken) = state.withLock { state -> (Pending?, [CheckedContinuation<Void, Never>]) in
        guard let index = state.pending[url]?.firstIndex(where: { $0.token == token }) else {
          return (nil, [])
        }
        let pending = state.pending[url]?.remove(at: index)
        state.active -= 1
        state.cancelled[url, default: 0] += 1
        return (pending, Self.take(&state.cancelWaiters, url: url, reached: state.cancelled[url]!))
      }
      pending?.continuation.resume(throwing: CancellationError())
      for waiter in woken { waiter.resume() }
    }
  }

  private static func cancelled(_ url: URL, _ state: inout State) -> CancellationError {
    state.cancelled[url, default: 0] += 1
    return CancellationError()
  }

  private static func take(
    _ waiters: inout [(url: URL, count: Int, continuation: CheckedContinuation<Void, Never>)], url: URL,
    reached: Int
  ) -> [CheckedContinuation<Void, Never>] {
    var woken: [CheckedContinuation<Void, Never>] = []
    waiters.removeAll { waiter in
      guard waiter.url == url, waiter.count <= reached else { return false }
      woken.append(waiter.continuation)
      return true
    }
    return woken
  }

  // MARK: What the test does

  /// Sends the image of `url` to its fetches, now and later.
  func respond(to url: URL) {
    answer(url, .success(Self.image(url)))
  }

  /// Fails the fetches of `url`, now and later.
  func fail(_ url: URL) {
    answer(url, .failure(Failure()))
  }

  /// Forgets the answer for `url`: later fetches wait again.
  func forget(_ url: URL) {
    _ = state.withLock { $0.answers.removeValue(forKey: url) }
  }

  private func answer(_ url: URL, _ result: Result<Image, any Error>) {
    let pending = state.withLock { state -> [Pending] in
      state.answers[url] = result
      let pending = state.pending.removeValue(forKey: url) ?? []
      state.active -= pending.count
      return pending
    }
    for fetch in pending { fetch.continuation.resume(with: result) }
  }

  /// Suspends until `url` has been fetched `count` times (a fetch has started).
  func waitUntilFetched(_ url: URL, times count: Int = 1) async {
    // Ends when the test is cancelled too (its time limit), so a wrong test fails, not hangs.
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let reached = state.withLock { state in
          if Task.isCancelled || state.fetches[url, default: 0] >= count { return true }
          state.fetchWaiters.append((url, count, continuation))
          return false
        }
        if reached { continuation.resume() }
      }
    } onCancel: {
      let waiters = state.withLock { state in
        defer { state.fetchWaiters = [] }
        return state.fetchWaiters.map(\.continuation)
      }
      for waiter in waiters { waiter.resume() }
    }
  }

  /// Suspends until `count` fetches of `url` have seen their task cancelled.
  func waitUntilCancelled(_ url: URL, times count: Int = 1) async {
    // Ends when the test is cancelled too (its time limit), so a wrong test fails, not hangs.
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let reached = state.withLock { state in
          if Task.isCancelled || state.cancelled[url, default: 0] >= count { return true }
          state.cancelWaiters.append((url, count, continuation))
          return false
        }
        if reached { continuation.resume() }
      }
    } onCancel: {
      let waiters = state.withLock { state in
        defer { state.cancelWaiters = [] }
        return state.cancelWaiters.map(\.continuation)
      }
      for waiter in waiters { waiter.resume() }
    }
  }

  // MARK: What the test reads

  func fetchCount(of url: URL) -> Int { state.withLock { $0.fetches[url, default: 0] } }
  func cancelledCount(of url: URL) -> Int { state.withLock { $0.cancelled[url, default: 0] } }
  var totalCancelled: Int { state.withLock { $0.cancelled.values.reduce(0, +) } }
  var activeFetches: Int { state.withLock { $0.active } }
  var peakConcurrentFetches: Int { state.withLock { $0.peak } }

  /// The image this server sends for `url`.
  static func image(_ url: URL) -> Image { Image(url: url, width: 40, height: 30) }
}

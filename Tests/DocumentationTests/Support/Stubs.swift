import ActorQueue
import Foundation

// Stand-ins for the app code the documents' examples call: views on the main actor, images,
// a store. Each test defines the functions an example calls (a download, a filter) locally,
// right before the example, so the example reads as it does in the document.

/// An image, as the examples pass it from step to step.
struct Image: Sendable, Equatable, CustomStringConvertible {
  var name: String
  var description: String { name }
}

/// A view on the main actor.
@MainActor final class ImageView {
  var image: Image?
  nonisolated init() {}
}

/// A label on the main actor.
@MainActor final class Label {
  var text = ""
  nonisolated init() {}
}

/// A progress spinner on the main actor.
@MainActor final class Spinner {
  private(set) var isSpinning = false
  nonisolated init() {}
  func start() { isSpinning = true }
  func stop() { isSpinning = false }
}

/// Where a batch's results go, one at a time.
actor ResultStore {
  private(set) var values: [Int] = []
  func append(_ value: Int) { values.append(value) }
}

/// A stand-in for `URLSession`: `data(from:)` returns at once, or, when `waitsForCancellation`,
/// waits until its task is cancelled and then throws its own error, `URLError(.cancelled)`, as
/// `URLSession` does.
struct Session: Sendable {
  var waitsForCancellation = false
  let started = AsyncStream<Void>.makeStream()

  func data(from url: URL) async throws -> (Data, Response?) {
    if waitsForCancellation {
      started.continuation.yield()
      let (cancelled, signal) = AsyncStream<Void>.makeStream()
      await withTaskCancellationHandler {
        for await _ in cancelled {}
      } onCancel: {
        signal.finish()
      }
      throw URLError(.cancelled)
    }
    return (Data(url.lastPathComponent.utf8), nil)
  }

  /// The callback API of the "before" examples.
  func dataTask(
    with url: URL, completionHandler: @escaping @Sendable (Data?, Response?, (any Error)?) -> Void
  )
    -> DataTask
  {
    DataTask { completionHandler(Data(url.lastPathComponent.utf8), nil, nil) }
  }
}

/// What `Session` answers besides the data (URLSession's `URLResponse` lives in
/// FoundationNetworking on Linux, which these tests do not need).
struct Response: Sendable {}

/// The task a `Session.dataTask` returns.
final class DataTask: Sendable {
  private let work: @Sendable () -> Void
  init(_ work: @escaping @Sendable () -> Void) { self.work = work }
  func resume() { DispatchQueue.global().async(execute: work) }
  func cancel() {}
}

/// A network the download examples control: a chunk of a file arrives when the example sends one
/// (`send(to:)`), or at once for every file once it is opened (`openAll()`).
final class SimulatedNetwork: Sendable {
  private struct State {
    var credits: [String: Int] = [:]
    var waiting: [String: [CheckedContinuation<Int, Never>]] = [:]
    var isOpen = false
  }
  private let state = LockedValue(State())

  /// The next chunk of `file` (its size in chunks: 1), once one was sent.
  func receiveChunk(of file: String) async throws -> Int {
    await withCheckedContinuation { continuation in
      let now = state.withLock { state -> Bool in
        if state.isOpen { return true }
        if let credit = state.credits[file], credit > 0 {
          state.credits[file] = credit - 1
          return true
        }
        state.waiting[file, default: []].append(continuation)
        return false
      }
      if now { continuation.resume(returning: 1) }
    }
  }

  /// Sends one chunk of `file`.
  func send(to file: String) {
    let waiter = state.withLock { state -> CheckedContinuation<Int, Never>? in
      if var waiting = state.waiting[file], !waiting.isEmpty {
        let first = waiting.removeFirst()
        state.waiting[file] = waiting
        return first
      }
      state.credits[file, default: 0] += 1
      return nil
    }
    waiter?.resume(returning: 1)
  }

  /// Every chunk of every file arrives at once from now on.
  func openAll() {
    let waiters = state.withLock { state in
      state.isOpen = true
      defer { state.waiting = [:] }
      return state.waiting.values.flatMap { $0 }
    }
    for waiter in waiters { waiter.resume(returning: 1) }
  }
}

/// The image loader example's in-memory cache.
actor ImageCache {
  private var images: [String: Image] = [:]
  func image(for url: String) -> Image? { images[url] }
  func store(_ image: Image, for url: String) { images[url] = image }
}

/// A count bumped from any task, as the examples' stores keep one.
final class Counter: Sendable {
  private let count = LockedValue(0)
  func increment() { count.withLock { $0 += 1 } }
  var value: Int { count.withLock { $0 } }
}

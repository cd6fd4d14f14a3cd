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

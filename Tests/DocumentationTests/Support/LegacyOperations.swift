import Foundation
import TestSupport

// The legacy `Operation` subclasses Migration.md's adapter examples run unchanged: synchronous
// `main()`s with output properties, the most common field style. `@unchecked Sendable`: Swift 6
// makes a subclass restate `Operation`'s conformance; each output is written by `main()` before
// the operation finishes and read only after, an edge Foundation's own locks order.

/// Applies a tilt-shift filter to `image` in `main()`; the result is `outputImage`.
final class TiltShiftOperation: Operation, @unchecked Sendable {
  let image: Image
  var outputImage: Image?
  init(image: Image) { self.image = image }
  override func main() {
    if isCancelled { return }
    outputImage = Image(name: "\(image.name), tilt-shifted")
  }
}

/// Loads the image at `url` in `main()`; the result is `image`.
final class LoadImageOperation: Operation, @unchecked Sendable {
  let url: URL
  var image = Image(name: "")
  init(url: URL) { self.url = url }
  override func main() { image = Image(name: url.lastPathComponent) }
}

/// Uploads `file` in `main()`.
final class UploadOperation: Operation, @unchecked Sendable {
  let file: String
  var uploaded = false
  /// Its failure, recorded as such subclasses do (the retry example reads it).
  var error: (any Error)?
  init(file: String) { self.file = file }
  override func main() { uploaded = true }
}

/// Makes a thumbnail of `image` in `main()`.
final class ThumbnailOperation: Operation, @unchecked Sendable {
  let image: Image
  var thumbnail: Image?
  init(image: Image) { self.image = image }
  override func main() { thumbnail = Image(name: "thumbnail of \(image.name)") }
}

/// A step of a legacy chain; records its name in `log` when it runs.
final class StepOperation: Operation, @unchecked Sendable {
  let log: StepLog
  init(_ name: String, log: StepLog) {
    self.log = log
    super.init()
    self.name = name
  }
  override func main() { log.append(name ?? "") }
}

/// The order in which `StepOperation`s ran.
final class StepLog: Sendable {
  private let steps = LockedSteps()
  func append(_ step: String) { steps.append(step) }
  var all: [String] { steps.all }
}

/// A lock-guarded array (Foundation's `NSLock`, as legacy code has it).
private final class LockedSteps: @unchecked Sendable {
  private let lock = NSLock()
  private var steps: [String] = []
  func append(_ step: String) { lock.withLock { steps.append(step) } }
  var all: [String] { lock.withLock { steps } }
}

/// Searches photos in `main()`, and fails as much field code does: it stores the error and
/// cancels itself (`Operation` has no failed state). The query "offline" fails.
final class PhotoSearchOperation: Operation, @unchecked Sendable {
  let query: String
  var photos: [String] = []
  var error: (any Error)?
  init(query: String) { self.query = query }
  override func main() {
    if query == "offline" { return completeWithError(URLError(.notConnectedToInternet)) }
    photos = ["\(query)-1.jpg", "\(query)-2.jpg"]
  }
  func completeWithError(_ error: any Error) {
    self.error = error
    cancel()
  }
}

/// Where the migration examples show photos or an error: records what it was shown.
final class Gallery: Sendable {
  private let shown = Recorder<String>()
  func show(_ photos: [String]) { shown.append(photos.joined(separator: ",")) }
  func show(_ error: any Error) { shown.append("error: \(error)") }
  var log: [String] { shown.snapshot }
}

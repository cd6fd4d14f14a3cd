import Foundation

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

import ActorQueue
import Foundation
import OperationAdapter
import TestSupport
import Testing

/// Migration.md's "Migrating one operation at a time": the adapter's examples, compiled and run.
@Suite("Migration.md, one operation at a time")
struct MigrationAdapterTests {
  @Test("Step 1: move the queue, keep the operations")
  @MainActor
  func stepOne() async throws {
    let imageView = ImageView()
    let image = Image(name: "beach.jpg")

    // snippet: adapter-step1-after
    let queue = ActorQueue(maxConcurrentOperationCount: 4)

    let filter = try queue.addOperation(legacy: TiltShiftOperation(image: image))
    // filter is a QueueOperation<TiltShiftOperation>; its value is the finished operation itself.
    imageView.image = try await filter.value.outputImage  // CancellationError if it was cancelled
    // leaving the screen:
    queue.cancelAllOperations()  // calls each unfinished legacy operation's cancel()
    // end snippet

    #expect(imageView.image == Image(name: "beach.jpg, tilt-shifted"))
  }

  @Test("A legacy failure is not a cancellation: the handle fails with the operation's error")
  func legacyFailure() async throws {
    let gallery = Gallery()
    let before = OperationQueue()
    for query in ["beach", "offline"] { adapterFailureBefore(queue: before, query: query, gallery: gallery) }
    await withCheckedContinuation { done in before.addBarrierBlock { done.resume() } }

    let queue = ActorQueue()
    for query in ["beach", "offline"] {
      // snippet: adapter-failure-after
      let search = try queue.addOperation(legacy: PhotoSearchOperation(query: query), error: { $0.error })
      do {
        gallery.show(try await search.value.photos)
      } catch is CancellationError {
        // cancelled through the queue, or by legacy code before it started
      } catch {
        gallery.show(error)  // the search's own failure, e.g. URLError(.notConnectedToInternet)
      }
      // end snippet
      #expect(search.state == (query == "offline" ? .failed : .finished))
    }
    let shown = gallery.log
    #expect(shown.count == 4 && Array(shown[..<2]).sorted() == Array(shown[2...]).sorted(), "\(shown)")
    #expect(shown.contains("beach-1.jpg,beach-2.jpg"))
    #expect(shown.contains { $0.hasPrefix("error: ") })
  }

  @Test("Step 2: mix old and new in one graph")
  func stepTwo() async throws {
    let log = StepLog()
    let save = StepOperation("save", log: log)
    let parse = StepOperation("parse", log: log)
    let fetch = StepOperation("fetch", log: log)
    let queue = ActorQueue(name: "work", maxConcurrentOperationCount: 2)
    let url = URL(fileURLWithPath: "/images/cat.png")
    let file = "report.pdf"
    @Sendable func makeThumbnail(_ image: Image) async throws -> Image { Image(name: "small \(image.name)") }
    actor Server {
      var notified = false
      func notify() { notified = true }
    }
    let server = Server()
    struct Auth: Sendable { func refreshToken() async throws -> String { "token" } }
    let auth = Auth()
    let legacyFetch = StepOperation("legacy fetch", log: log)
    let legacyQueue = OperationQueue()
    struct Uploader: Sendable { func upload(_ file: String) async throws {} }
    let uploader = Uploader()

    // snippet: adapter-step2-after
    // Legacy operations that depend on each other through Foundation keep doing so. A handle waits
    // for its legacy dependencies without holding a slot, so this never deadlocks, in any order:
    let serial = ActorQueue(maxConcurrentOperationCount: 1)
    save.addDependency(parse)  // Foundation dependencies
    parse.addDependency(fetch)
    for operation in [save, parse, fetch] { try serial.addOperation(legacy: operation) }

    // New async work that needs a legacy operation's output: a typed input.
    let load = try queue.addOperation(legacy: LoadImageOperation(url: url))
    let thumbnail = queue.addOperation(after: load) { load in try await makeThumbnail(load.image) }

    // Ordering only, in a prepared graph:
    let legacyUpload = QueueOperation(legacy: UploadOperation(file: file))
    let notify = QueueOperation { await server.notify() }
    try notify.addDependency(legacyUpload)
    try await queue.addOperations([legacyUpload, notify], waitUntilFinished: true)

    // A legacy operation, still in an OperationQueue, that must wait for new async work:
    let refresh = queue.addOperation { try await auth.refreshToken() }
    let marker = refresh.asFoundationOperation()  // an Operation that finishes when refresh ends
    legacyFetch.addDependency(marker)
    legacyQueue.addOperation(marker)  // add it to a queue like any Operation
    legacyQueue.addOperation(legacyFetch)

    // New async code inside an old OperationQueue:
    legacyQueue.addOperation(AsyncBlockOperation { try await uploader.upload(file) })
    // end snippet

    await serial.waitUntilAllOperationsAreFinished()
    await legacyQueue.allFinished()
    #expect(try await thumbnail.value == Image(name: "small cat.png"))
    #expect(await server.notified)
    let steps = log.all
    #expect(steps.filter { $0 != "legacy fetch" } == ["fetch", "parse", "save"])
    #expect(steps.contains("legacy fetch") && refresh.isFinished)
  }

  @Test("Step 3: retire the subclass")
  func stepThree() async throws {
    let queue = ActorQueue(name: "images")
    let load = queue.addOperation { Data("pixels".utf8) }
    @Sendable func tiltShift(_ data: Data) throws -> Image { Image(name: "\(data.count) tilt-shifted bytes") }

    // snippet: adapter-step3-after
    // before: final class TiltShiftOperation: Operation { … 60 lines of state and KVO … }
    let filtered = queue.addOperation(after: load) { data in try tiltShift(data) }
    // end snippet

    #expect(try await filtered.value == Image(name: "6 tilt-shifted bytes"))
  }

  @Test("A legacy operation handed its queue instead of OperationQueue.current")
  func handedItsQueue() async throws {
    let queue = ActorQueue(name: "resize")
    let resize = ResizeOperation(queue: queue, image: Image(name: "cat.png"))
    let handle = try queue.addOperation(legacy: resize)
    _ = try await handle.value
    await queue.waitUntilAllOperationsAreFinished()
    #expect(resize.thumbnail?.isFinished == true)
  }
}

final class ResizeOperationBefore: Operation, @unchecked Sendable {
  let image = Image(name: "cat.png")

  // snippet: adapter-current-before
  override func main() {
    OperationQueue.current?.addOperation(ThumbnailOperation(image: image))
  }
  // end snippet
}

// snippet: adapter-current-after
final class ResizeOperation: Operation, @unchecked Sendable {
  let queue: ActorQueue
  let image: Image
  private(set) var thumbnail: ThumbnailOperation?

  init(queue: ActorQueue, image: Image) {
    self.queue = queue
    self.image = image
  }

  override func main() {
    let thumbnail = ThumbnailOperation(image: image)
    self.thumbnail = thumbnail
    _ = try? queue.addOperation(legacy: thumbnail)
    // or new async work: queue.addOperation { try await makeThumbnail(image) }
  }
}
// end snippet

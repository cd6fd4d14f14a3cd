import ActorQueue
import Foundation
import Testing

/// README.md's examples, compiled and run.
@Suite("README")
struct ReadmeTests {
  @Test("The opening example")
  func teaser() async throws {
    let url = URL(fileURLWithPath: "/images/1.png")
    @Sendable func fetch(_ url: URL) async throws -> Data { Data(url.lastPathComponent.utf8) }
    @Sendable func tiltShift(_ data: Data) throws -> String { "tilt-shifted \(data.count) bytes" }

    // snippet: readme-teaser
    let queue = ActorQueue(name: "images", maxConcurrentOperationCount: 4)

    let load = queue.addOperation(name: "load") { try await fetch(url) }  // QueueOperation<Data>
    let filtered = queue.addOperation(after: load) { data in try tiltShift(data) }  // receives the Data
    let image = try await filtered.value  // suspends, never blocks

    queue.maxConcurrentOperationCount = 2  // live, from any context, no await
    queue.cancelAllOperations()  // waiting ops end at once; running ones see Task.isCancelled
    // end snippet

    #expect(image == "tilt-shifted 5 bytes")
  }

  @Test("Quick start")
  func quickStart() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }

    // snippet: quick-start
    // Stand-ins for your own async work.
    @Sendable func download(_ file: String) async throws -> [UInt8] { Array(file.utf8) }
    @Sendable func renderThumbnail(_ data: [UInt8]) -> String { "thumbnail of \(data.count) bytes" }
    @Sendable func removeTemporaryFiles() async {}

    let downloads = ActorQueue(name: "downloads", maxConcurrentOperationCount: 3)
    let render = ActorQueue(name: "render")  // unlimited
    downloads.isSuspended = true  // build the graph first: nothing starts yet

    // Add work: the body is async; its return is the finish. No isExecuting/isFinished, no KVO.
    let file = downloads.addOperation(name: "report.pdf", priority: .high) {
      try await download("report.pdf")
    }

    // Dependencies: typed (the body receives the input's value) or ordering only, across queues.
    let thumbnail = render.addOperation(name: "thumbnail", after: file) { data in renderThumbnail(data) }
    let cleanup = QueueOperation(name: "cleanup") { await removeTemporaryFiles() }
    try cleanup.addDependency(file)  // runs after `file` ends, however it ends
    try downloads.addOperation(cleanup)

    // A dependency that would close a cycle is refused with a typed error; nothing changes.
    do {
      try file.addDependency(cleanup)
    } catch ActorQueueError.dependencyCycle {
      print("refused: cleanup already waits for report.pdf")
    }

    // Completion: exactly once, whatever the outcome; released after it runs.
    thumbnail.onCompletion { result in print("completed:", result) }

    // State events, typed, in order: the current state first; the stream ends after the last.
    let states = thumbnail.events
    // A queue's events: every transition with a global sequence number; a queue's stream lasts
    // as long as the queue, so take what you need (or consume it in a task you cancel).
    let queueEvents = downloads.events.prefix(6)

    downloads.isSuspended = false  // start
    // Results and waiting: await, never a blocked thread.
    let text = try await thumbnail.value  // throws CancellationError if it was cancelled
    print("value:", text)
    await downloads.waitUntilAllOperationsAreFinished()
    for await state in states { print(state) }
    for await event in queueEvents { print(event) }

    // The end of a pipeline, on the main actor.
    let shown = ActorQueue.main.addOperation(after: thumbnail) { text in
      print("on the main actor:", text)  // main-actor code: update your views here
    }
    try await shown.value
    // end snippet

    try expectOutput(transcript, "quick-start")
  }

  @Test("Pausing, and joining work in flight")
  func pauseAndCoalesce() async throws {
    let transcript = Transcript()
    @Sendable func print(_ items: Any...) { transcript.print(items) }
    @Sendable func receiveChunk() async throws { await Task.yield() }
    @Sendable func fetch(_ name: String) async throws -> String { "pixels of \(name)" }

    // snippet: readme-pause
    let downloads = ActorQueue(name: "downloads", maxConcurrentOperationCount: 1)
    let big = downloads.addOperation(name: "big.zip") {
      while true {
        try await ActorQueue.checkpoint()  // where it may pause; throws once it is cancelled
        try await receiveChunk()
      }
    }
    let small = downloads.addOperation(name: "small.txt") { "small.txt" }
    big.pause()  // at its next checkpoint it gives its slot to small.txt, and waits
    print(try await small.value, "ran while big.zip was", big.state)
    big.resume()  // it waits for a slot like any start, then carries on where it stopped
    for await state in big.events where state == .executing { break }
    big.cancel()  // its checkpoint throws CancellationError: the body ends there
    await big.waitUntilFinished()
    print("big.zip:", big.state)

    // A second request for work already in flight joins it: one load, a handle each.
    let images = ActorQueue(name: "images", maxConcurrentOperationCount: 4)
    images.isSuspended = true
    let cell1 = images.addOperation(coalescingBy: "cat.jpg") { try await fetch("cat.jpg") }
    let cell2 = images.addOperation(coalescingBy: "cat.jpg") { try await fetch("cat.jpg") }
    print("loads:", images.operationCount)
    images.isSuspended = false
    print(try await cell1.value, "/", try await cell2.value)
    // end snippet

    try expectOutput(transcript, "readme-pause")
  }
}

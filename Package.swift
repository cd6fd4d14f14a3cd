// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "ActorQueue",
  // Synchronization.Atomic needs these releases: both libraries use it (the scheduler's wake-up
  // flag, operation identifiers, the adapter's runtime). Nothing else does: the libraries' lock
  // is a pthread_mutex_t (Sources/ActorQueue/Internal/Lock.swift), not Synchronization.Mutex
  // (only the bench executable uses Mutex, from the same releases), and nothing newer is used.
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "ActorQueue", targets: ["ActorQueue"]),
    .library(name: "OperationAdapter", targets: ["OperationAdapter"]),
    // For test targets only: a manual clock and the helpers a suite of queue code needs.
    .library(name: "ActorQueueTesting", targets: ["ActorQueueTesting"]),
    .executable(name: "bench", targets: ["bench"]),
  ],
  targets: [
    .target(name: "ActorQueue"),
    .target(name: "OperationAdapter", dependencies: ["ActorQueue"]),
    .target(name: "ActorQueueTesting", dependencies: ["ActorQueue"]),
    .executableTarget(name: "bench", dependencies: ["ActorQueue", "OperationAdapter"]),
    // The two field scenarios of issue 12 as runnable examples (`swift run DownloadManager`,
    // `swift run ImageLoader`): the logic in a library each, so tests can drive it with a
    // scripted network, and a small executable each that tells its story. No products: they are
    // examples to read and run, not part of the package's API.
    .target(
      name: "DownloadManagerKit", dependencies: ["ActorQueue"], path: "Sources/Examples/DownloadManagerKit"),
    .executableTarget(
      name: "DownloadManager", dependencies: ["DownloadManagerKit"], path: "Sources/Examples/DownloadManager"),
    .target(name: "ImageLoaderKit", dependencies: ["ActorQueue"], path: "Sources/Examples/ImageLoaderKit"),
    .executableTarget(
      name: "ImageLoader", dependencies: ["ImageLoaderKit"], path: "Sources/Examples/ImageLoader"),
    // Gates, recorders and a bridge for Foundation's blocking waits, shared by the test targets.
    .target(name: "TestSupport", dependencies: ["ActorQueue"], path: "Tests/TestSupport"),
    // Legacy Operation subclasses written as users write them (Swift 5 language mode, see below),
    // run by the adapter's tests. Only tests depend on it.
    .target(name: "LegacyFixtures", path: "Tests/LegacyFixtures"),
    .testTarget(name: "ActorQueueTests", dependencies: ["ActorQueue", "ActorQueueTesting", "TestSupport"]),
    .testTarget(
      name: "OperationAdapterTests",
      dependencies: ["ActorQueue", "ActorQueueTesting", "OperationAdapter", "TestSupport", "LegacyFixtures"]),
    // The Swift code of README.md, Migration.md and the DocC articles, compiled and run: each
    // block is a `// snippet: NAME` region here, kept equal to the document by .ci/snippets.py.
    .testTarget(
      name: "DocumentationTests",
      dependencies: ["ActorQueue", "ActorQueueTesting", "OperationAdapter", "TestSupport"]),
    .testTarget(
      name: "DownloadManagerTests",
      dependencies: ["DownloadManagerKit", "ActorQueue", "ActorQueueTesting", "TestSupport"],
      path: "Tests/Examples/DownloadManagerTests"),
    .testTarget(
      name: "ImageLoaderTests", dependencies: ["ImageLoaderKit", "ActorQueue", "TestSupport"],
      path: "Tests/Examples/ImageLoaderTests"),
  ]
)

// Every target: Swift 6 language mode (complete strict concurrency) and the same settings.
// Except LegacyFixtures, deliberately Swift 5 mode: it holds pre-concurrency Operation subclasses
// as the field writes them (non-Sendable closures, unsynchronised state), which Swift 6 mode
// rejects; it stands for the Swift 5 target a migrating user keeps such code in (Migration.md).
for target in package.targets {
  let languageMode: SwiftLanguageMode = target.name == "LegacyFixtures" ? .v5 : .v6
  target.swiftSettings =
    (target.swiftSettings ?? []) + [
      .swiftLanguageMode(languageMode),
      .enableUpcomingFeature("ExistentialAny"),
      .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}

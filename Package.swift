// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "ActorQueue",
  // Synchronization.Mutex and Atomic need these releases; nothing newer is required
  // (anything newer is used only behind `if #available`).
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "ActorQueue", targets: ["ActorQueue"]),
    .library(name: "OperationAdapter", targets: ["OperationAdapter"]),
    .executable(name: "bench", targets: ["bench"]),
  ],
  targets: [
    .target(name: "ActorQueue"),
    .target(name: "OperationAdapter", dependencies: ["ActorQueue"]),
    .executableTarget(name: "bench", dependencies: ["ActorQueue", "OperationAdapter"]),
    // Gates, recorders and a bridge for Foundation's blocking waits, shared by both test targets.
    .target(name: "TestSupport", dependencies: ["ActorQueue"], path: "Tests/TestSupport"),
    .testTarget(name: "ActorQueueTests", dependencies: ["ActorQueue", "TestSupport"]),
    .testTarget(
      name: "OperationAdapterTests", dependencies: ["ActorQueue", "OperationAdapter", "TestSupport"]),
  ]
)

// Every target: Swift 6 language mode (complete strict concurrency) and the same settings.
for target in package.targets {
  target.swiftSettings =
    (target.swiftSettings ?? []) + [
      .swiftLanguageMode(.v6),
      .enableUpcomingFeature("ExistentialAny"),
      .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}

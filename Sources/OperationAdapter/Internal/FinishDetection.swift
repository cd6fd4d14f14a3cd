import Foundation

/// How the adapter learns that legacy operations have finished: chosen once per process, so that
/// the path Apple platforms take also runs, and is tested, on Linux.
enum FinishDetection: String, Sendable {
  /// A `BlockOperation` sentinel that depends on them, in an `OperationQueue` of its own:
  /// Foundation's documented semantics, the only path Apple's Foundation supports.
  case sentinelQueue

  /// A sentinel that is never enqueued and fires from its `isReady` override, which
  /// corelibs-foundation reads when a dependency finishes: Linux's default, cheaper there.
  case readinessProbe

  /// The path this process uses: `ACTORQUEUE_ADAPTER_FINISH` (`sentinelQueue` or
  /// `readinessProbe`) if set and not empty, else the platform's default.
  static let current: FinishDetection = {
    let name = ProcessInfo.processInfo.environment["ACTORQUEUE_ADAPTER_FINISH"] ?? ""
    guard !name.isEmpty else {
      return foundationIsCorelibs ? .readinessProbe : .sentinelQueue
    }
    guard let chosen = FinishDetection(rawValue: name) else {
      preconditionFailure(
        "ACTORQUEUE_ADAPTER_FINISH=\(name) is not a finish detection: use sentinelQueue or readinessProbe, or unset it"
      )
    }
    precondition(
      chosen == .sentinelQueue || foundationIsCorelibs,
      "ACTORQUEUE_ADAPTER_FINISH=readinessProbe relies on corelibs-foundation; Apple's Foundation needs sentinelQueue: unset it"
    )
    return chosen
  }()

  /// Whether Foundation is swift-corelibs-foundation (every platform but Apple's), whose
  /// `Operation` learns of state changes only through `didChangeValue(forKey:)`.
  #if canImport(Darwin)
    static let foundationIsCorelibs = false
  #else
    static let foundationIsCorelibs = true
  #endif
}

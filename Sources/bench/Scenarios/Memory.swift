import ActorQueue
import Dispatch
import Foundation
import Synchronization

/// Resident memory per waiting op: N ops held waiting (a suspended queue; for task per op, N
/// child tasks of a TaskGroup suspended on a continuation), resident-memory delta / N.
///
/// Each measurement runs in a child process of its own — this binary, re-executed with the
/// hidden flag `--memory-child SYSTEM N` — so no system inherits another's heap, and
/// a warm-up of 1,000 ops first makes the runtime's one-time allocations resident. Every op
/// captures the same small counter in every system.
enum Memory {
  static let systems: [System] = [.operationQueue, .actorQueue, .taskPerOp]

  /// What each ActorQueue op carries while it waits.
  enum Variant: String, Sendable {
    case plain
    /// A deadline an hour away.
    case deadline
    /// It failed its first attempt and waits out a retry's backoff of an hour.
    case backoff
    /// Waiting in a suspended queue, with a body that may throw (`backoff`'s reference).
    case throwing
  }

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let n = sizes.memory
    let contenders = systems.map { system in
      Contender(system: system) { [spawnChild(system, n)] }
    }
    let samples = runInterleaved("memory n=\(n) (child processes)", contenders, metrics: 1, options: options)
    var rows = makeRows(
      scenario: "memory", metrics: ["bytes/op"], n: n, ops: nil, kinds: [.memory], samples: samples,
      runs: options.runs,
      note: "memory: \(ResidentMemory.source) delta per waiting op, each system in its own child process")
    // Issue 28: an operation waiting with a deadline, against one without, in the same runs.
    let timed = runInterleaved(
      "memory n=\(n) with a deadline (child processes)",
      [
        Contender(system: .taskPerOp) { [spawnChild(.actorQueue, n)] },
        Contender(system: .actorQueue) { [spawnChild(.actorQueue, n, variant: .deadline)] },
      ], metrics: 1, options: options)
    rows += makeRows(
      scenario: "memory", variant: "with a deadline", metrics: ["bytes/op"], n: n, ops: nil, kinds: [.memory],
      samples: timed, runs: options.runs,
      note: "memory with a deadline: ActorQueue's ops each with a deadline that never fires; its task per op "
        + "row is ActorQueue's ops without one, measured in turn")
    // Issue 29: an operation waiting out a retry's backoff, against one waiting in a queue.
    let backoff = runInterleaved(
      "memory n=\(n) in a retry's backoff (child processes)",
      [
        Contender(system: .taskPerOp) { [spawnChild(.actorQueue, n, variant: .throwing)] },
        Contender(system: .actorQueue) { [spawnChild(.actorQueue, n, variant: .backoff)] },
      ], metrics: 1, options: options)
    rows += makeRows(
      scenario: "memory", variant: "in a retry's backoff", metrics: ["bytes/op"], n: n, ops: nil,
      kinds: [.memory], samples: backoff, runs: options.runs,
      note: "memory in a retry's backoff: ActorQueue's ops each failed once and wait out an hour's backoff "
        + "(one policy shared by all); its task per op row is ActorQueue's same ops (a body that may throw) "
        + "waiting in a suspended queue")
    return rows
  }

  // MARK: Parent

  private static func spawnChild(_ system: System, _ n: Int, variant: Variant = .plain) -> Double {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executablePath)
    process.arguments = [
      "--memory-child", system.flag + (variant == .plain ? "" : "+\(variant.rawValue)"), String(n),
    ]
    let output = Pipe()
    process.standardOutput = output
    do {
      try process.run()
    } catch {
      preconditionFailure("bench: cannot start the memory child process \(executablePath): \(error)")
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    guard process.terminationStatus == 0, let bytes = Double(text) else {
      preconditionFailure(
        "bench: the memory child for \(system.rawValue) failed (\(process.terminationStatus)): \(text)")
    }
    return bytes
  }

  /// This binary, to re-execute.
  private static var executablePath: String {
    #if os(Linux)
      if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        return path
      }
    #endif
    return Bundle.main.executablePath ?? CommandLine.arguments[0]
  }

  // MARK: Child

  /// The child process: measures `system` with `n` waiting ops, prints bytes per op, exits.
  static func child(_ system: System, _ n: Int, variant: Variant = .plain) -> Never {
    Watchdog.enter(scenario: "memory")
    Watchdog.arm("the child process of \(system.rawValue) (\(variant.rawValue)) holding \(n) ops")
    hold(system, 1_000, variant: variant) {}
    guard let before = ResidentMemory.current() else {
      fatalError("bench: resident memory is unavailable here")
    }
    var after = before
    hold(system, n, variant: variant) { after = ResidentMemory.current() ?? before }
    print(Double(after - before) / Double(n))
    exit(0)
  }

  /// Makes `n` ops wait in `system`, calls `measure` while they all wait, then releases them.
  private static func hold(_ system: System, _ n: Int, variant: Variant = .plain, measure: () -> Void) {
    let counter = Counter()
    switch system {
    case .operationQueue:
      let queue = OperationQueue()
      queue.isSuspended = true
      for _ in 0..<n { queue.addOperation { counter.increment() } }
      verify(queue.operationCount == n, "OperationQueue holds \(queue.operationCount) of \(n) ops")
      measure()
      queue.cancelAllOperations()
      queue.isSuspended = false
      queue.waitUntilAllOperationsAreFinished()
    case .actorQueue where variant == .backoff:
      holdInBackoff(n, counter, measure: measure)
    case .actorQueue:
      let queue = ActorQueue()
      queue.isSuspended = true
      if variant == .deadline {
        let traits: [OperationTrait] = [.deadline(in: .seconds(3_600))]
        for _ in 0..<n { queue.addOperation(traits: traits) { counter.increment() } }
      } else if variant == .throwing {
        let body: @Sendable () async throws -> Void = { counter.increment() }
        for _ in 0..<n { queue.addOperation(body) }
      } else {
        for _ in 0..<n { queue.addOperation { counter.increment() } }
      }
      verify(queue.operationCount == n, "ActorQueue holds \(queue.operationCount) of \(n) ops")
      measure()
      queue.cancelAllOperations()
    case .taskPerOp:
      let parking = Parking(expecting: n)
      let done = DispatchSemaphore(value: 0)
      Task.detached {
        await withDiscardingTaskGroup { group in
          for _ in 0..<n {
            group.addTask {
              await withUnsafeContinuation { parking.park($0) }
              counter.increment()
            }
          }
        }
        done.signal()
      }
      parking.allParked.wait(for: "\(n) parked tasks", atMost: Bounds.trial)
      measure()
      parking.releaseAll()
      done.wait(for: "\(n) released tasks", atMost: Bounds.trial)
    case .adapter, .reusedTasks:
      fatalError("bench: no memory scenario for \(system.rawValue)")
    }
  }

  private struct FirstAttemptFails: Error {}

  /// `n` ops that each failed their first attempt and wait out a backoff of an hour: the queue
  /// holds them with no slot and no task. One policy, shared, as a user makes it once.
  private static func holdInBackoff(_ n: Int, _ counter: Counter, measure: () -> Void) {
    let queue = ActorQueue(maxConcurrentOperationCount: 4)
    let traits: [OperationTrait] = [.retry(.attempts(2, backoff: .constant(.seconds(3_600)), jitter: .none))]
    var operations: [QueueOperation<Void>] = []
    operations.reserveCapacity(n)
    for _ in 0..<n {
      operations.append(
        queue.addOperation(traits: traits) {
          counter.increment()
          throw FirstAttemptFails()
        })
    }
    // Every first attempt ran and each op is back to pending (its backoff armed).
    for operation in operations {
      while operation.state != .pending || operation.attemptCount != 1 { usleep(100) }
    }
    verify(counter.count == n, "ActorQueue ran \(counter.count) of \(n) first attempts")
    operations = []  // the queue keeps them: only what it holds is measured
    measure()
    queue.cancelAllOperations()
  }

  /// Holds task per op's suspended child tasks until released.
  private final class Parking: Sendable {
    private let waiting: Mutex<[UnsafeContinuation<Void, Never>]>
    private let expected: Int
    let allParked = DispatchSemaphore(value: 0)

    init(expecting expected: Int) {
      self.expected = expected
      var storage: [UnsafeContinuation<Void, Never>] = []
      storage.reserveCapacity(expected)
      waiting = Mutex(storage)
    }

    func park(_ continuation: UnsafeContinuation<Void, Never>) {
      let all = waiting.withLock { waiting in
        waiting.append(continuation)
        return waiting.count == expected
      }
      if all { allParked.signal() }
    }

    func releaseAll() {
      for continuation in waiting.withLock({ $0 }) { continuation.resume() }
    }
  }
}

/// The process's resident memory, in bytes.
enum ResidentMemory {
  #if os(Linux)
    static let source = "resident memory (/proc/self/statm)"

    static func current() -> Int? {
      guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
      let fields = text.split(separator: " ")
      guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
      return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
  #else
    /// Elsewhere, the portable fallback: the peak resident size from `getrusage`, which grows
    /// with the waiting ops just as the current size does (the child only allocates).
    static let source = "peak resident memory (getrusage)"

    static func current() -> Int? {
      var usage = rusage()
      guard getrusage(RUSAGE_SELF, &usage) == 0 else { return nil }
      #if canImport(Darwin)
        return Int(usage.ru_maxrss)  // bytes on Darwin
      #else
        return Int(usage.ru_maxrss) * 1024  // kilobytes elsewhere
      #endif
    }
  #endif
}

import ActorQueue

/// What `ActorQueue.checkpoint()` costs when it finds nothing to do (issue 12: "costs next to
/// nothing"): N calls in a loop, timed,
/// - `in a body`: in an operation's body (the case it is made for: an atomic load of the number
///   of operations asked to pause, process-wide, which is 0 here),
/// - `in a body, hooks`: the same with `onPause:`/`onResume:` closures (neither runs),
/// - `outside a body`: in a task that is no operation's body (the same load; only the task's
///   cancellation is checked).
/// Each also checks the task's cancellation (`Task.checkCancellation()`). Two rows each: `time`,
/// the wall-clock time of the loop (a throughput row whose `n` is the number of calls: with
/// 1,000,000 calls, milliseconds read as nanoseconds per call), and `cpu/call`, the process's CPU
/// time per call (every thread, user and system; nothing else runs meanwhile), which other work
/// on the machine inflates less than wall-clock time (the time the loop waits for a core is not
/// counted) but still does (shared caches, a virtual machine's stolen time): on this project's
/// 2-core machine, 51–61 ns in quiet runs, up to 96 ns in CI's quick run right after the
/// sanitizer builds. ActorQueue only: Foundation has no pause point, only `isCancelled`.
enum Checkpoint {
  static let note =
    "checkpoint: ActorQueue.checkpoint() calls that find nothing to do, in a loop; n = calls (time per 1,000,000 "
    + "calls in ms = ns per call); cpu/call: the process's CPU time per call, which the machine's load inflates less"

  static func run(_ options: Options, _ sizes: Sizes) -> [Row] {
    let n = sizes.checkpointCalls
    let variants: [(name: String, trial: () -> [Double])] = [
      ("in a body", { insideBody(n, hooks: false) }),
      ("in a body, hooks", { insideBody(n, hooks: true) }),
      ("outside a body", { outsideBody(n) }),
    ]
    var rows: [Row] = []
    for variant in variants {
      let samples = runInterleaved(
        "checkpoint \(variant.name) calls=\(n)", [Contender(system: .actorQueue, trial: variant.trial)],
        metrics: 2, options: options)
      rows += makeRows(
        scenario: "checkpoint", variant: variant.name, metrics: ["time", "cpu/call"], n: n, ops: n,
        kinds: [.throughput, .cpuPerOp], samples: samples, runs: options.runs, note: note)
    }
    return rows
  }

  /// [seconds, CPU seconds per call] for `n` checkpoints in one operation's body.
  static func insideBody(_ n: Int, hooks: Bool) -> [Double] {
    blocking {
      let queue = ActorQueue(name: "checkpoint")
      let operation = queue.addOperation { () -> [Double] in
        let cpu = processCPUSeconds()
        let start = now()
        if hooks {
          var paused = 0
          for _ in 0..<n {
            try await ActorQueue.checkpoint(onPause: { paused += 1 }, onResume: { paused -= 1 })
          }
          verify(paused == 0, "a checkpoint paused")
        } else {
          for _ in 0..<n { try await ActorQueue.checkpoint() }
        }
        let elapsed = secondsSince(start)
        return [elapsed, (processCPUSeconds() - cpu) / Double(n)]
      }
      do {
        return try await operation.value
      } catch {
        preconditionFailure("bench: checkpoint threw \(error)")
      }
    }
  }

  /// [seconds, CPU seconds per call] for `n` checkpoints in a task that is no operation's body.
  static func outsideBody(_ n: Int) -> [Double] {
    blocking {
      let cpu = processCPUSeconds()
      let start = now()
      do {
        for _ in 0..<n { try await ActorQueue.checkpoint() }
      } catch {
        preconditionFailure("bench: checkpoint threw \(error)")
      }
      let elapsed = secondsSince(start)
      return [elapsed, (processCPUSeconds() - cpu) / Double(n)]
    }
  }
}

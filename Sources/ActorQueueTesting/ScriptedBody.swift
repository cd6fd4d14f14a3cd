import ActorQueue

/// A body written as a list of steps: what an operation's body does in a test, run after run.
///
/// Each run (an operation's body; with a retry policy, each attempt) takes the steps in order:
/// those that wait (``Step/waiting(at:)``, ``Step/sleeping(for:on:)``, ``Step/checkpoint``) and
/// then one that ends the run (``Step/returning(_:)``, ``Step/failing(_:)``, ``Step/hanging``).
/// The next run goes on from the step after it; once the steps are used up, each run ends as
/// the last one did.
///
/// ```swift
/// let fetch = ScriptedBody<Int>(.failing(Offline()), .failing(Offline()), .returning(42))
/// let operation = queue.addOperation(traits: [.retry(.attempts(3))], fetch.body)
/// #expect(try await operation.value == 42)   // the third attempt returned
/// ```
///
/// Runs that overlap (one scripted body given to several operations) take the steps in the
/// order they reach them. Waiting at a gate, sleeping on a manual clock and hanging count as
/// still for ``ManualClock/settle(timeout:sourceLocation:)``.
public struct ScriptedBody<Value: Sendable>: Sendable {
  /// One step of a scripted body. A struct with static members, so that new steps never break
  /// your code.
  public struct Step: Sendable {
    fileprivate enum Kind: Sendable {
      case value(Value)
      case failure(any Error)
      case hang
      case gate(TestGate)
      case sleep(Duration, ManualClock)
      case checkpoint
    }

    fileprivate let kind: Kind

    fileprivate var endsRun: Bool {
      switch kind {
      case .value, .failure, .hang: true
      case .gate, .sleep, .checkpoint: false
      }
    }

    /// Ends the run returning `value`.
    public static func returning(_ value: Value) -> Step { Step(kind: .value(value)) }
    /// Ends the run throwing `error`.
    public static func failing(_ error: any Error) -> Step { Step(kind: .failure(error)) }
    /// Ends the run only when its task is cancelled, throwing `CancellationError`: an operation
    /// that never finishes by itself (a request that never answers).
    public static var hanging: Step { Step(kind: .hang) }
    /// Waits until `gate` is open.
    public static func waiting(at gate: TestGate) -> Step { Step(kind: .gate(gate)) }
    /// Sleeps `duration` on `clock`: the run goes on once the test advances the clock that far.
    /// Throws `CancellationError` if the task is cancelled meanwhile.
    public static func sleeping(for duration: Duration, on clock: ManualClock) -> Step {
      Step(kind: .sleep(duration, clock))
    }
    /// `try await ActorQueue.checkpoint()`: pauses here if the operation was asked to pause,
    /// throws `CancellationError` if it was cancelled.
    public static var checkpoint: Step { Step(kind: .checkpoint) }
  }

  private final class Progress: Sendable {
    let steps: [Step]
    /// The next step to take, and the runs begun.
    let state = LockedValue<(next: Int, runs: Int)>((0, 0))

    init(_ steps: [Step]) { self.steps = steps }
  }

  private let progress: Progress

  /// A body that takes `steps` in order, run after run. At least one must end a run (returning,
  /// failing or hanging): checked here, and without one it stops the program with a message, in
  /// every build configuration.
  public init(_ steps: [Step]) {
    guard steps.contains(where: \.endsRun) else {
      fatalError("ScriptedBody needs a step that ends a run: add .returning(_:), .failing(_:) or .hanging")
    }
    progress = Progress(steps)
  }

  /// A body that takes `steps` in order, run after run.
  public init(_ steps: Step...) { self.init(steps) }

  /// How many runs have begun.
  public var runs: Int { progress.state.withLock { $0.runs } }

  /// The body to give a queue: `queue.addOperation(scripted.body)`.
  public var body: @Sendable () async throws -> Value {
    { [self] in try await self() }
  }

  /// Runs the body once: the steps from where the last run stopped, to the next that ends a run.
  public func callAsFunction() async throws -> Value {
    let progress = progress
    progress.state.withLock { $0.runs += 1 }
    while true {
      let step = progress.state.withLock { state -> Step in
        guard state.next < progress.steps.count else {
          // Used up: the run ends as the last one that ended did.
          return progress.steps.last(where: \.endsRun)!
        }
        defer { state.next += 1 }
        return progress.steps[state.next]
      }
      switch step.kind {
      case .value(let value): return value
      case .failure(let error): throw error
      case .hang:
        await hangUntilCancelled()
        throw CancellationError()
      case .gate(let gate): await gate.wait()
      case .sleep(let duration, let clock): try await clock.sleep(for: duration)
      case .checkpoint: try await ActorQueue.checkpoint()
      }
    }
  }
}

/// Suspends until the calling task is cancelled, parked for `settle()` meanwhile.
private func hangUntilCancelled() async {
  let gate = TestGate()
  await withTaskCancellationHandler {
    await gate.wait()
  } onCancel: {
    gate.open()
  }
}

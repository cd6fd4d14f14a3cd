/// Misuse of the adapter between Foundation's `Operation` and `ActorQueue`, or a legacy
/// operation that did not finish in time.
///
/// Match it by its static members wherever the error is an `any Error`, as you would an enum
/// case:
///
/// ```swift
/// do {
///   let handle = try queue.addOperation(legacy: operation)
///   _ = try await handle.value
/// } catch OperationAdapterError.alreadyFinished {
///   // an Operation runs once: create a new instance
/// } catch OperationAdapterError.timedOut {
///   // only with addOperation(legacy:timeout:)
/// }
/// ```
///
/// `switch error { case OperationAdapterError.alreadyAdded: … }`,
/// `catch let error as OperationAdapterError where error == .alreadyAdded` and, in a Swift
/// Testing suite, `#expect(throws: OperationAdapterError.alreadyFinished) { … }` work too. It is
/// a struct with static members rather than an enum so that new codes may be added without
/// breaking your code. ``description`` says what to do instead.
public struct OperationAdapterError: Error, Equatable, Sendable, CustomStringConvertible {
  private enum Code: Equatable, Sendable {
    case alreadyFinished
    case alreadyExecuting
    case alreadyAdded
    case timedOut
  }

  private let code: Code

  private init(_ code: Code) { self.code = code }

  /// The legacy operation has already finished (`isFinished` is `true`): an `Operation` runs at
  /// most once. Nothing was enqueued. (Foundation traps when such an operation is enqueued.)
  public static let alreadyFinished = OperationAdapterError(.alreadyFinished)

  /// The legacy operation is executing (`isExecuting` is `true`): something started it already,
  /// an `OperationQueue` or a direct call to `start()`. Nothing was enqueued.
  public static let alreadyExecuting = OperationAdapterError(.alreadyExecuting)

  /// The legacy operation was handed to the adapter before and has not finished: it is wrapped
  /// by another `QueueOperation` already. Nothing was enqueued.
  public static let alreadyAdded = OperationAdapterError(.alreadyAdded)

  /// The legacy operation did not signal that it finished within the timeout given to
  /// `addOperation(legacy:timeout:)` or `QueueOperation(legacy:timeout:)`. The adapter called
  /// its `cancel()`, released the queue's slot and ended the operation `.failed`; the legacy
  /// operation itself is abandoned and may still be running.
  public static let timedOut = OperationAdapterError(.timedOut)

  /// Whether `error` is an `OperationAdapterError` with this code: what makes
  /// `catch OperationAdapterError.alreadyFinished` and `case OperationAdapterError.timedOut:`
  /// match an `any Error`. An error of any other type never matches.
  public static func ~= (pattern: OperationAdapterError, error: any Error) -> Bool {
    (error as? OperationAdapterError) == pattern
  }

  /// What went wrong and what to do instead.
  public var description: String {
    switch code {
    case .alreadyFinished:
      "OperationAdapterError.alreadyFinished: this Operation has already finished and an "
        + "Operation runs at most once; nothing was enqueued. Create a new instance for each run."
    case .alreadyExecuting:
      "OperationAdapterError.alreadyExecuting: this Operation is already executing (an "
        + "OperationQueue or a call to start() started it); nothing was enqueued. Hand a legacy "
        + "operation to the adapter instead of starting it or adding it to an OperationQueue."
    case .alreadyAdded:
      "OperationAdapterError.alreadyAdded: this Operation is already wrapped by another "
        + "QueueOperation that has not finished; nothing was enqueued. Keep the handle returned "
        + "the first time and await it, or create a new instance for each run."
    case .timedOut:
      "OperationAdapterError.timedOut: the legacy Operation did not set isFinished within its "
        + "timeout; it was cancelled and abandoned, and its queue slot released. Make sure every "
        + "path of the operation (including cancellation) sends didChangeValue(forKey: "
        + "\"isFinished\") after isFinished becomes true, or raise the timeout."
    }
  }
}

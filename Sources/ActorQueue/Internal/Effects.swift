/// What a critical section decided to do once the engine's lock is released.
///
/// The scheduler decides under the lock and acts outside it: starting worker tasks, resuming
/// waiters, running completion handlers and cancelling tasks (which runs the body's
/// cancellation handlers) are user-visible effects, and none of them may run while the lock is
/// held. The arrays stay empty, and allocate nothing, in the common case.
struct Effects {
  /// Whether any effect was recorded: most critical sections record none.
  private var isEmpty = true
  private var spawns: [QueueCore] = []
  private var resumptions: [@Sendable () -> Void] = []
  private var completions: [@Sendable () -> Void] = []
  private var waiters: [UnsafeContinuation<Void, Never>] = []
  private var cancellations: [Task<Void, Never>] = []

  /// Start one worker task for `queue`.
  mutating func spawnWorker(for queue: QueueCore) {
    isEmpty = false
    spawns.append(queue)
  }

  /// Hand `element` to an event consumer waiting for it.
  mutating func resume<Element: Sendable>(
    _ consumer: UnsafeContinuation<Element?, Never>, returning element: Element?
  ) {
    isEmpty = false
    resumptions.append { consumer.resume(returning: element) }
  }

  /// Run an operation's completion handlers.
  mutating func complete(_ handlers: @escaping @Sendable () -> Void) {
    isEmpty = false
    completions.append(handlers)
  }

  /// Wake tasks waiting for operations to end.
  mutating func wake(_ continuations: [UnsafeContinuation<Void, Never>]) {
    isEmpty = false
    waiters.append(contentsOf: continuations)
  }

  /// Cancel a worker task (its operation's body sees `Task.isCancelled`).
  mutating func cancel(_ task: Task<Void, Never>) {
    isEmpty = false
    cancellations.append(task)
  }

  /// Performs everything, in this order: workers are started first so the queue keeps moving
  /// while user code runs; events are delivered before completion handlers, and completion
  /// handlers run before waiters wake, so a task that awaited an operation finds its handlers
  /// already run.
  consuming func perform() {
    guard !isEmpty else { return }
    for queue in spawns { Engine.spawnWorker(for: queue) }
    for resumption in resumptions { resumption() }
    for completion in completions { completion() }
    for waiter in waiters { waiter.resume() }
    for task in cancellations { task.cancel() }
  }
}

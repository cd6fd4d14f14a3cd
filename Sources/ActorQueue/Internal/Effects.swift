/// What a critical section decided to do once the engine's lock is released.
///
/// The scheduler decides under the lock and acts outside it: starting worker tasks, resuming
/// waiters, running completion handlers and cancelling tasks (which runs the body's
/// cancellation handlers) are user-visible effects, and none of them may run while the lock is
/// held. Most critical sections record none: the lists are optional, so an empty `Effects`
/// costs no allocation and no reference counting (five empty arrays measured 10% of a worker's
/// time per operation in retain/release alone).
struct Effects {
  private var spawns: [(QueueCore, Worker, WorkerAction?)]?
  private var resumptions: [@Sendable () -> Void]?
  private var completions: [@Sendable () -> Void]?
  private var waiters: [UnsafeContinuation<Void, Never>]?
  private var cancellations: [Worker]?

  /// Start one worker task for `queue`, which claims its first operation itself.
  mutating func spawnWorker(for queue: QueueCore) {
    spawns.append((queue, Worker(), nil))
  }

  /// Start `worker`'s task for `queue` with its first step decided already (an operation
  /// claimed for it under the lock), so the new task runs it without taking the lock first.
  mutating func spawnWorker(_ worker: Worker, for queue: QueueCore, first: WorkerAction) {
    spawns.append((queue, worker, first))
  }

  /// Hand `element` to an event consumer waiting for it.
  mutating func resume<Element: Sendable>(
    _ consumer: UnsafeContinuation<Element?, Never>, returning element: Element?
  ) {
    resumptions.append { consumer.resume(returning: element) }
  }

  /// Run an operation's completion handlers.
  mutating func complete(_ handlers: @escaping @Sendable () -> Void) {
    completions.append(handlers)
  }

  /// Wake tasks waiting for operations to end.
  mutating func wake(_ continuations: [UnsafeContinuation<Void, Never>]) {
    if waiters == nil {
      waiters = continuations
    } else {
      waiters!.append(contentsOf: continuations)
    }
  }

  /// Cancel a worker task (its operation's body sees `Task.isCancelled`).
  mutating func cancel(_ worker: Worker) {
    cancellations.append(worker)
  }

  /// Performs everything, in this order: workers are started first so the queue keeps moving
  /// while user code runs; events are delivered before completion handlers, and completion
  /// handlers run before waiters wake, so a task that awaited an operation finds its handlers
  /// already run.
  consuming func perform() {
    if let spawns {
      for (queue, worker, first) in spawns { Engine.spawnWorker(worker, for: queue, first: first) }
    }
    if let resumptions { for resumption in resumptions { resumption() } }
    if let completions { for completion in completions { completion() } }
    if let waiters { for waiter in waiters { waiter.resume() } }
    if let cancellations { for worker in cancellations { worker.cancelTask() } }
  }
}

extension Optional {
  /// Appends to the list, creating it on first use.
  fileprivate mutating func append<Element>(_ element: Element) where Wrapped == [Element] {
    if self == nil {
      self = [element]
    } else {
      self!.append(element)
    }
  }
}

/// What a queue does when a task of a higher priority awaits one of its waiting operations
/// (``ActorQueue/escalation``). A struct with static members, so later policies break no `switch`.
///
/// Whatever the policy, awaiting an operation (``QueueOperation/value``,
/// ``QueueOperation/result``, ``AnyQueueOperation/waitUntilFinished()``) escalates it and every
/// unfinished operation it waits for, on any queue, to the awaiting task's priority: a running
/// body's task is escalated, and one that starts later runs escalated. The policy decides only
/// whether an escalated operation also moves ahead of the others waiting in its queue.
///
/// **Foundation:** `Operation.qualityOfService` is fixed by the caller; waiting on an operation
/// raises nothing it depends on.
public struct EscalationPolicy: Sendable, Hashable, CustomStringConvertible {
  let reorders: Bool

  /// The default: escalation raises the tasks' priority, and the queue keeps its order
  /// (``OperationPriority``, then submission: Foundation's).
  public static let taskPriority = EscalationPolicy(reorders: false)

  /// Escalation raises the tasks' priority, and an escalated operation that has not started is
  /// raised to ``OperationPriority/veryHigh`` (its ``AnyQueueOperation/queuePriority`` reads so),
  /// so it starts before the operations of lower priority: a request the user now waits for
  /// overtakes the prefetches queued before it.
  public static let taskPriorityAndOrder = EscalationPolicy(reorders: true)

  /// `taskPriority` or `taskPriorityAndOrder`.
  public var description: String { reorders ? "taskPriorityAndOrder" : "taskPriority" }
}

extension ActorQueue {
  /// What escalation does to this queue's waiting operations (see ``EscalationPolicy``);
  /// ``EscalationPolicy/taskPriority`` by default. Changing it affects later escalations.
  public nonisolated var escalation: EscalationPolicy {
    get { Engine.read { EscalationPolicy(reorders: $0.queues[index].reordersEscalated) } }
    set { Engine.mutate { [index] in $0.queues[index].reordersEscalated = newValue.reorders } }
  }
}

extension AnyQueueOperation {
  /// The priority its body runs at, or will: its queue's ``ActorQueue/taskPriority``
  /// (`.medium` for a queue that names none), raised to that of the highest-priority task that
  /// awaited it or an operation that waits for it. Never lowered. `nil` for an operation in no
  /// queue that nothing escalated; once ended, the escalation it reached. O(1) under the
  /// scheduler's lock.
  ///
  /// The scheduler's view: the runtime escalates the body's task to it where it can (Apple's
  /// platforms 26 and later, and Linux); a body reads its own with `Task.currentPriority`.
  public var effectiveTaskPriority: TaskPriority? {
    Engine.read { $0.effectiveTaskPriority(of: recordIndex) }.map { TaskPriority(rawValue: $0) }
  }

  /// Escalates the operation as a task of `priority` awaiting it would (for tests and the
  /// random testers, which cannot park a task per escalation).
  package func escalate(to priority: TaskPriority) {
    Engine.run { [recordIndex] in $0.escalate(recordIndex, to: priority.rawValue, now: Engine.now, &$1) }
  }
}

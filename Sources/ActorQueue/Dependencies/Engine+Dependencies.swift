/// How a dependency releases its dependent.
///
/// Foundation knows only ``completion``: a dependent runs once its dependency has ended,
/// however it ended. ``success`` is the policy users of Operation libraries have long written
/// by hand: the dependent runs only if the dependency finished; otherwise it ends at once,
/// using no slot, as a data dependency does.
public enum DependencyRequirement: Sendable, Hashable {
  /// Release the dependent when the dependency ends: finished, failed or cancelled
  /// (Foundation's rule).
  case completion
  /// Release the dependent only when the dependency `.finished`. If the dependency failed,
  /// the dependent ends `.failed` with a ``DependencyFailedError``; if it was cancelled, the
  /// dependent ends `.cancelled`. Both happen at once and propagate transitively.
  case success
}

/// A dependency edge as the dependent holds it: strongly, as Foundation's `dependencies` do.
struct DependencyEdge {
  enum Kind: Equatable {
    case completion
    case success
    /// A typed input of `addOperation(after:)`: requires success, cannot be removed.
    case input
  }

  let operation: AnyQueueOperation
  var kind: Kind

  var requiresSuccess: Bool { kind != .completion }
}

/// A dependency edge as the dependency holds it: weakly. A dependent that is in a queue is kept
/// alive by its queue, and one that is in none can only be run if somebody still holds it; so
/// a prepared graph that is dropped without being enqueued is freed instead of keeping itself
/// alive through edges pointing both ways.
struct DependentEdge {
  weak var operation: AnyQueueOperation?
  var kind: DependencyEdge.Kind

  var requiresSuccess: Bool { kind != .completion }
}

extension Engine {
  /// Adds the edge `dependency → dependent`, refusing a cycle or a started dependent.
  static func addDependency(
    _ dependency: AnyQueueOperation, to dependent: AnyQueueOperation, kind: DependencyEdge.Kind,
    _ state: inout State, _ effects: inout Effects
  ) throws(ActorQueueError) {
    switch dependent._state {
    case .pending, .ready: break
    case .executing, .paused, .finished, .failed, .cancelled: throw .alreadyStarted
    }
    if let index = dependent.dependencyEdges.firstIndex(where: { $0.operation === dependency }) {
      // Already a dependency: only a stricter requirement changes anything.
      guard kind != .completion, dependent.dependencyEdges[index].kind == .completion else { return }
      dependent.dependencyEdges[index].kind = kind
      if let back = dependency.dependentEdges.firstIndex(where: { $0.operation === dependent }) {
        dependency.dependentEdges[back].kind = kind
      } else if dependency._state != .finished {
        endForFailedDependency(dependent, dependency, &state, &effects)
      }
      return
    }
    guard !createsCycle(dependency, dependent) else { throw .dependencyCycle }

    dependent.dependencyEdges.append(DependencyEdge(operation: dependency, kind: kind))
    if dependency._state.isTerminal {
      // Satisfied at once, unless it had to succeed and did not.
      if kind != .completion, dependency._state != .finished {
        endForFailedDependency(dependent, dependency, &state, &effects)
      }
      return
    }
    dependency.dependentEdges.append(DependentEdge(operation: dependent, kind: kind))
    dependent.unfinishedDependencies += 1
    if let stamp = dependent.readyStamp, let queue = dependent.queue {
      queue.machine.withdraw(stamp: stamp, priority: dependent.priority)
      dependent.readyStamp = nil
      transition(dependent, to: .pending, &state, &effects)
    }
  }

  /// Removes an ordering edge; a typed input stays. No effect once the dependent started.
  static func removeDependency(
    _ dependency: AnyQueueOperation, from dependent: AnyQueueOperation,
    _ state: inout State, _ effects: inout Effects
  ) {
    guard dependent._state == .pending || dependent._state == .ready,
      let index = dependent.dependencyEdges.firstIndex(where: {
        $0.operation === dependency && $0.kind != .input
      })
    else { return }
    dependent.dependencyEdges.remove(at: index)
    guard let back = dependency.dependentEdges.firstIndex(where: { $0.operation === dependent }) else {
      return  // the dependency had ended already
    }
    dependency.dependentEdges.remove(at: back)
    dependent.unfinishedDependencies -= 1
    if dependent.unfinishedDependencies == 0, dependent._state == .pending, let queue = dependent.queue {
      makeReady(dependent, in: queue, &state, &effects)
    }
  }

  private static func endForFailedDependency(
    _ dependent: AnyQueueOperation, _ dependency: AnyQueueOperation,
    _ state: inout State, _ effects: inout Effects
  ) {
    if dependency._state == .cancelled {
      dependent.cancelRequested = true
      terminate(dependent, as: .cancelled, error: Engine.cancellation, &state, &effects)
    } else {
      let failure = DependencyFailedError(
        input: dependency, failure: dependency.failure ?? Engine.cancellation)
      terminate(dependent, as: .failed, error: failure, &state, &effects)
    }
  }

  /// Whether `dependency → dependent` would close a cycle: whether `dependency` already waits,
  /// directly or not, for `dependent`.
  ///
  /// Cost: O(1) when `dependent` has no dependents or `dependency` no dependencies (building a
  /// graph in submission order, chains and fans included); otherwise a depth-first search over
  /// the unfinished operations that wait for `dependent`, O(their count + their edges).
  /// Ended operations are never searched: they keep no dependents.
  static func createsCycle(
    _ dependency: AnyQueueOperation, _ dependent: AnyQueueOperation
  ) -> Bool {
    if dependency === dependent { return true }
    if dependency._state.isTerminal || dependent.dependentEdges.isEmpty || dependency.dependencyEdges.isEmpty
    {
      return false
    }
    var visited: Set<ObjectIdentifier> = [ObjectIdentifier(dependent)]
    var stack = [dependent]
    while let operation = stack.popLast() {
      for edge in operation.dependentEdges {
        guard let waiting = edge.operation else { continue }
        if waiting === dependency { return true }
        if visited.insert(ObjectIdentifier(waiting)).inserted { stack.append(waiting) }
      }
    }
    return false
  }
}

extension Engine {
  /// Makes `input` a typed input of the new, unenqueued `operation`. Cannot fail: nothing waits
  /// for a new operation, so no cycle can close, and it has not started.
  static func addInput(
    _ input: AnyQueueOperation, to operation: AnyQueueOperation,
    _ state: inout State, _ effects: inout Effects
  ) {
    do {
      try addDependency(input, to: operation, kind: .input, &state, &effects)
    } catch {
      preconditionFailure("Internal inconsistency: a new operation refused an input: \(error)")
    }
  }
}

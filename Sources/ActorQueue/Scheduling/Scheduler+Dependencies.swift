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

/// Which part of an edge a link adds: an edge may be explicit, an input and a barrier edge at
/// once, and `removeDependency` removes only the explicit part.
enum EdgePart: Sendable {
  case explicit(requiresSuccess: Bool)
  case input
  case barrier
}

/// The dependency graph: edges, the cycle check, and what an ended dependency does.
extension Scheduler {
  /// `addDependency`: makes `dependent` wait for `dependency`, refusing a cycle or a started
  /// dependent.
  ///
  /// - Throws: `.alreadyStarted` if `dependent` has started or ended; `.dependencyCycle` if
  ///   `dependency` already waits for `dependent`, directly or not. Nothing changes then.
  mutating func addDependency(
    _ dependency: Handle, to dependent: Int, requirement: DependencyRequirement,
    now: () -> SchedulerInstant, _ effects: inout Effects
  ) throws(ActorQueueError) {
    guard operations[dependent].extrasBox == nil || operations[dependent].leader < 0 else {
      throw .joinedSharedWork
    }
    guard hasNotStarted(dependent) else { throw .alreadyStarted }
    let isNew = edgePosition(of: dependency.recordIndex, in: dependent) == nil
    if isNew, let cycle = cycle(closedBy: dependency.recordIndex, dependent) { throw cycleError(cycle) }
    link(dependency, to: dependent, part: .explicit(requiresSuccess: requirement == .success), &effects)
    settle(now: now, &effects)
  }

  /// Adds `part` of the edge `dependency → dependent` (a new edge, or a part of an existing
  /// one), without checks: the caller knows it closes no cycle and `dependent` has not started.
  /// A dependency that has ended already is satisfied at once, unless it had to succeed and did
  /// not: then `dependent` ends at once.
  mutating func link(_ dependency: Handle, to dependent: Int, part: EdgePart, _ effects: inout Effects) {
    let index = dependency.recordIndex
    let dependencyEnded = operations[index].phase.hasEnded
    let position: Int
    let requiredSuccessBefore: Bool
    if let existing = edgePosition(of: index, in: dependent) {
      position = existing
      requiredSuccessBefore = operations[dependent].dependencies[existing].requiresSuccess
    } else {
      operations[dependent].dependencies.append(DependencyEdge(index: index, handle: dependency))
      position = operations[dependent].dependencies.count - 1
      operations[dependent].edgePositions?[index] = position
      if !dependencyEnded {
        // The new entry carries its requirement: found again later, it cost a scan of the
        // dependency's dependents per edge (quadratic for a fan-out of typed inputs).
        let requiresSuccess: Bool =
          switch part {
          case .explicit(let requiresSuccess): requiresSuccess
          case .input: true
          case .barrier: false
          }
        operations[index].dependents.append(
          DependentEntry(index: dependent, id: operations[dependent].id, requiresSuccess: requiresSuccess))
        requiredSuccessBefore = requiresSuccess
      } else {
        requiredSuccessBefore = false
      }
      if !dependencyEnded {
        operations[dependent].unfinishedDependencies += 1
        if case .ready = operations[dependent].phase { transition(dependent, to: .pending, &effects) }
        if operations[dependent].timeMarks.contains(.exclusive) { exclusiveStopsWaiting(dependent) }
      }
    }
    switch part {
    case .explicit(let requiresSuccess):
      operations[dependent].dependencies[position].isExplicit = true
      if requiresSuccess { operations[dependent].dependencies[position].explicitRequiresSuccess = true }
    case .input:
      operations[dependent].dependencies[position].isInput = true
    case .barrier:
      operations[dependent].dependencies[position].isBarrier = true
    }
    let requiresSuccess = operations[dependent].dependencies[position].requiresSuccess
    guard requiresSuccess, !requiredSuccessBefore else { return }
    if dependencyEnded {
      if operations[index].phase.state != .finished {
        endForFailedDependency(dependent, dependency: index, &effects)
      }
    } else {
      setDependentRequirement(of: dependent, on: index, requiresSuccess: true)
    }
  }

  /// Lists `input` among the dependencies of `dependent`, which ended before it was linked (an
  /// earlier input had failed): as an ended operation lists its dependencies, weakly.
  mutating func listInput(_ input: Handle, ofEnded dependent: Int) {
    let index = input.recordIndex
    guard edgePosition(of: index, in: dependent) == nil else { return }
    var edge = DependencyEdge(index: index, handle: nil)
    edge.weakHandle = WeakHandle(object: input)
    edge.isInput = true
    operations[dependent].dependencies.append(edge)
    let position = operations[dependent].dependencies.count - 1
    operations[dependent].edgePositions?[index] = position
    operations[index].isWeaklyReferenced = true
  }

  /// The position of the edge `dependency → dependent` in `dependent`'s list, if there is one.
  /// O(1) amortised: a scan of a short list, a dictionary for a long one.
  mutating func edgePosition(of dependency: Int, in dependent: Int) -> Int? {
    if operations[dependent].dependencies.count <= 8 {
      return operations[dependent].dependencies.firstIndex { $0.index == dependency }
    }
    if operations[dependent].edgePositions == nil {
      var positions: [Int: Int] = [:]
      for (position, edge) in operations[dependent].dependencies.enumerated() {
        positions[edge.index] = position
      }
      operations[dependent].edgePositions = positions
    }
    return operations[dependent].edgePositions![dependency]
  }

  /// Updates the requirement the unfinished `dependency` keeps for `dependent`.
  private mutating func setDependentRequirement(of dependent: Int, on dependency: Int, requiresSuccess: Bool)
  {
    let id = operations[dependent].id
    if let entry = operations[dependency].dependents.firstIndex(where: {
      $0.index == dependent && $0.id == id
    }) {
      operations[dependency].dependents[entry].requiresSuccess = requiresSuccess
    }
  }

  /// `removeDependency`: removes the explicit part of an edge; a typed input and the queue's
  /// barrier ordering stay. No effect once `dependent` has started.
  mutating func removeDependency(
    _ dependency: Int, from dependent: Int, now: () -> SchedulerInstant, _ effects: inout Effects
  ) {
    guard hasNotStarted(dependent),
      operations[dependent].extrasBox == nil || operations[dependent].leader < 0,
      let position = edgePosition(of: dependency, in: dependent),
      operations[dependent].dependencies[position].isExplicit
    else { return }
    let requiredSuccess = operations[dependent].dependencies[position].requiresSuccess
    operations[dependent].dependencies[position].isExplicit = false
    operations[dependent].dependencies[position].explicitRequiresSuccess = false
    operations[dependent].dependencies[position].isProduced = false
    let dependencyEnded = operations[dependency].phase.hasEnded
    guard operations[dependent].dependencies[position].isEmpty else {
      let requiresSuccess = operations[dependent].dependencies[position].requiresSuccess
      if !dependencyEnded, requiresSuccess != requiredSuccess {
        setDependentRequirement(of: dependent, on: dependency, requiresSuccess: requiresSuccess)
      }
      return
    }
    let edge = operations[dependent].dependencies.remove(at: position)
    operations[dependent].edgePositions = nil
    if let handle = edge.handle { effects.garbage.releaseLater(handle: handle) }
    guard !dependencyEnded else { return }  // its end counted already
    let id = operations[dependent].id
    if let entry = operations[dependency].dependents.firstIndex(where: {
      $0.index == dependent && $0.id == id
    }) {
      operations[dependency].dependents.remove(at: entry)
    }
    operations[dependent].unfinishedDependencies -= 1
    if operations[dependent].unfinishedDependencies == 0, operations[dependent].phase.state == .pending,
      operations[dependent].queue >= 0
    {
      makeReady(dependent, &effects)
    }
    settle(now: now, &effects)
  }

  /// The cycle that `dependency → dependent` would close, if `dependency` already waits,
  /// directly or not, for `dependent`: record indices, `dependent` first, then `dependency`,
  /// then each operation the one before waits for, up to one that waits for `dependent`
  /// (`[dependent]` alone when they are the same). `nil` when the edge closes no cycle.
  ///
  /// Cost: O(1) when `dependent` has no dependents or `dependency` no dependencies (building a
  /// graph in submission order, chains and fans included); otherwise a depth-first search over
  /// the unfinished operations that wait for `dependent`, O(their count + their edges); the path
  /// is rebuilt only when a cycle is found. Ended operations are never searched: they keep no
  /// dependents, and own nothing (so no ownership cycle can form through them either).
  func cycle(closedBy dependency: Int, _ dependent: Int) -> [Int]? {
    if dependency == dependent { return [dependent] }
    if operations[dependency].phase.hasEnded { return nil }
    // A group waits for its children, which no dependency list says.
    if liveGroups == 0, !hasWaiters(dependent) || !waits(dependency) { return nil }
    // Each operation reached, with the one it waits for that led the search to it.
    var waitsFor: [Int: Int] = [dependent: dependent]
    var stack = [dependent]
    while let operation = stack.popLast() {
      for entry in operations[operation].dependents where isUnfinished(entry) {
        if entry.index == dependency {
          return path(from: operation, closing: dependency, dependent, waitsFor)
        }
        if waitsFor[entry.index] == nil {
          waitsFor[entry.index] = operation
          stack.append(entry.index)
        }
      }
      // A group waits for each of its children.
      if liveGroups > 0, let group = groupOperation(waitingFor: operation) {
        if group == dependency { return path(from: operation, closing: dependency, dependent, waitsFor) }
        if waitsFor[group] == nil {
          waitsFor[group] = operation
          stack.append(group)
        }
      }
      // A caller's handle to coalesced work waits for that work, as a dependent does.
      guard operations[operation].extrasBox != nil, operations[operation].hasFollowers else { continue }
      for entry in operations[operation].extras!.followers where isUnfinished(entry) {
        if entry.index == dependency {
          return path(from: operation, closing: dependency, dependent, waitsFor)
        }
        if waitsFor[entry.index] == nil {
          waitsFor[entry.index] = operation
          stack.append(entry.index)
        }
      }
    }
    return nil
  }

  /// The cycle found by ``cycle(closedBy:_:)``: `dependency` waits for `last`, which leads back
  /// through `waitsFor` to `dependent`.
  private func path(from last: Int, closing dependency: Int, _ dependent: Int, _ waitsFor: [Int: Int])
    -> [Int]
  {
    var path = [dependent, dependency]
    var operation = last
    while operation != dependent {
      path.append(operation)
      operation = waitsFor[operation]!
    }
    return path
  }

  /// The error of a refused edge that would close `cycle` (record indices, as
  /// ``cycle(closedBy:_:)`` returns them): the operations' identifiers and names.
  func cycleError(_ cycle: [Int]) -> ActorQueueError {
    .dependencyCycle(cycle.map(cycleMember))
  }

  /// Whether something unfinished may wait for `index`: a dependent, or a caller's handle to it
  /// as coalesced work.
  private func hasWaiters(_ index: Int) -> Bool {
    !operations[index].dependents.isEmpty
      || (operations[index].extrasBox != nil && operations[index].hasFollowers)
  }

  /// Whether `index` may wait for something: a dependency, or the coalesced work it follows.
  private func waits(_ index: Int) -> Bool {
    !operations[index].dependencies.isEmpty
      || (operations[index].extrasBox != nil && operations[index].leader >= 0)
  }

  /// Whether `index` waits to start: pending or ready, and neither a paused body resumed and
  /// waiting for a slot nor cancelled work running detached.
  func hasNotStarted(_ index: Int) -> Bool {
    operations[index].phase.hasNotStarted
  }

  /// Whether a dependent entry still names an unfinished operation (not ended, not freed).
  func isUnfinished(_ entry: DependentEntry) -> Bool {
    operations[entry.index].isLive && operations[entry.index].id == entry.id
      && !operations[entry.index].phase.hasEnded && !operations[entry.index].phase.isDetached
  }

  /// Ends `dependent` because `dependency`, which it required to finish, did not: cancelled
  /// with it, or failed with a ``DependencyFailedError``.
  mutating func endForFailedDependency(_ dependent: Int, dependency: Int, _ effects: inout Effects) {
    if operations[dependency].phase.state == .cancelled {
      cancelWaiting(dependent, &effects)
    } else {
      terminate(dependent, as: .failed, error: dependencyFailure(of: dependency), &effects)
    }
  }

  /// The error of a dependent of `dependency`, which failed.
  func dependencyFailure(of dependency: Int) -> DependencyFailedError {
    DependencyFailedError(
      inputID: operations[dependency].id, inputName: operations[dependency].name,
      failure: operations[dependency].failure ?? cancellationError)
  }
}

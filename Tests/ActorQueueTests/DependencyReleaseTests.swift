import ActorQueue
import Foundation
import Testing

/// Releasing a long dependency graph. Each operation keeps its dependencies listed after they
/// end (as Foundation does), so the last operation of a chain holds the whole chain, and the
/// error of the last step of a failed chain wraps the errors of every step before it; releasing
/// either must not recurse once per link. These run in a child process (exit tests): a stack
/// overflow there fails the test instead of crashing the whole test run. Also: operations linked
/// by a dependency and dropped unused must be freed, as Foundation frees them.
@Suite("Dependency graph release")
struct DependencyReleaseTests {
  @Test("Releasing the last operation of an ended 100,000-link chain does not overflow the stack")
  func releasingLongChainDoesNotOverflowStack() async {
    await #expect(processExitsWith: .success) {
      // Built and released in a task, as user code does: on a thread of the cooperative pool.
      await Task.detached {
        var chain: [QueueOperation<Void>] = []
        chain.reserveCapacity(100_000)
        for index in 0..<100_000 {
          let next = QueueOperation<Void>(name: "link\(index)") {}
          if let last = chain.last { try? next.addDependency(last) }
          chain.append(next)
        }
        for operation in chain { operation.cancel() }  // every link ends; each still lists its dependency
        #expect(chain[chain.count - 1].dependencies.count == 1)
        chain.removeAll()  // the last link now holds the whole chain, and is released last
      }.value
    }
  }

  @Test("The error of the last step of a failed 100,000-step chain is released without overflowing the stack")
  func releasingDeeplyWrappedErrorDoesNotOverflowStack() async {
    await #expect(processExitsWith: .success) {
      await Task.detached {
        let queue = ActorQueue(name: "source")
        let head = QueueOperation<Int>(name: "head") { throw DeepError() }
        var last = head
        for index in 1..<100_000 {
          let next = QueueOperation<Int>(name: "step\(index)") { 1 }
          try? next.addDependency(last, requiring: .success)
          last = next
        }
        try? queue.addOperation(head)
        // 100,000 steps from the origin; the error stays flat, so releasing it is constant work.
        var failure: (any Error)? = await last.result.failure
        #expect((failure as? DependencyFailedError)?.originID == head.id)
        last = head  // drop every operation: only `failure` holds the chain of errors now
        failure = nil
        #expect(failure == nil)
      }.value
    }
  }

  @Test("Operations linked by a dependency and dropped before they were enqueued are freed")
  func droppedUnenqueuedOperationsAreFreed() {
    weak var weakDependency: QueueOperation<Void>?
    weak var weakDependent: QueueOperation<Void>?
    do {
      let dependency = QueueOperation<Void>(name: "dependency") {}
      let dependent = QueueOperation<Void>(name: "dependent") {}
      try? dependent.addDependency(dependency)
      weakDependency = dependency
      weakDependent = dependent
    }
    #expect(weakDependent == nil)
    #expect(weakDependency == nil)

    // Foundation frees them.
    weak var foundationDependency: BlockOperation?
    weak var foundationDependent: BlockOperation?
    do {
      let dependency = BlockOperation {}
      let dependent = BlockOperation {}
      dependent.addDependency(dependency)
      foundationDependency = dependency
      foundationDependent = dependent
    }
    #expect(foundationDependent == nil)
    #expect(foundationDependency == nil)
  }

  @Test("A failure propagated down a 100,000-step chain is released without overflowing the stack")
  func releasingLongFailedChainDoesNotOverflowStack() async {
    await #expect(processExitsWith: .success) {
      await Task.detached {
        let head = QueueOperation<Int>(name: "head") { 0 }
        var last = head
        for index in 1..<100_000 {
          let next = QueueOperation<Int>(name: "step\(index)") { 1 }
          try? next.addDependency(last, requiring: .success)
          last = next
        }
        head.cancel()  // ends every step at once, cancelled
        #expect(last.state == .cancelled)
      }.value
    }
  }
}

private struct DeepError: Error {}

extension Result {
  fileprivate var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}

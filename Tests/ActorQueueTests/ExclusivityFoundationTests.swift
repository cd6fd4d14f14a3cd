import ActorQueue
import Foundation
import TestSupport
import Testing

/// Exclusivity where Foundation has none: the field's stand-in (each operation of a category
/// depends on the previous one, PSOperations' `ExclusivityController`) against `.exclusive`, on
/// ProcedureKit's issue 364 script: A on key k depends on C, added later on k.
@Suite("Exclusivity against OperationQueue's stand-in", .timeLimit(.minutes(hangLimitMinutes)))
struct ExclusivityFoundationTests {
  @Test("Foundation with a category chain: A and C wait for each other, a cycle nothing reports")
  func categoryChainDeadlocks() {
    // The chain's rule, as an app's controller applies it before adding each operation to its
    // OperationQueue (left out here: the two would wait there forever, a hang the test would be).
    var last: [String: Operation] = [:]
    func chain(_ operation: Operation, category: String) {
      if let previous = last[category] { operation.addDependency(previous) }
      last[category] = operation
    }
    let a = BlockOperation {}
    let c = BlockOperation {}
    a.addDependency(c)  // A needs C's result
    chain(a, category: "k")
    chain(c, category: "k")  // the chain makes C wait for A
    #expect(a.dependencies.contains(c) && c.dependencies.contains(a))
    #expect(!a.isReady && !c.isReady)  // neither can ever start; Foundation says nothing
  }

  @Test(
    "ActorQueue with .exclusive, even on a serial queue: C runs, then A; no edge is added, so no cycle forms")
  func exclusiveKeyDoesNotDeadlock() async throws {
    let queue = ActorQueue(name: "364", maxConcurrentOperationCount: 1)
    let order = Recorder<String>()
    let a = QueueOperation(name: "A", traits: [.exclusive("k")]) { order.append("A") }
    let c = QueueOperation(name: "C", traits: [.exclusive("k")]) { order.append("C") }
    try a.addDependency(c)
    try queue.addOperation(a)
    try queue.addOperation(c)
    try await a.value
    #expect(order.snapshot == ["C", "A"])
    #expect(c.dependencies.isEmpty)
  }
}

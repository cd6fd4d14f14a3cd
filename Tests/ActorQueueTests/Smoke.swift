import ActorQueue
import Testing

@Test func smoke() async throws {
  let queue = ActorQueue(name: "q", maxConcurrentOperationCount: 2)
  let a = queue.addOperation { 1 }
  let b = queue.addOperation(after: a) { $0 + 1 }
  #expect(try await b.value == 2)
  var ops: [QueueOperation<Int>] = []
  for i in 0..<10_000 { ops.append(queue.addOperation { i }) }
  await queue.waitUntilAllOperationsAreFinished()
  #expect(queue.operationCount == 0)
  var sum = 0
  for op in ops { sum += try await op.value }
  #expect(sum == 49_995_000)
}

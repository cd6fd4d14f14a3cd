import Synchronization

@testable import ActorQueue

/// `Scheduler.reuse` sets a few fields of a free record and assumes the rest are at their
/// initial values: the fields of each free record, other than those it sets, that differ from
/// a vacant record's (by their description: closures, handles and values alike).
enum FreeRecordCheck {
  /// Free records checked so far (the value tester prints it).
  static let checkedRecords = Atomic<Int>(0)

  /// A vacant record's fields, described.
  private static let vacant = Dictionary(
    uniqueKeysWithValues: Mirror(reflecting: OperationRecord.vacant).children.map {
      ($0.label ?? "?", String(describing: $0.value))
    })

  static func fieldsNotReset(in scheduler: Scheduler) -> [String] {
    guard !scheduler.freeRecordIndices.isEmpty else { return [] }
    var problems: [String] = []
    checkedRecords.add(scheduler.freeRecordIndices.count, ordering: .relaxed)
    for index in scheduler.freeRecordIndices {
      for child in Mirror(reflecting: scheduler.operations[index]).children {
        guard let label = child.label, !OperationRecord.fieldsSetByReuse.contains(label) else { continue }
        let value = String(describing: child.value)
        if value != vacant[label] { problems.append("record \(index).\(label) = \(value)") }
      }
    }
    return problems
  }
}

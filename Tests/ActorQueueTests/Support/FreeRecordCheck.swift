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
    // A free record has no time state: `timeSlot` is compared with the vacant record's -1.
    if vacant["timeSlot"] != "-1" || OperationRecord.fieldsSetByReuse.contains("timeSlot") {
      problems.append("the check does not cover timeSlot (vacant: \(vacant["timeSlot"] ?? "none"))")
    }
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

  /// The time state table against the records: each live record's `timeSlot` is its own and not
  /// free, and every slot is either used or free.
  static func timeSlotProblems(in scheduler: Scheduler) -> [String] {
    var problems: [String] = []
    var used = Set<Int32>()
    for (index, record) in scheduler.operations.enumerated() where record.timeSlot >= 0 {
      if !record.isLive { problems.append("free record \(index) has time slot \(record.timeSlot)") }
      if !used.insert(record.timeSlot).inserted {
        problems.append("record \(index) shares time slot \(record.timeSlot)")
      }
    }
    for (index, record) in scheduler.operations.enumerated()
    where record.timeMarks.contains(.hasState) != (record.timeSlot >= 0) {
      problems.append(
        "record \(index) has time marks \(record.timeMarks.rawValue) and time slot \(record.timeSlot)")
    }
    let free = Set(scheduler.freeTimeStates)
    if !free.isDisjoint(with: used) {
      problems.append("time slots both used and free: \(free.intersection(used))")
    }
    if used.count + free.count != scheduler.timeStates.count || free.count != scheduler.freeTimeStates.count {
      problems.append(
        "\(scheduler.timeStates.count) time slots: \(used.count) used, \(scheduler.freeTimeStates.count) free"
      )
    }
    return problems
  }
}

/// One goal of the issues, checked against the rows of this run.
struct GoalCheck: Sendable, Encodable {
  let goal: String
  let measured: String
  let pass: Bool
}

/// Checks the goals of issues 2, 3 and 5 against `rows` and marks the rows they concern.
/// Goals whose scenario did not run are left out.
func checkGoals(_ rows: inout [Row], sizes: Sizes) -> [GoalCheck] {
  var checks: [GoalCheck] = []

  /// ActorQueue's row; among several, the first compared with OperationQueue.
  func index(
    _ scenario: String, _ variant: String? = nil, metric: String = "time", n: Int? = nil,
    system: System = .actorQueue
  ) -> Int? {
    let matching = rows.indices.filter {
      rows[$0].scenario == scenario && rows[$0].variant == variant && rows[$0].metric == metric
        && rows[$0].system == system && (n == nil || rows[$0].n == n)
    }
    return matching.first { rows[$0].versusOperationQueue != nil } ?? matching.first
  }

  /// ActorQueue's ratio against OperationQueue (or the floor) at least `minimum`.
  func ratioGoal(
    _ goal: String, _ scenario: String, _ variant: String? = nil, metric: String = "time", n: Int? = nil,
    versusFloor: Bool = false, system: System = .actorQueue, atLeast minimum: Double, short: String
  ) {
    guard let row = index(scenario, variant, metric: metric, n: n, system: system) else { return }
    let ratio = versusFloor ? rows[row].versusFloor : rows[row].versusOperationQueue
    guard let ratio else { return }
    let pass = ratio >= minimum
    rows[row].goals.append("\(short) \(pass ? "PASS" : "MISS")")
    checks.append(
      GoalCheck(goal: goal, measured: "\(Format.ratio(ratio)) (n=\(Format.count(rows[row].n)))", pass: pass))
  }

  ratioGoal(
    "independent unlimited ≥ 1.5x OperationQueue", "independent", "unlimited", atLeast: 1.5, short: "≥1.5x OQ"
  )
  ratioGoal("independent max 4 ≥ 4x OperationQueue", "independent", "max 4", atLeast: 4, short: "≥4x OQ")
  ratioGoal("independent serial ≥ 4x OperationQueue", "independent", "serial", atLeast: 4, short: "≥4x OQ")
  for variant in ["unlimited", "max 4", "serial"] {
    ratioGoal(
      "independent \(variant) ≥ TaskGroup floor throughput", "independent", variant, versusFloor: true,
      atLeast: 1, short: "≥1x floor")
  }
  ratioGoal("add→start latency p50 ≤ OperationQueue's", "latency", metric: "p50", atLeast: 1, short: "≤ OQ")
  ratioGoal(
    "chain(\(Format.count(sizes.chain))) ≥ 50x OperationQueue", "chain", n: sizes.chain, atLeast: 50,
    short: "≥50x OQ")
  ratioGoal("fan-in no slower than OperationQueue", "fan-in", atLeast: 1, short: "≥1x OQ")
  ratioGoal("fan-out no slower than OperationQueue", "fan-out", atLeast: 1, short: "≥1x OQ")
  ratioGoal("cancelling waiting ops ≥ 5x OperationQueue", "cancel", atLeast: 5, short: "≥5x OQ")
  ratioGoal(
    "memory per waiting op ≤ OperationQueue's", "memory", metric: "bytes/op", atLeast: 1, short: "≤ OQ")
  // Issue 4: the adapter costs at most 2x OperationQueue per op (its speed ratio at least 0.5).
  ratioGoal(
    "adapter per-op cost ≤ 2x OperationQueue (unlimited)", "adapter", "unlimited", system: .adapter,
    atLeast: 0.5, short: "≤2x OQ cost")

  // Linearity: the per-op cost of the long chain within 1.5x of the short chain's.
  if let short = index("chain", n: sizes.chain), let long = index("chain", n: sizes.longChain),
    let shortCost = rows[short].secondsPerOp, let longCost = rows[long].secondsPerOp
  {
    let growth = longCost / shortCost
    let pass = growth <= 1.5
    rows[long].goals.append("per-op ≤1.5x n=\(Format.count(sizes.chain)) \(pass ? "PASS" : "MISS")")
    checks.append(
      GoalCheck(
        goal: "chain per-op cost at \(Format.count(sizes.longChain)) ≤ 1.5x at \(Format.count(sizes.chain))",
        measured:
          "\(Format.duration(longCost)) vs \(Format.duration(shortCost)) per op (\(Format.ratio(growth)))",
        pass: pass))
  }
  return checks
}

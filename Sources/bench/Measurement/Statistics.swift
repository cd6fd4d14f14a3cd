/// Order statistics over the samples of one system in one scenario.
struct Statistics: Sendable {
  let median: Double
  let min: Double
  let max: Double
  let count: Int

  /// `nil` when there is no finite sample.
  init?(_ samples: [Double]) {
    let sorted = samples.filter(\.isFinite).sorted()
    guard let first = sorted.first, let last = sorted.last else { return nil }
    median = Self.percentile(0.5, ofSorted: sorted)
    min = first
    max = last
    count = sorted.count
  }

  /// The `p`-quantile (0…1) of sorted values, interpolating between neighbours.
  static func percentile(_ p: Double, ofSorted sorted: [Double]) -> Double {
    precondition(!sorted.isEmpty, "percentile of no samples")
    let position = p * Double(sorted.count - 1)
    let lower = Int(position.rounded(.down))
    let upper = Swift.min(lower + 1, sorted.count - 1)
    let fraction = position - Double(lower)
    return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction
  }
}

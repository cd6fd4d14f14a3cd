import Foundation

/// Keeps OperationQueue's runs within a stated time bound where its cost grows faster than
/// linearly (dependencies on Linux): a model of its run time against N, from measured points,
/// projects the time at a larger N.
struct GrowthModel {
  private(set) var points: [(n: Int, seconds: Double)] = []

  mutating func add(n: Int, seconds: Double) { points.append((n, seconds)) }

  /// The growth exponent between the last two points (at least 1: linear); 2 (quadratic)
  /// with a single point.
  var exponent: Double {
    guard points.count >= 2 else { return 2 }
    let last = points[points.count - 1], previous = points[points.count - 2]
    guard last.seconds > 0, previous.seconds > 0, last.n != previous.n else { return 2 }
    return max(1, log2(last.seconds / previous.seconds) / log2(Double(last.n) / Double(previous.n)))
  }

  /// The projected run time at `n`; `nil` without points.
  func project(to n: Int) -> Double? {
    guard let last = points.last else { return nil }
    return last.seconds * pow(Double(n) / Double(last.n), exponent)
  }

  /// The largest N (two significant digits) whose projected run time fits `bound` seconds.
  func largestSize(within bound: Double) -> Int? {
    guard let last = points.last, last.seconds > 0 else { return nil }
    let n = Double(last.n) * pow(bound / last.seconds, 1 / exponent)
    let magnitude = pow(10, floor(log10(n)) - 1)
    return Int((n / magnitude).rounded(.down) * magnitude)
  }
}

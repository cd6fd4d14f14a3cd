/// A small, seedable pseudo-random generator (SplitMix64): the same seed gives the same script on
/// every platform and toolchain, which `SystemRandomNumberGenerator` cannot promise.
struct SplitMix64: RandomNumberGenerator, Sendable {
  private var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A value in `0..<bound` (bound > 0).
  mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

  /// True with probability `percent`/100.
  mutating func chance(_ percent: Int) -> Bool { below(100) < percent }

  mutating func pick<T>(_ values: [T]) -> T { values[below(values.count)] }

  /// The seed of script `index` in a run started from `seed`: scripts can be replayed one by one.
  static func scriptSeed(run seed: UInt64, index: Int) -> UInt64 {
    var mixer = SplitMix64(seed: seed ^ (UInt64(index) &* 0xD1B5_4A32_D192_ED03))
    return mixer.next()
  }
}

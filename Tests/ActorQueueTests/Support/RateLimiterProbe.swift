import ActorQueueTesting

@testable import ActorQueue

/// The rate-limit calls the misuse exit tests make (internal API, reached through
/// `@testable`; the exit tests' file imports the public API only).
enum RateLimiterProbe {
  static func tokenBucket(permits: Int, seconds: Int, burst: Int) -> AnyObject {
    RateLimiter.tokenBucket(permits: permits, per: .seconds(seconds), burst: burst)
  }

  static func slidingWindow(maxStarts: Int, seconds: Int) -> AnyObject {
    RateLimiter.slidingWindow(maxStarts: maxStarts, per: .seconds(seconds))
  }

  static func negativeCost() {
    _ = OperationTrait.cost(-1)
  }

  static func limiterOfAnotherClock() {
    let queue = ActorQueue(name: "api")
    queue.rateLimiters = [
      .tokenBucket(permits: 1, per: .seconds(1), burst: 1, clock: ManualClock().queueClock)
    ]
  }
}

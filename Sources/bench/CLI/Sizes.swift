/// Problem sizes: the sizes, or smaller ones for `--quick` (CI, under a minute).
struct Sizes: Sendable {
  var independent = 100_000
  /// Latency samples per run, back to back, then spaced 1 ms and 10 ms apart (the spaced ones
  /// take `samples × spacing` per system and run).
  var latencySamples = 2_000
  var latencySamplesEvery1ms = 1_000
  var latencySamplesEvery10ms = 200
  var timerSamples = 400
  var chain = 4_000
  var longChain = 64_000
  var fan = 10_000
  var dag = 100_000
  var dagEdgesPerOp = 3
  var cancel = 100_000
  /// Ops in all for the many-queues scenario, split among the queues.
  var manyQueuesOps = 16_000
  var adapter = 10_000
  var memory = 100_000
  var retry = 100_000
  var exclusive = 100_000
  /// Ops of the contended exclusivity variant (1,000 keys, 3 queues).
  var exclusiveContended = 30_000
  /// Children of the group scenario's group (the size, also with --quick).
  var group = 10_000
  /// Waiting ops among which the tags scenario's 100 tagged ones are (the size, also with --quick).
  var taggedAmong = 100_000
  /// Seconds of backlog behind the rate scenario's bucket (each system, each run).
  var rateSeconds = 10
  var transfers = 120
  /// Transfers in the pause scenario (the size, also with --quick: a run takes ~0.1 s).
  var pauseTransfers = 1_000
  /// Calls per run in the checkpoint scenario (with --quick too: a run takes ~10 ms).
  var checkpointCalls = 1_000_000
  var scaling = [1_000, 4_000, 16_000, 64_000, 256_000]
  /// OperationQueue runs a scaling size only while its run time, extrapolated from the
  /// previous sizes, stays under this many seconds per run.
  var scalingBoundSeconds = 5.0
  /// The same bound for the graph scenarios (fan-out and the DAG are quadratic or worse for
  /// OperationQueue on Linux): beyond it, OperationQueue is compared at the largest size that
  /// fits, and cut off at the full size.
  var graphBoundSeconds = 3.0

  init(quick: Bool) {
    guard quick else { return }
    independent = 20_000
    latencySamples = 300
    latencySamplesEvery1ms = 200
    latencySamplesEvery10ms = 40
    timerSamples = 100
    chain = 2_000
    longChain = 64_000
    fan = 2_000
    dag = 20_000
    cancel = 20_000
    manyQueuesOps = 4_000
    adapter = 2_000
    memory = 50_000
    retry = 20_000
    exclusive = 20_000
    exclusiveContended = 6_000
    rateSeconds = 1
    transfers = 60
    scaling = [1_000, 4_000, 16_000]
    scalingBoundSeconds = 1.5
    graphBoundSeconds = 1.5
  }
}

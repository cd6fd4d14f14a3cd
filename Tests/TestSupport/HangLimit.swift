/// The time limit, in minutes, of every test that waits on real queues: it detects a hang, it
/// does not bound performance.
///
/// `swift test` runs every suite at once on the two cooperative threads of a 2-core machine, and
/// the searching tests (stress, the random testers) keep both busy for most of the run. A test
/// whose steps each wait for a worker waits behind all of that: the back-to-back linger test
/// takes 0.16 s alone and took 20–71 s in full runs (each of its 2,000 hand-offs queues behind
/// every other test's jobs), and CI's run kept the pool busy for 70 s of its 83. A limit of one
/// minute failed it in CI although nothing hung (it ended 0.6 s after the load did). The limit is
/// therefore nearly twice the longest full run measured, under the sanitizers too (103 s); a hang still
/// fails the run, three minutes after it began.
package let hangLimitMinutes = 3

/// The time limit, in minutes, of every test that waits on real queues: it detects a hang, it
/// does not bound performance.
///
/// `swift test` starts every test at once on the two cooperative threads of a 2-core machine, and
/// the searching tests (stress, the random testers) keep both busy for most of the run, so a test
/// that takes milliseconds alone ends with the load: most tests of a full run on 2 cores take
/// 60–100 s, the searching ones up to 140 s (a run of 780 tests), and the suite run twice at once
/// beside a busy core took over 180 s for dozens of tests, none of them stuck. The limit is
/// therefore longer than a whole full run; a hang still fails the run, ten minutes after it began.
package let hangLimitMinutes = 10

/// The time limit, in minutes, of every test that waits on real queues: it detects a hang, it
/// does not bound performance.
///
/// `swift test` starts every test at once on the two cooperative threads of a 2-core machine, so
/// a test that takes milliseconds alone may wait for most of the run before it ends. The whole
/// run takes about a minute in a debug build and a few under ThreadSanitizer, so a limit of five
/// minutes never cuts a test that is moving, and a hang fails the run five minutes after it began.
package let hangLimitMinutes = 5

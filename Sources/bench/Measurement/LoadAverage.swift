import Foundation

/// The machine's load average (1, 5 and 15 minutes; Linux's /proc/loadavg), printed before and
/// after a run: other work on the machine adds noise to every number, and this puts it on record.
struct LoadAverage: Sendable, Encodable {
  let oneMinute: Double
  let fiveMinutes: Double
  let fifteenMinutes: Double

  /// `nil` where /proc/loadavg does not exist.
  static func current() -> LoadAverage? {
    #if os(Linux)
      guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return nil }
      let fields = text.split(separator: " ").prefix(3).compactMap { Double($0) }
      guard fields.count == 3 else { return nil }
      return LoadAverage(oneMinute: fields[0], fiveMinutes: fields[1], fifteenMinutes: fields[2])
    #else
      return nil
    #endif
  }

  var description: String {
    String(format: "%.2f %.2f %.2f (1, 5, 15 min)", oneMinute, fiveMinutes, fifteenMinutes)
  }
}

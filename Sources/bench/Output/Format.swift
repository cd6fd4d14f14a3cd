import Foundation

/// Human-readable numbers for the table.
enum Format {
  static func duration(_ seconds: Double?) -> String {
    guard let seconds, seconds.isFinite else { return "—" }
    switch abs(seconds) {
    case ..<1e-6: return String(format: "%.0f ns", seconds * 1e9)
    case ..<1e-3: return String(format: "%.2f µs", seconds * 1e6)
    case ..<1: return String(format: "%.2f ms", seconds * 1e3)
    default: return String(format: "%.2f s", seconds)
    }
  }

  static func bytes(_ bytes: Double?) -> String {
    guard let bytes, bytes.isFinite else { return "—" }
    return String(format: "%.0f B", bytes)
  }

  static func value(_ value: Double?, kind: Row.Kind) -> String {
    kind.isBytes ? bytes(value) : duration(value)
  }

  static func rate(_ perSecond: Double?) -> String {
    guard let perSecond, perSecond.isFinite else { return "—" }
    switch perSecond {
    case 1e6...: return String(format: "%.2f M/s", perSecond / 1e6)
    case 1e3...: return String(format: "%.0f k/s", perSecond / 1e3)
    default: return String(format: "%.0f /s", perSecond)
    }
  }

  static func ratio(_ ratio: Double?) -> String {
    guard let ratio, ratio.isFinite else { return "—" }
    return ratio >= 100 ? String(format: "%.0fx", ratio) : String(format: "%.2fx", ratio)
  }

  static func count(_ n: Int) -> String {
    var digits = Array(String(n))
    var index = digits.count - 3
    while index > 0 {
      digits.insert(",", at: index)
      index -= 3
    }
    return String(digits)
  }

  /// Pads to `width` display columns (every character here is one column wide).
  static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let count = text.count
    guard count < width else { return text }
    let padding = String(repeating: " ", count: width - count)
    return right ? padding + text : text + padding
  }

  /// `text` cut to `width` characters, its end replaced by "…" when cut.
  static func truncate(_ text: String, _ width: Int) -> String {
    text.count <= width ? text : String(text.prefix(width - 1)) + "…"
  }

  /// `text` broken into lines of at most `width` characters, at spaces.
  static func wrap(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ") {
      if !line.isEmpty, line.count + 1 + word.count > width {
        lines.append(line)
        line = ""
      }
      line += line.isEmpty ? String(word) : " " + word
    }
    if !line.isEmpty { lines.append(line) }
    return lines
  }
}

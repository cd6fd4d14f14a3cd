import Foundation

/// The `--svg` file: the scaling curves, log–log, one line per system, one panel per scenario.
/// Hand-written SVG: opens in any browser, no tool needed.
enum ScalingChart {
  private static let panelWidth = 420.0
  private static let panelHeight = 320.0
  private static let left = 80.0
  private static let top = 96.0
  private static let gap = 110.0

  static func color(_ system: System) -> (stroke: String, dash: String?) {
    switch system {
    case .operationQueue: ("#d62728", nil)
    case .actorQueue: ("#1f77b4", nil)
    case .taskPerOp: ("#555555", "6 4")
    case .reusedTasks: ("#9467bd", "1 3")
    case .adapter: ("#2ca02c", "2 3")
    }
  }

  static func render(_ rows: [Row], subtitle: String) -> String {
    let scenarios = ["scaling independent", "scaling chain"].filter { name in
      rows.contains { $0.scenario == name }
    }
    let width = left + Double(scenarios.count) * (panelWidth + gap)
    let height = top + panelHeight + 90
    let systems = System.allCases.filter { system in
      rows.contains { $0.scenario.hasPrefix("scaling") && $0.system == system }
    }
    var svg = """
      <?xml version="1.0" encoding="UTF-8"?>
      <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
      viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
      <rect width="100%" height="100%" fill="white"/>
      <text x="\(left)" y="28" font-size="18" font-weight="bold">Cost per operation against N (log–log; lower is better)</text>
      <text x="\(left)" y="48" fill="#444">\(escape(subtitle))</text>

      """
    // Legend.
    var legendX = left
    for system in systems {
      let (stroke, dash) = color(system)
      svg +=
        "<line x1=\"\(legendX)\" y1=\"68\" x2=\"\(legendX + 28)\" y2=\"68\" stroke=\"\(stroke)\" stroke-width=\"2.5\"\(dash.map { " stroke-dasharray=\"\($0)\"" } ?? "")/>\n"
      svg += "<text x=\"\(legendX + 34)\" y=\"72\">\(escape(system.rawValue))</text>\n"
      legendX += 60 + Double(system.rawValue.count) * 7
    }
    for (index, scenario) in scenarios.enumerated() {
      let x0 = left + Double(index) * (panelWidth + gap)
      svg += panel(
        rows.filter { $0.scenario == scenario }, title: String(scenario.dropFirst("scaling ".count)), x0: x0)
    }
    svg += "</svg>\n"
    return svg
  }

  private static func panel(_ rows: [Row], title: String, x0: Double) -> String {
    let points = rows.compactMap { row in row.secondsPerOp.map { (row.system, Double(row.n), $0) } }
    guard !points.isEmpty else { return "" }
    let ns = Set(rows.map { Double($0.n) }).sorted()
    let xLow = log10(ns.first!), xHigh = max(log10(ns.last!), xLow + 1)
    var yLow = floor(log10(points.map(\.2).min()!)), yHigh = ceil(log10(points.map(\.2).max()!))
    if yHigh <= yLow { yHigh = yLow + 1 }
    if yHigh - yLow < 2 { yLow -= 1 }
    func x(_ n: Double) -> Double { x0 + (log10(n) - xLow) / (xHigh - xLow) * panelWidth }
    func y(_ cost: Double) -> Double {
      top + panelHeight - (log10(cost) - yLow) / (yHigh - yLow) * panelHeight
    }
    func number(_ value: Double) -> String { String(format: "%.1f", value) }

    var svg = "<g>\n"
    svg +=
      "<text x=\"\(number(x0 + panelWidth / 2))\" y=\"\(number(top - 8))\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">\(escape(title))</text>\n"
    svg +=
      "<rect x=\"\(x0)\" y=\"\(top)\" width=\"\(panelWidth)\" height=\"\(panelHeight)\" fill=\"none\" stroke=\"#333\"/>\n"
    // Y grid: decades, with minor lines at 2x and 5x.
    for decade in Int(yLow)...Int(yHigh) {
      let value = pow(10, Double(decade))
      let yy = number(y(value))
      svg += "<line x1=\"\(x0)\" y1=\"\(yy)\" x2=\"\(x0 + panelWidth)\" y2=\"\(yy)\" stroke=\"#ccc\"/>\n"
      svg +=
        "<text x=\"\(x0 - 6)\" y=\"\(yy)\" dy=\"4\" text-anchor=\"end\">\(escape(decadeLabel(value)))</text>\n"
      for minor in [2.0, 5.0] where Double(decade) + log10(minor) < yHigh {
        let ym = number(y(value * minor))
        svg += "<line x1=\"\(x0)\" y1=\"\(ym)\" x2=\"\(x0 + panelWidth)\" y2=\"\(ym)\" stroke=\"#eee\"/>\n"
      }
    }
    // X ticks: each measured N.
    for n in ns {
      let xx = number(x(n))
      svg +=
        "<line x1=\"\(xx)\" y1=\"\(top)\" x2=\"\(xx)\" y2=\"\(top + panelHeight)\" stroke=\"#e4e4e4\"/>\n"
      svg +=
        "<text x=\"\(xx)\" y=\"\(number(top + panelHeight + 16))\" text-anchor=\"middle\">\(short(Int(n)))</text>\n"
    }
    svg +=
      "<text x=\"\(number(x0 + panelWidth / 2))\" y=\"\(number(top + panelHeight + 36))\" text-anchor=\"middle\">N (operations)</text>\n"
    svg +=
      "<text transform=\"translate(\(number(x0 - 62)),\(number(top + panelHeight / 2))) rotate(-90)\" text-anchor=\"middle\">time per operation</text>\n"
    // One line per system.
    var cutOffs: [String] = []
    for system in System.allCases {
      let line = points.filter { $0.0 == system }.sorted { $0.1 < $1.1 }
      guard !line.isEmpty else { continue }
      let (stroke, dash) = color(system)
      let path = line.map { "\(number(x($0.1))),\(number(y($0.2)))" }.joined(separator: " ")
      svg +=
        "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(stroke)\" stroke-width=\"2.5\"\(dash.map { " stroke-dasharray=\"\($0)\"" } ?? "")/>\n"
      for point in line {
        svg +=
          "<circle cx=\"\(number(x(point.1)))\" cy=\"\(number(y(point.2)))\" r=\"3.5\" fill=\"\(stroke)\"/>\n"
      }
      if let cut = rows.filter({ $0.system == system && $0.note?.hasPrefix("cut off") == true }).map(\.n)
        .min(),
        let last = line.last
      {
        svg +=
          "<text x=\"\(number(x(last.1) + 6))\" y=\"\(number(y(last.2) - 6))\" fill=\"\(stroke)\">cut off ›</text>\n"
        cutOffs.append("\(system.rawValue) cut off from N = \(short(cut)) (time bound)")
      }
    }
    for (line, text) in cutOffs.enumerated() {
      svg +=
        "<text x=\"\(x0)\" y=\"\(number(top + panelHeight + 56 + Double(line) * 15))\" fill=\"#444\">\(escape(text))</text>\n"
    }
    return svg + "</g>\n"
  }

  /// A decade's label: "100 ns", "1 µs", "10 ms".
  private static func decadeLabel(_ seconds: Double) -> String {
    let (scale, unit): (Double, String) =
      switch seconds {
      case ..<1e-6: (1e9, "ns")
      case ..<1e-3: (1e6, "µs")
      case ..<1: (1e3, "ms")
      default: (1, "s")
      }
    return String(format: "%.0f ", seconds * scale) + unit
  }

  private static func short(_ n: Int) -> String {
    n >= 1000 && n % 1000 == 0 ? "\(n / 1000)k" : "\(n)"
  }

  private static func escape(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
      .replacingOccurrences(of: ">", with: "&gt;")
  }
}

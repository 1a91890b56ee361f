// The README's "Where it wins" chart, drawn from Tools/Transactions' JSON: one panel per
// figure (the share of reads made while a transaction was open, then reads/s, read p99, the
// writer's wait p99 and transactions/s as ratios to Mutex on a log scale), one group of bars
// per variant, one bar per reader setting. Plain SVG text.

import BenchmarkSupport
import Foundation

/// The part of Tools/Transactions' JSON the chart reads.
struct TransactionsReport: Decodable {
  struct Case: Decodable {
    var rounds: Int
    var rows: [Row]
  }

  /// One variant in one setting.
  struct Row: Decodable {
    var variant: String
    var readers: Int
    var readGapNs: Double?
    var pinned: Bool?
    var insideFraction: Double?
    var readsRatio: Double?
    var p99Ratio: Double?
    var writerWaitP99Ns: Double?
    var transactionsRatio: Double?
    /// Not in the JSON: the writer's wait p99 over Mutex's in the same setting.
    var writerWaitP99Ratio: Double?

    /// "1 reader, as fast as it can, writer on a core of its own".
    var setting: String {
      let gap = readGapNs ?? 0
      let reader = "\(readers) reader\(readers != 1 ? "s" : "")"
      var label =
        gap == 0
        ? "\(reader), as fast as it can"
        : "\(reader), \(String(format: "%g", gap / 1000)) µs between reads"
      if let pinned {
        label += pinned ? ", writer on a core of its own" : ", threads not pinned"
      }
      return label
    }
  }

  var date: String?
  var cores: Int?
  var transactions: Case
}

/// One panel: the figure, its title, and how to read it.
struct Panel {
  let key: KeyPath<TransactionsReport.Row, Double?>
  let title: String
  let hint: String
  /// A share from 0 to 1 on a linear scale, not a ratio on a log scale.
  var linear = false
}

/// The panels, left to right.
var panels: [Panel] {
  [
    Panel(
      key: \.insideFraction, title: "reads during a transaction", hint: "share of all reads",
      linear: true),
    Panel(key: \.readsRatio, title: "reads/s", hint: "higher is better"),
    Panel(key: \.p99Ratio, title: "read p99 latency", hint: "lower is better"),
    Panel(key: \.writerWaitP99Ratio, title: "writer's wait p99", hint: "lower is better"),
    Panel(key: \.transactionsRatio, title: "transactions/s", hint: "higher is better"),
  ]
}
let colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759"]
let highlighted = "ThreadSafeSingleWriter"

/// Text for SVG: `&`, `<`, `>` and both quotes escaped.
func escapeXML(_ text: String) -> String {
  var escaped = ""
  for character in text {
    switch character {
    case "&": escaped += "&amp;"
    case "<": escaped += "&lt;"
    case ">": escaped += "&gt;"
    case "\"": escaped += "&quot;"
    case "'": escaped += "&#x27;"
    default: escaped.append(character)
    }
  }
  return escaped
}

/// `value` with one decimal, as SVG coordinates are written here.
func coordinate(_ value: Double) -> String { String(format: "%.1f", value) }

/// A bar's label: "3,826x", "1.09x", "5e-6x".
func chartRatio(_ value: Double) -> String {
  if value >= 1000 { return Format.grouped(value) + "x" }
  if value >= 0.001 { return String(format: "%.3g", value) + "x" }
  let scientific = String(format: "%.0e", value)
  return scientific.replacingOccurrences(of: "e-0", with: "e-") + "x"
}

/// The chart of `report`'s rows at `readers` readers.
func chart(_ report: TransactionsReport, readers: Int) -> String {
  var rows = report.transactions.rows.filter { $0.readers == readers }
  // The writer's wait has no ratio in the JSON: derive it against Mutex's.
  let mutexWaits = Dictionary(
    rows.filter { $0.variant == "Mutex" }.map { ($0.setting, $0.writerWaitP99Ns ?? 0) },
    uniquingKeysWith: { first, _ in first })
  for index in rows.indices {
    let base = mutexWaits[rows[index].setting] ?? 0
    rows[index].writerWaitP99Ratio = base != 0 ? (rows[index].writerWaitP99Ns ?? 0) / base : 0
  }
  let variants = unique(rows.map(\.variant))
  let settings = unique(rows.map(\.setting))

  let bar = 9
  let gapBetween = 8
  let labelWidth = 170
  let panelWidth = 260
  let group = bar * settings.count + gapBetween
  let top = 72
  let legend = 24 * settings.count
  let plotHeight = group * variants.count
  let width = labelWidth + panelWidth * panels.count + 20
  let height = top + plotHeight + 40 + legend

  var out = [
    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" "
      + "viewBox=\"0 0 \(width) \(height)\" font-family=\"Helvetica, Arial, sans-serif\" "
      + "font-size=\"11\">",
    "<rect width=\"\(width)\" height=\"\(height)\" fill=\"white\"/>",
    "<text x=\"10\" y=\"18\" font-size=\"14\" font-weight=\"bold\">One writer runs 100-write "
      + "transactions (~0.5 ms each) while \(readers) reader thread"
      + "\(readers != 1 ? "s read" : " reads")</text>",
    "<text x=\"10\" y=\"34\" fill=\"#555\">\(escapeXML(report.date ?? "")), "
      + "\(report.cores.map(String.init) ?? "?") cores; median of \(report.transactions.rounds) "
      + "interleaved rounds; generated by Benchmarks/Tools/Report from Tools/Transactions</text>",
  ]
  for (index, variant) in variants.enumerated() {
    let y = Double(top + index * group) + Double(group) / 2
    out.append(
      "<text x=\"\(labelWidth - 8)\" y=\"\(coordinate(y))\" text-anchor=\"end\" "
        + "dominant-baseline=\"middle\" font-weight=\""
        + "\(variant == highlighted ? "bold" : "normal")\">\(escapeXML(variant))</text>")
  }

  for (p, panel) in panels.enumerated() {
    let x0 = Double(labelWidth + p * panelWidth + 15)
    let inner = Double(panelWidth - 80)  // room for the value labels
    let values = rows.compactMap { $0[keyPath: panel.key] }.filter { $0 > 0 }
    // At least a decade either side of 1x, so every panel reads the same way.
    let low = min(pow(10, (log10((values + [1]).min()!)).rounded(.down)), 0.1)
    let high = max(pow(10, (log10((values + [1]).max()!)).rounded(.up)), 10)
    let span = log10(high) - log10(low)
    func xs(_ value: Double) -> Double {
      panel.linear ? x0 + inner * value : x0 + inner * (log10(value) - log10(low)) / span
    }
    func gridLine(_ x: Double, stroke: String) -> String {
      "<line x1=\"\(coordinate(x))\" y1=\"\(top)\" x2=\"\(coordinate(x))\" "
        + "y2=\"\(top + plotHeight)\" stroke=\"\(stroke)\"/>"
    }
    func tickLabel(_ x: Double, _ text: String) -> String {
      "<text x=\"\(coordinate(x))\" y=\"\(top + plotHeight + 14)\" text-anchor=\"middle\" "
        + "fill=\"#555\">\(text)</text>"
    }

    out.append(
      "<text x=\"\(Int(x0))\" y=\"\(top - 14)\" font-weight=\"bold\">\(escapeXML(panel.title))</text>"
    )
    out.append(
      "<text x=\"\(Int(x0))\" y=\"\(top - 3)\" fill=\"#777\">\(escapeXML(panel.hint))</text>")
    for tick in panel.linear ? [0, 0.5, 1] : [] {
      out.append(gridLine(xs(tick), stroke: "#ddd"))
      out.append(tickLabel(xs(tick), String(format: "%g", tick * 100) + "%"))
    }
    let decades = Int(span.rounded())
    let step = decades <= 4 ? 1 : decades <= 8 ? 2 : 3
    var decade = panel.linear ? high * 10 : low
    while decade <= high * 1.0001 {
      let x = xs(decade)
      let exponent = Int(log10(decade).rounded())
      out.append(gridLine(x, stroke: decade == 1 ? "#333" : "#ddd"))
      let label =
        (1e-2...1e3).contains(decade) ? String(format: "%g", decade) + "x" : "1e\(exponent)x"
      // Python's modulo: never negative.
      if ((exponent % step) + step) % step == 0 { out.append(tickLabel(x, label)) }
      decade *= 10
    }
    for (v, variant) in variants.enumerated() {
      for (s, setting) in settings.enumerated() {
        guard let row = rows.first(where: { $0.variant == variant && $0.setting == setting })
        else { continue }
        let value = row[keyPath: panel.key] ?? 0
        if value <= 0 && !panel.linear { continue }
        let y = Double(top + v * group) + Double(gapBetween) / 2 + Double(s * bar)
        let ends = [panel.linear ? xs(0) : xs(1), xs(value)].sorted()
        let (x1, x2) = (ends[0], ends[1])
        out.append(
          "<rect x=\"\(coordinate(x1))\" y=\"\(coordinate(y))\" "
            + "width=\"\(coordinate(max(x2 - x1, 1)))\" height=\"\(bar - 1)\" "
            + "fill=\"\(colors[s % colors.count])\"><title>\(escapeXML(variant)), "
            + "\(escapeXML(setting)): \(String(format: "%.3g", value))x</title></rect>")
        if variant == highlighted || (panel.linear && value > 0) {
          let (anchor, tx) = panel.linear || value >= 1 ? ("start", x2 + 3) : ("end", x1 - 3)
          let text = panel.linear ? String(format: "%.0f%%", value * 100) : chartRatio(value)
          out.append(
            "<text x=\"\(coordinate(tx))\" y=\"\(coordinate(y + Double(bar) - 2))\" "
              + "text-anchor=\"\(anchor)\" font-size=\"9\">\(text)</text>")
        }
      }
    }
  }

  for (s, setting) in settings.enumerated() {
    let y = top + plotHeight + 30 + s * 18
    out.append(
      "<rect x=\"\(labelWidth)\" y=\"\(y)\" width=\"12\" height=\"10\" "
        + "fill=\"\(colors[s % colors.count])\"/>")
    out.append("<text x=\"\(labelWidth + 18)\" y=\"\(y + 9)\">\(escapeXML(setting))</text>")
  }
  out.append("</svg>")
  return out.joined(separator: "\n") + "\n"
}

/// `items` without repeats, in the order they first appear.
func unique(_ items: [String]) -> [String] {
  var seen = Set<String>()
  return items.filter { seen.insert($0).inserted }
}

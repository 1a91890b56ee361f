// Statistics and the markdown the tool prints.

import Foundation

func median(_ values: [Double]) -> Double? {
  guard !values.isEmpty else { return nil }
  let sorted = values.sorted()
  let middle = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// ns/op with three significant digits, as compare.py prints them.
func formatNs(_ value: Double?) -> String {
  guard let value else { return "" }
  if value >= 100 { return String(format: "%.0f", value) }
  if value >= 10 { return String(format: "%.1f", value) }
  return String(format: "%.2f", value)
}

/// A duration in the unit that suits it.
func formatDuration(_ ns: Double) -> String {
  if ns < 1_000 { return String(format: "%.0f ns", ns) }
  if ns < 1_000_000 { return String(format: "%.1f µs", ns / 1e3) }
  if ns < 1_000_000_000 { return String(format: "%.2f ms", ns / 1e6) }
  return String(format: "%.2f s", ns / 1e9)
}

/// The label of display bucket `index` of `bounds` (upper bounds in ns, the last one
/// followed by an open bucket).
func bucketLabel(_ index: Int, _ bounds: [UInt64]) -> String {
  func short(_ ns: UInt64) -> String {
    ns >= 10_000_000 && ns % 1_000_000 == 0
      ? "\(ns / 1_000_000) ms" : ns >= 1 << 20 ? "\(ns >> 20) ms" : "\(ns >> 10) µs"
  }
  if index == 0 { return "< \(short(bounds[0]))" }
  if index == bounds.count { return "> \(short(bounds.last!))" }
  return "\(short(bounds[index - 1]))–\(short(bounds[index]))"
}

/// Prints a markdown table.
func printTable(_ header: [String], _ align: [String], _ rows: [[String]]) {
  print("| " + header.joined(separator: " | ") + " |")
  print("| " + align.joined(separator: " | ") + " |")
  for row in rows { print("| " + row.joined(separator: " | ") + " |") }
}

/// The 1-, 5- and 15-minute load averages, or "?" where unavailable.
func loadAverage() -> String {
  var loads = [Double](repeating: 0, count: 3)
  guard getloadavg(&loads, 3) == 3 else { return "?" }
  return loads.map { String(format: "%.2f", $0) }.joined(separator: " ")
}

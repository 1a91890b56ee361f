// Statistics and the markdown the tool prints.

import Foundation

func median(_ values: [Double]) -> Double? {
  guard !values.isEmpty else { return nil }
  let sorted = values.sorted()
  let middle = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// The `q` quantile (nearest rank) of an ascending array.
func quantile(_ sorted: [UInt32], _ q: Double) -> UInt32 {
  let rank = Int((q * Double(sorted.count)).rounded(.up))
  return sorted[min(max(rank, 1), sorted.count) - 1]
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

/// Log2 buckets of waits from under 1 µs to over 10 ms: upper bounds in ns.
let bucketBounds: [UInt32] = (0...13).map { UInt32(1_000 << $0) } + [10_000_000]

func bucketLabel(_ index: Int) -> String {
  func short(_ ns: UInt32) -> String {
    ns < 1_000_000
      ? "\(ns / 1_000) µs" : String(format: "%g ms", (Double(ns) / 1e5).rounded() / 10)
  }
  if index == 0 { return "< \(short(bucketBounds[0]))" }
  if index == bucketBounds.count { return "≥ \(short(bucketBounds.last!))" }
  return "\(short(bucketBounds[index - 1]))–\(short(bucketBounds[index]))"
}

/// Counts per bucket of an ascending array of waits.
func histogram(_ sorted: [UInt32]) -> [Int] {
  var counts = [Int](repeating: 0, count: bucketBounds.count + 1)
  var bucket = 0
  for wait in sorted {
    while bucket < bucketBounds.count && wait >= bucketBounds[bucket] { bucket += 1 }
    counts[bucket] += 1
  }
  return counts
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

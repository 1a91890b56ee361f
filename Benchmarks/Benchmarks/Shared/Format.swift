import Foundation

/// How every tool prints durations, ratios and plain figures, so that the same figure reads
/// the same in each table.
public enum Format {
  /// A duration in ns, in the unit that suits it: 812 ns, 3.4 µs, 2.10 ms, 1.25 s.
  public static func duration(_ ns: Double) -> String {
    if ns < 1_000 { return String(format: "%.0f ns", ns) }
    if ns < 1_000_000 { return String(format: "%.1f µs", ns / 1e3) }
    if ns < 1_000_000_000 { return String(format: "%.2f ms", ns / 1e6) }
    return String(format: "%.2f s", ns / 1e9)
  }

  /// A ratio with the precision that suits it (three significant digits down to 0.1, then
  /// more, so that 1e-4 still shows), followed by `suffix`; empty for `nil` or infinity.
  public static func ratio(_ value: Double?, suffix: String = "x") -> String {
    guard let value, value.isFinite else { return "" }
    if value >= 100 { return String(format: "%.0f", value) + suffix }
    if value >= 10 { return String(format: "%.1f", value) + suffix }
    if value >= 0.1 || value == 0 { return String(format: "%.2f", value) + suffix }
    if value >= 0.0001 { return String(format: "%.4f", value) + suffix }
    return String(format: "%.1e", value) + suffix
  }

  /// A plain figure (ns/op, a ratio, a count per op): thousands grouped from 100 up, one
  /// decimal from 10, else `digits` decimals; empty for `nil`. The ratio table's cells.
  public static func number(_ value: Double?, digits: Int = 2) -> String {
    guard let value else { return "" }
    if value >= 100 { return grouped(value) }
    if value >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.\(digits)f", value)
  }

  /// `value` rounded to a whole number, with a comma between each three digits.
  public static func grouped(_ value: Double) -> String {
    let digits = String(format: "%.0f", value)
    let sign = digits.hasPrefix("-") ? "-" : ""
    var rest = Substring(digits.dropFirst(sign.count))
    var groups: [Substring] = []
    while rest.count > 3 {
      groups.insert(rest.suffix(3), at: 0)
      rest = rest.dropLast(3)
    }
    groups.insert(rest, at: 0)
    return sign + groups.joined(separator: ",")
  }
}

extension Collection where Element == Double {
  /// The middle value, or the mean of the two middle ones; `nil` when empty. Every tool's
  /// "median over rounds" is this one, as Python's `statistics.median` was for compare.py.
  public func median() -> Double? {
    guard !isEmpty else { return nil }
    let sorted = sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
  }
}

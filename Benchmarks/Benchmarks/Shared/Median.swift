extension Collection where Element == Double {
  /// The middle value, or the mean of the two middle ones; `nil` when empty. Every tool's
  /// "median over rounds" and the ratio table's median over runs are this one.
  public func median() -> Double? {
    guard !isEmpty else { return nil }
    let sorted = sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
  }
}

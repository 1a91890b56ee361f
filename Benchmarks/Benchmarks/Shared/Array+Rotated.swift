extension Array {
  /// The elements starting at `round` (modulo the count), wrapping around. The tools run
  /// every row once a round in this order, so that a burst of load from elsewhere lands on
  /// different rows in different rounds.
  public func rotated(by round: Int) -> [Element] {
    guard !isEmpty else { return self }
    let shift = round % count
    return Array(self[shift...] + self[..<shift])
  }
}

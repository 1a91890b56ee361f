// Labels of the wait table's rows.

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

/// How a generated `transaction` step runs. Its body first adds `marker` to both fields of
/// its draft, then (after the reads and the pause) takes all but 1 back: a committing
/// transaction publishes `a + 1, b + 1`, a throwing one publishes nothing. So a value with
/// a field at or above `marker / 2`, seen anywhere, is one no commit published.
struct TransactionForm: Sendable, Hashable {
  static let marker = 1 << 30

  /// `try await x.transaction { }`, in a task's own flow; else the synchronous form.
  var isAsync: Bool
  /// Throws after its last write: nothing it wrote may ever be seen.
  var throwing: Bool
  /// Reads x inside the body, while the draft holds the marker.
  var readsInside: Bool
  /// Sleeps this many milliseconds inside the body (`Task.sleep` in the async form).
  var pause: Int

  func render(_ x: ContainerName) -> String {
    (isAsync ? "try await \(x).transaction { d in" : "\(x).transaction { d in")
      + " d.a, d.b += marker;" + (readsInside ? " check \(x).read;" : "")
      + (pause > 0 ? " sleep(\(pause) ms);" : "")
      + (throwing ? " throw }" : " d.a, d.b -= marker - 1 }")
  }
}

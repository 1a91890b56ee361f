/// The value every generated program writes: each write adds 1 to `a`, then 1 to `b`, in
/// two separate steps, so a value seen between two checkouts must have `a == b`.
struct CheckedPair: Sendable, Equatable {
  var a = 0
  var b = 0
  /// The last write of each `produce` step that ran: its producer id, then its count.
  var tags: [Int: Int] = [:]

  /// An access that changes nothing and runs `body` inside it: a write access through a
  /// proxy (`proxy.write.visit { ... }`) that calls back into the container.
  mutating func visit(_ body: () -> Void) { body() }

  /// Records write `sequence` of `producer`, and returns the one recorded before it.
  mutating func tag(_ producer: Int, _ sequence: Int) -> Int {
    defer { tags[producer] = sequence }
    return tags[producer] ?? 0
  }
}

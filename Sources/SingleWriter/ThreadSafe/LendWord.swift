/// The lend word, typed: which `writeNext` lend of the spare proxy is current, and
/// whether its end is being resolved. The only code that names its bits.
///
/// A lend opens with a fresh generation, which only the proxy lent now carries, so an
/// access through a proxy kept from an older lend is told apart with one comparison.
/// When the body returns with the proxy referenced elsewhere, the lender marks the lend
/// `resolving`: accesses through it wait (spinning, then sleeping with `sleepers` set)
/// until it ends, kept (the generation stays) or retired (a new generation, so every
/// access through the old proxy stops). "How the hand-off works" gives the table.
@usableFromInline
struct LendWord: Equatable, Sendable, CustomStringConvertible {
  @usableFromInline var raw: UInt32

  @inlinable init(raw: UInt32) { self.raw = raw }

  /// The word of `generation`'s lend, not being resolved.
  @inlinable init(current generation: UInt32) { raw = generation << 2 }

  @inlinable static var resolving: UInt32 { 1 }
  @inlinable static var sleepers: UInt32 { 2 }

  @inlinable var generation: UInt32 { raw >> 2 }
  @inlinable var isResolving: Bool { raw & LendWord.resolving != 0 }
  @inlinable var hasSleepers: Bool { raw & LendWord.sleepers != 0 }

  /// What an access through a proxy lent with `generation` does.
  @usableFromInline
  enum Access: Equatable, Sendable {
    /// The lend is current: go on.
    case go
    /// The lend is being resolved: wait until it ends.
    case wait
    /// The lend is over: the access stops the program.
    case stale
  }

  // MARK: Transitions

  /// `open`: the holder starts a lend. Needs no lend being resolved, which only the
  /// holder starts and every lend ends before the next opens.
  @inlinable func opened() -> LendWord {
    assert(!isResolving, "\(self) opened")
    return LendWord(current: generation &+ 1)
  }

  /// `resolve`: the body returned and someone else references the proxy.
  @inlinable func resolved() -> LendWord? {
    isResolving ? nil : LendWord(raw: raw | LendWord.resolving)
  }

  /// `markSleepers`: an access is about to sleep until the lend ends.
  @inlinable func withSleepers() -> LendWord? {
    isResolving ? LendWord(raw: raw | LendWord.sleepers) : nil
  }

  /// `end`: kept, the generation stays current; retired, a new one. Returns whether
  /// sleepers must be woken.
  @inlinable func ended(kept: Bool) -> (LendWord, wake: Bool)? {
    guard isResolving else { return nil }
    return (LendWord(current: kept ? generation : generation &+ 1), hasSleepers)
  }

  /// An access through a proxy lent with `generation` (never 0: owners skip this).
  @inlinable func admits(_ lent: UInt32) -> Access {
    if raw == LendWord(current: lent).raw { return .go }
    return isResolving && generation == lent ? .wait : .stale
  }

  /// The rule a legal word breaks, or `nil`: `sleepers` only while `resolving`.
  @usableFromInline var invariantViolation: String? {
    hasSleepers && !isResolving ? "sleepers while not resolving" : nil
  }

  @usableFromInline var description: String {
    "lend \(generation)" + (isResolving ? " resolving" : "") + (hasSleepers ? " sleepers" : "")
  }
}

/// A ``ChangeHub``'s 64-bit word, typed: the only code that names a bit. Every change to
/// the word is one of the transitions below, applied by the hub's driver (`apply`,
/// `applyConfined`, `update`); debug builds check `invariantViolation` on every word a
/// transition produces. The article "How the hand-off works" gives the table.
///
/// The version and the flags share one word so that a publication learns, from the one
/// atomic add that bumps the version, whether anyone must be woken or notified.
@usableFromInline
struct ChangeHubWord: Equatable, Sendable, CustomStringConvertible {
  @usableFromInline var raw: UInt64

  @inlinable init(raw: UInt64) { self.raw = raw }

  // MARK: Bits

  /// A consumer may sleep in the hub's `sleepers`: a publication takes the hub's lock to
  /// wake them. A cancelled sleeper leaves it set, since cancellation runs on another
  /// thread and a ``SingleWriter``'s publications do not read-modify-write the word; the
  /// next publication then takes the slow path once for nothing.
  @inlinable static var waiting: UInt64 { 1 }
  /// The Observation module tracks the container: every publication notifies it.
  @inlinable static var tracked: UInt64 { 2 }
  /// The container is gone: no more publications.
  @inlinable static var closed: UInt64 { 4 }
  /// A consumer found the value half done: the next checkout end keeps a snapshot.
  @inlinable static var snapshotWanted: UInt64 { 8 }
  @inlinable static var versionShift: UInt64 { 4 }
  /// One publication. 60 bits of version do not wrap in any program's lifetime, so a
  /// later version is always a larger one, which the persistence module relies on.
  @inlinable static var versionStep: UInt64 { 1 << versionShift }

  // MARK: Reading the word

  /// Bumped by each publication; never wraps.
  @inlinable var version: UInt64 { raw >> Self.versionShift }
  @inlinable var isWaiting: Bool { raw & Self.waiting != 0 }
  @inlinable var isTracked: Bool { raw & Self.tracked != 0 }
  @inlinable var isClosed: Bool { raw & Self.closed != 0 }
  @inlinable var wantsSnapshot: Bool { raw & Self.snapshotWanted != 0 }

  /// Whether a publication that replaces this word must do more than bump the version:
  /// notify if `isTracked`, wake if `isWaiting`. One test, for the hot path.
  @inlinable var publicationIsSlow: Bool { raw & (Self.waiting | Self.tracked) != 0 }

  /// The version the next publication makes, which a snapshot kept now belongs to.
  @inlinable var nextVersion: UInt64 { applying(Self.publication).version }

  /// The rule a legal word breaks, or `nil`.
  ///
  /// - `closed` excludes `waiting`: closing resumes every sleeper, and no consumer
  ///   sleeps on a closed hub.
  /// - `closed` excludes `snapshotWanted`: no checkout ends after the close to keep one.
  @usableFromInline var invariantViolation: String? {
    if isClosed, isWaiting { return "waiting on a closed hub" }
    if isClosed, wantsSnapshot { return "snapshot wanted from a closed hub" }
    return nil
  }

  @usableFromInline var description: String {
    var parts = ["version: \(version)"]
    for (bit, name) in [
      (Self.waiting, "waiting"), (Self.tracked, "tracked"), (Self.closed, "closed"),
      (Self.snapshotWanted, "snapshotWanted"),
    ] where raw & bit != 0 {
      parts.append(name)
    }
    return "[" + parts.joined(separator: ", ") + "]"
  }

  // MARK: Blind changes

  /// How the driver applies an event that changes every word it allows the same way:
  /// with one atomic read-modify-write, not a compare-and-exchange loop.
  @usableFromInline enum Change: Equatable, Sendable {
    case add(UInt64)
    case insert(UInt64)
    case remove(UInt64)
  }

  @inlinable @inline(__always) func applying(_ change: Change) -> ChangeHubWord {
    switch change {
    case .add(let amount): ChangeHubWord(raw: raw &+ amount)
    case .insert(let bits): ChangeHubWord(raw: raw | bits)
    case .remove(let bits): ChangeHubWord(raw: raw & ~bits)
    }
  }

  // MARK: Transitions
  //
  // Pure: each returns the word to install, or `nil` when the event cannot happen in this
  // state. Actions are read from the word a transition replaced (`isTracked`,
  // `isWaiting`, `nextVersion`). A blind event's `Change` sits beside it; the driver
  // checks in debug builds that both make the same word.

  @inlinable static var publication: Change { .add(versionStep) }

  /// A checkout that wrote ends: the version moves on. Never after the close, since every
  /// holder keeps its container alive.
  @inlinable func publish() -> ChangeHubWord? {
    isClosed ? nil : applying(Self.publication)
  }

  /// A consumer that has delivered version `seen` goes to sleep, under the hub's lock;
  /// `nil` if there is something to read (a newer version, or the close).
  @inlinable func sleep(after seen: UInt64) -> ChangeHubWord? {
    version == seen && !isClosed ? ChangeHubWord(raw: raw | Self.waiting) : nil
  }

  @inlinable static var wakeUp: Change { .remove(waiting) }

  /// A publication that found `waiting` resumes every sleeper, under the hub's lock.
  @inlinable func wake() -> ChangeHubWord? { applying(Self.wakeUp) }

  /// A consumer found the value half done: asks the next checkout end for a copy. `nil`
  /// if it is asked already, or no checkout will end.
  @inlinable func wantSnapshot() -> ChangeHubWord? {
    wantsSnapshot || isClosed ? nil : ChangeHubWord(raw: raw | Self.snapshotWanted)
  }

  @inlinable static var snapshotKept: Change { .remove(snapshotWanted) }

  /// The holder of a checkout that is ending keeps a copy, under the hub's lock, before it
  /// publishes.
  @inlinable func keepSnapshot() -> ChangeHubWord? {
    isClosed ? nil : applying(Self.snapshotKept)
  }

  @inlinable static var tracking: Change { .insert(tracked) }

  /// The first tracked read installed the hub's notifier, under its lock: from now on
  /// every publication notifies.
  @inlinable func track() -> ChangeHubWord? {
    isTracked || isClosed ? nil : applying(Self.tracking)
  }

  /// The container's `deinit`, under the hub's lock: the hub resumes every sleeper and
  /// wants no snapshot any more.
  @inlinable func close() -> ChangeHubWord? {
    isClosed
      ? nil
      : ChangeHubWord(raw: (raw | Self.closed) & ~(Self.waiting | Self.snapshotWanted))
  }
}

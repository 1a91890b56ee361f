/// A ``ChangeHub``'s 64-bit word, typed: the only code that names a bit. Every change to
/// the word is one of the transitions below, applied by the hub's driver (`apply`,
/// `applyConfined`, `update`); debug builds check `invariantViolation` on every word a
/// transition produces. The article "How the hand-off works" gives the table.
///
/// The version and the flags share one word so that a publication learns, from one load,
/// whether anyone must be woken or notified. A publication does not move the version: it
/// sets `pending`, and a consumer folds that into the version before it reads it
/// (`collect`). So a stream of checkouts that nobody waits for costs each end one load,
/// and the version counts the batches consumers saw, not the checkouts.
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
  /// A checkout that wrote has ended since the version last moved: the next consumer to
  /// read the version moves it first.
  @inlinable static var pending: UInt64 { 16 }
  @inlinable static var versionShift: UInt64 { 5 }
  /// One collected batch. 59 bits of version do not wrap in any program's lifetime, so a
  /// later version is always a larger one, which the persistence module relies on.
  @inlinable static var versionStep: UInt64 { 1 << versionShift }

  // MARK: Reading the word

  /// Moved by each collection of `pending`; never wraps.
  @inlinable var version: UInt64 { raw >> Self.versionShift }
  @inlinable var isWaiting: Bool { raw & Self.waiting != 0 }
  @inlinable var isTracked: Bool { raw & Self.tracked != 0 }
  @inlinable var isClosed: Bool { raw & Self.closed != 0 }
  @inlinable var wantsSnapshot: Bool { raw & Self.snapshotWanted != 0 }
  @inlinable var isPending: Bool { raw & Self.pending != 0 }

  /// Whether a publication may leave this word as it is: `pending` is set already, and
  /// nobody is to be woken or notified. One test, for the hot path.
  @inlinable var absorbsPublication: Bool {
    raw & (Self.pending | Self.waiting | Self.tracked) == Self.pending
  }

  /// Whether a publication that replaces this word must do more than bump the version:
  /// notify if `isTracked`, wake if `isWaiting`. One test, for the hot path.
  @inlinable var publicationIsSlow: Bool { raw & (Self.waiting | Self.tracked) != 0 }

  /// The rule a legal word breaks, or `nil`.
  ///
  /// - `closed` excludes `waiting`: closing resumes every sleeper, and no consumer
  ///   sleeps on a closed hub.
  /// - `closed` excludes `snapshotWanted`: no checkout ends after the close to keep one.
  /// - `closed` excludes `pending`: the close collects it, so the final version is the
  ///   final value's.
  @usableFromInline var invariantViolation: String? {
    if isClosed, isWaiting { return "waiting on a closed hub" }
    if isClosed, wantsSnapshot { return "snapshot wanted from a closed hub" }
    if isClosed, isPending { return "pending on a closed hub" }
    return nil
  }

  @usableFromInline var description: String {
    var parts = ["version: \(version)"]
    for (bit, name) in [
      (Self.waiting, "waiting"), (Self.tracked, "tracked"), (Self.closed, "closed"),
      (Self.snapshotWanted, "snapshotWanted"), (Self.pending, "pending"),
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
  // `isWaiting`) or from the word it made (a kept snapshot's version). A blind event's `Change` sits beside it; the driver
  // checks in debug builds that both make the same word.

  @inlinable static var publication: Change { .insert(pending) }

  /// A checkout that wrote ends: `pending`. Never after the close, since every holder
  /// keeps its container alive. Skipped by the driver in a word that `absorbsPublication`.
  @inlinable func publish() -> ChangeHubWord? {
    isClosed ? nil : applying(Self.publication)
  }

  /// A consumer about to read the version folds `pending` into it: the version moves on
  /// once for every checkout that ended since it last moved. `nil` if nothing is pending.
  @inlinable func collect() -> ChangeHubWord? {
    isPending ? ChangeHubWord(raw: (raw & ~Self.pending) &+ Self.versionStep) : nil
  }

  /// A consumer that has delivered version `seen` goes to sleep, under the hub's lock;
  /// `nil` if there is something to read (a newer version, a pending one, or the close).
  @inlinable func sleep(after seen: UInt64) -> ChangeHubWord? {
    version == seen && !isPending && !isClosed ? ChangeHubWord(raw: raw | Self.waiting) : nil
  }

  @inlinable static var wakeUp: Change { .remove(waiting) }

  /// A publication that found `waiting` resumes every sleeper, under the hub's lock.
  @inlinable func wake() -> ChangeHubWord? { applying(Self.wakeUp) }

  /// A consumer found the value half done: asks the next checkout end for a copy. `nil`
  /// if it is asked already, or no checkout will end.
  @inlinable func wantSnapshot() -> ChangeHubWord? {
    wantsSnapshot || isClosed ? nil : ChangeHubWord(raw: raw | Self.snapshotWanted)
  }

  /// The holder of a checkout that wrote and is ending keeps a copy, under the hub's lock,
  /// as its publication: the version moves on at once (with whatever was pending), so the
  /// copy and the version it is kept as agree. Then notify and wake, as a publication.
  @inlinable func keepSnapshot() -> ChangeHubWord? {
    isClosed
      ? nil
      : ChangeHubWord(raw: (raw & ~(Self.snapshotWanted | Self.pending)) &+ Self.versionStep)
  }

  @inlinable static var tracking: Change { .insert(tracked) }

  /// The first tracked read installed the hub's notifier, under its lock: from now on
  /// every publication notifies.
  @inlinable func track() -> ChangeHubWord? {
    isTracked || isClosed ? nil : applying(Self.tracking)
  }

  /// The container's `deinit`, under the hub's lock: the hub collects what is pending,
  /// resumes every sleeper and wants no snapshot any more.
  @inlinable func close() -> ChangeHubWord? {
    guard !isClosed else { return nil }
    let collected = collect() ?? self
    return ChangeHubWord(
      raw: (collected.raw | Self.closed) & ~(Self.waiting | Self.snapshotWanted))
  }
}

import SingleWriterAtomics

/// A ``ThreadSafeSingleWriter``'s 32-bit state word, typed: the only file that names a
/// bit. Every change to the word is one of the transitions below, applied by
/// `WriterLock.update`, the one compare-and-exchange driver; debug builds check
/// `invariantViolation` on every word a transition produces. Docs/HowTheHandOffWorks.md
/// gives the table of states and transitions.
///
/// One word holds both the long-lived checkout (`writer`) and the short-lived lock on
/// the value (`writing` or a reader count), so a closure write takes and drops both
/// with one compare-and-exchange each, as cheap as a mutex. An access through a held
/// proxy takes the value in `proxy_access` instead, and ends with a plain store.
@usableFromInline
struct WriterWord: Equatable, Sendable, CustomStringConvertible {
  @usableFromInline var raw: UInt32

  @inlinable init(raw: UInt32) { self.raw = raw }

  // MARK: Bits

  /// Someone holds the checkout: a proxy, a closure write or the queue's runner.
  @inlinable static var writer: UInt32 { 1 }
  /// Writes wait in the hand-off (the inbox or the holder's batch): ending the checkout
  /// must serve them. Set and cleared only under the hand-off lock.
  @inlinable static var queued: UInt32 { 2 }
  /// A closure write or a transaction's commit holds the value exclusively. An access
  /// through a proxy holds it in a word of its own (WriterLock+ProxyAccess.swift).
  @inlinable static var writing: UInt32 { 4 }
  /// A thread sleeps on this word until `writing` or the readers clear.
  @inlinable static var waiters: UInt32 { 8 }
  /// Someone listens to `changes()`: ending a checkout publishes the value.
  @inlinable static var observed: UInt32 { 16 }
  /// Written since the last publication; set only while `observed` (`observed << 1`).
  @inlinable static var dirty: UInt32 { 32 }
  /// A `withWriter` sleeps until the checkout ends; ending it wakes one.
  @inlinable static var parked: UInt32 { 64 }
  /// One reader; the bits from here up count the readers copying the value.
  @inlinable static var reader: UInt32 { 128 }
  @inlinable static var readerShift: UInt32 { 7 }

  // MARK: Reading the word

  @inlinable var isCheckedOut: Bool { raw & WriterWord.writer != 0 }
  @inlinable var isQueued: Bool { raw & WriterWord.queued != 0 }
  @inlinable var isWriting: Bool { raw & WriterWord.writing != 0 }
  @inlinable var hasWaiters: Bool { raw & WriterWord.waiters != 0 }
  @inlinable var isObserved: Bool { raw & WriterWord.observed != 0 }
  @inlinable var isDirty: Bool { raw & WriterWord.dirty != 0 }
  @inlinable var hasParked: Bool { raw & WriterWord.parked != 0 }
  @inlinable var readers: UInt32 { raw >> WriterWord.readerShift }

  /// `dirty` if observed, else 0: a write marks itself without a branch.
  @inlinable var dirtyIfObserved: UInt32 { (raw & WriterWord.observed) << 1 }

  /// The rule a legal word breaks, or `nil`.
  ///
  /// - `queued` implies `writer`: whoever queues behind a free writer takes it to serve the
  ///   queue, so a newcomer finding `writer` clear never jumps queued writes.
  /// - `parked` implies `writer`: a thread parks only behind a held checkout, and ending
  ///   it clears the bit as it wakes one.
  /// - `writing` implies `writer` and no readers.
  /// - `waiters` implies `writing` or readers: the access that ends last clears it.
  /// - `dirty` implies `observed`.
  @usableFromInline var invariantViolation: String? {
    if isQueued, !isCheckedOut { return "queued without writer" }
    if hasParked, !isCheckedOut { return "parked without writer" }
    if isWriting, !isCheckedOut { return "writing without writer" }
    if isWriting, readers != 0 { return "writing with readers" }
    if hasWaiters, !isWriting, readers == 0 { return "waiters with nothing to wait for" }
    if isDirty, !isObserved { return "dirty while not observed" }
    return nil
  }

  @usableFromInline var description: String {
    var parts: [String] = []
    for (bit, name) in [
      (WriterWord.writer, "writer"), (WriterWord.queued, "queued"),
      (WriterWord.writing, "writing"), (WriterWord.waiters, "waiters"),
      (WriterWord.observed, "observed"), (WriterWord.dirty, "dirty"),
      (WriterWord.parked, "parked"),
    ] where raw & bit != 0 {
      parts.append(name)
    }
    if readers != 0 { parts.append("readers: \(readers)") }
    return "[" + parts.joined(separator: ", ") + "]"
  }

  // MARK: Transitions
  //
  // Pure: each returns the word to install and what the caller must do next, or `nil`
  // when the event cannot happen in this state (the caller waits, or takes a slower
  // path). None of them has side effects, so the CAS driver may call one many times. In
  // debug builds each proposes its row of the table (`TransitionRow`), which the driver
  // counts once its compare-and-exchange installs the word.

  /// This word, as the transition of `row` installs it.
  @inlinable @inline(__always) func proposing(_ row: TransitionRow) -> WriterWord {
    row.proposed()
    return self
  }

  /// Takes a free checkout. Free means `writer` is clear, which also means nothing is
  /// queued.
  @inlinable @inline(__always) func checkout() -> WriterWord? {
    isCheckedOut ? nil : WriterWord(raw: raw | WriterWord.writer).proposing(.wordCheckout)
  }

  /// Takes the checkout and the value together, for a closure write: only with no
  /// checkout, no access and no reader.
  @inlinable @inline(__always) func beginClosureWrite() -> WriterWord? {
    let busy = WriterWord.writer | WriterWord.writing | ~(WriterWord.reader &- 1)
    guard raw & busy == 0 else { return nil }
    return WriterWord(raw: raw | WriterWord.writer | WriterWord.writing | dirtyIfObserved)
      .proposing(.wordBeginClosureWrite)
  }

  /// What a write access by the checkout holder finds.
  @usableFromInline enum AccessAction { case begun, wait, stale }

  /// Takes the value for one write access by the checkout's holder: waits for readers
  /// and another access; `stale` if there is no checkout at all (a proxy whose checkout
  /// ended).
  @inlinable @inline(__always) func beginAccess() -> (WriterWord, AccessAction) {
    guard isCheckedOut else { return (self, .stale) }
    guard !isWriting, readers == 0 else { return (proposing(.wordBeginAccessWaits), .wait) }
    return (
      WriterWord(raw: raw | WriterWord.writing | dirtyIfObserved).proposing(.wordBeginAccess),
      .begun
    )
  }

  /// Whether an access through a proxy may hold the value (it holds `proxy_access`
  /// already, WriterLock+ProxyAccess.swift): checked out, with no closure write or commit
  /// and no readers.
  @inlinable var admitsProxyAccess: Bool {
    raw & (WriterWord.writer | WriterWord.writing | ~(WriterWord.reader &- 1)) == WriterWord.writer
  }

  /// Drops the value after a write access. `true`: wake the threads sleeping on the word.
  @inlinable @inline(__always) func endAccess() -> (WriterWord, Bool) {
    assert(isWriting, "endAccess without an access")
    let next = WriterWord(raw: raw & ~(WriterWord.writing | WriterWord.waiters))
    return (next.proposing(hasWaiters ? .wordEndAccessWakes : .wordEndAccess), hasWaiters)
  }

  /// Takes a reader slot, unless a write access holds the value.
  @inlinable @inline(__always) func beginRead() -> WriterWord? {
    isWriting ? nil : WriterWord(raw: raw &+ WriterWord.reader).proposing(.wordBeginRead)
  }

  /// Drops a reader slot. `true`: this was the last reader and threads sleep on the word.
  @inlinable @inline(__always) func endRead() -> (WriterWord, Bool) {
    assert(readers != 0, "endRead without a reader")
    let next = raw &- WriterWord.reader
    guard next >> WriterWord.readerShift == 0, hasWaiters else {
      return (WriterWord(raw: next).proposing(.wordEndRead), false)
    }
    return (WriterWord(raw: next & ~WriterWord.waiters).proposing(.wordEndReadWakes), true)
  }

  /// Records a sleeper before it sleeps: only while there is something to wake it.
  @inlinable func markWaiters() -> WriterWord? {
    guard isWriting || readers != 0 else { return nil }
    return WriterWord(raw: raw | WriterWord.waiters).proposing(.wordMarkWaiters)
  }

  /// Ends a checkout with nothing to serve: no queue, no observer, no parked thread.
  @inlinable @inline(__always) func endCheckout() -> WriterWord? {
    let slow = WriterWord.queued | WriterWord.observed | WriterWord.parked | WriterWord.writing
    guard raw & slow == 0, isCheckedOut else { return nil }
    return WriterWord(raw: raw & ~WriterWord.writer).proposing(.wordEndCheckout)
  }

  /// Ends a closure write and its checkout at once, in the common case: nothing else set.
  @inlinable @inline(__always) func endClosureWrite() -> (WriterWord, Bool)? {
    if raw == WriterWord.writer | WriterWord.writing {
      return (WriterWord(raw: 0).proposing(.wordEndClosureWrite), false)
    }
    return endObserved(closureWrite: true)
  }

  /// Ends an observed checkout at once when observation is the only reason it could not:
  /// a closure write's (`closureWrite`: exactly `writer writing` besides) or one whose
  /// accesses are over (exactly `writer`, and any readers), whether a proxy or a
  /// `writeNext` body held it. Clears `dirty` too. `true`: it was dirty, publish.
  /// `observed` is kept as it is now, not as it was: the last subscriber may have left
  /// during the checkout. Readers keep their slots (a closure write has none).
  @inlinable @inline(__always) func endObserved(closureWrite: Bool) -> (WriterWord, Bool)? {
    let held = closureWrite ? WriterWord.writer | WriterWord.writing : WriterWord.writer
    // A closure write has no readers (`writing` excludes them): its end tests fewer bits.
    let readers = closureWrite ? 0 : ~(WriterWord.reader &- 1)
    let rest = raw & ~(WriterWord.observed | WriterWord.dirty | readers)
    guard rest == held else { return nil }
    let row: TransitionRow =
      closureWrite ? .wordEndObservedClosureWrite : .wordEndObservedCheckout
    return (WriterWord(raw: raw & (WriterWord.observed | readers)).proposing(row), isDirty)
  }

  /// A write joins the hand-off, under its lock, while `queued` is clear: sets it, and
  /// takes a free checkout to serve the queue (`true`).
  @inlinable func enqueue() -> (WriterWord, Bool) {
    assert(!isQueued, "enqueue with queued set")
    let next = WriterWord(raw: raw | WriterWord.writer | WriterWord.queued)
    return (next.proposing(isCheckedOut ? .wordEnqueue : .wordEnqueueTakesTheWriter), !isCheckedOut)
  }

  /// The holder frees the checkout with the hand-off empty, under its lock. `wake`: a
  /// parked `withWriter` must be woken. `publish`: `dirty` was set, and is cleared, as
  /// every end of a checkout clears it, so that a consumer that found it never waits past
  /// the end (serving takes it after each entry, so it is rarely set here).
  @inlinable func release() -> (WriterWord, (wake: Bool, publish: Bool)) {
    assert(isCheckedOut && !isWriting, "release without the checkout")
    let cleared = WriterWord.writer | WriterWord.queued | WriterWord.parked | WriterWord.dirty
    let next = WriterWord(raw: raw & ~cleared)
    return (
      next.proposing(hasParked ? .wordReleaseWakesParked : .wordRelease), (hasParked, isDirty)
    )
  }

  /// A `withWriter` that waited is about to park: asks the checkout's end to wake it.
  @inlinable func park() -> WriterWord? {
    isCheckedOut ? WriterWord(raw: raw | WriterWord.parked).proposing(.wordPark) : nil
  }

  /// A parked `withWriter` takes the free checkout; `parked` stays, so that its end wakes
  /// any other sleeper.
  @inlinable func checkoutAfterParking() -> WriterWord? {
    isCheckedOut
      ? nil
      : WriterWord(raw: raw | WriterWord.writer | WriterWord.parked)
        .proposing(.wordCheckoutAfterParking)
  }

  /// The first observer arrived: closure writes and commits now mark themselves dirty,
  /// and checkout ends publish. A checkout held now is not dirty for it: its accesses
  /// through a proxy marked `proxy_wrote` as they began, observed or not.
  @inlinable func observe() -> WriterWord {
    WriterWord(raw: raw | WriterWord.observed).proposing(.wordObserve)
  }

  /// Whether the value may be part-way through a checkout by what the word says: one is
  /// held and has written since the last publication. Consumers of `changes()` also ask
  /// `proxy_wrote` (`WriterLock.mayBeHalfDone`).
  @inlinable var mayBeHalfDone: Bool { isCheckedOut && isDirty }

  /// The last observer left.
  @inlinable func unobserve() -> WriterWord {
    WriterWord(raw: raw & ~(WriterWord.observed | WriterWord.dirty)).proposing(.wordUnobserve)
  }

  /// The holder is about to publish: clears `dirty`. `nil` if there is nothing new.
  @inlinable func takeDirty() -> WriterWord? {
    isDirty ? WriterWord(raw: raw & ~WriterWord.dirty).proposing(.wordTakeDirty) : nil
  }
}

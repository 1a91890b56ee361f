import SingleWriterAtomics

// The lend word's driver: every change to it is a ``LendWord`` transition applied here.
// The lender's own transitions (open, resolve, end) race only with `markSleepers`, which
// needs `resolving`: so `open` and `resolve`, made while not resolving, are plain stores;
// `end` is an exchange, which keeps the `sleepers` it replaces; and `markSleepers` is the
// one compare-and-exchange.
extension WriterLock {
  /// The lend word now.
  @inlinable var lend: LendWord { LendWord(raw: sw_load_acquire(lendWord)) }

  /// Starts a new `writeNext` lend: a fresh generation, which only the proxy lent now
  /// carries. Only the checkout holder calls it.
  @inlinable @inline(__always) func openLend() -> UInt32 {
    let opened = LendWord(raw: sw_load_relaxed(lendWord)).opened()
    sw_store_release(lendWord, opened.raw)
    TransitionRow.lendOpen.reached()
    return opened.generation
  }

  /// The lend's closure returned and someone else references its proxy: accesses through
  /// it wait until `endLend` says whether it was kept or retired.
  @inlinable func resolveLend(_ generation: UInt32) {
    let resolved = LendWord(current: generation).resolved().unsafelyUnwrapped
    sw_store_release(lendWord, resolved.raw)
    TransitionRow.lendResolve.reached()
  }

  /// Kept: the generation stays valid for as long as the proxy owns the checkout. Retired:
  /// a new generation, so that every access through the old proxy stops. Its release
  /// ordering also publishes the proxy's new role to whichever thread frees the proxy.
  @inlinable func endLend(_ generation: UInt32, kept: Bool) {
    let resolving = LendWord(current: generation).resolved().unsafelyUnwrapped
    let (ended, _) = resolving.ended(kept: kept).unsafelyUnwrapped
    let old = LendWord(raw: sw_exchange(lendWord, ended.raw))
    assert(old.generation == generation && old.isResolving, "\(old) ended as lend \(generation)")
    (kept ? TransitionRow.lendEndKept : .lendEndRetired).reached()
    guard old.hasSleepers else { return }
    TransitionRow.lendEndWakes.reached()
    sw_wake_all(lendWord)
  }

  /// Stops an access through a lent proxy whose lend is over: `generation` is the one the
  /// proxy was lent with, 0 for proxies that own their checkout from the start.
  @inlinable @inline(__always) func checkLend(_ generation: UInt32) {
    // One comparison with the word of that lend, current and clean: `admits` says `go`.
    guard generation != 0, sw_load_acquire(lendWord) != LendWord(current: generation).raw
    else { return }
    checkLendSlow(generation)
  }

  /// Waits while the lend is being resolved: a few pauses, since resolving takes a few
  /// instructions, then a sleep until `endLend` wakes it. Spinning without bound here
  /// would let a high-priority thread starve a preempted low-priority lender.
  @usableFromInline func checkLendSlow(_ generation: UInt32) {
    var spins = 0
    var word = lend
    while word.admits(generation) == .wait {
      if spins < HandOffPolicy.lendSpins {
        spins += 1
        sw_yield_cpu()
      } else if word.hasSleepers || markSleepers(seen: &word) {
        TransitionRow.lendWaitSleeps.reached()
        sw_wait(lendWord, word.withSleepers().unsafelyUnwrapped.raw)
      } else {
        continue  // the word changed: look at it again
      }
      word = lend
    }
    if word.admits(generation) == .stale { staleProxyFailure("ThreadSafeWriterProxy") }
  }

  /// `markSleepers`, from `word` as seen: `false`, with `word` updated, if it changed.
  @usableFromInline func markSleepers(seen word: inout LendWord) -> Bool {
    guard let marked = word.withSleepers() else { return false }
    assert(marked.invariantViolation == nil, "\(marked): \(marked.invariantViolation!)")
    var expected = word.raw
    if sw_cas(lendWord, &expected, marked.raw) { return true }
    word = LendWord(raw: expected)
    return false
  }
}

import SingleWriterAtomics

/// A ``ThreadSafeSingleWriter``'s checkout flag and value lock: one atomic word, plus
/// the queue's inbox and the thread ids used to catch self-deadlock.
///
/// Not generic, so a proxy locks through it without touching its container, and it
/// compiles once rather than per `Value`.
@usableFromInline
struct WriterLock {
  @usableFromInline let sync: UnsafeMutablePointer<sw_ts_sync>

  @usableFromInline init() {
    sync = .allocateOnOwnCacheLines(sw_ts_sync())
    sw_store_release(sw_ts_spin_rounds(sync), WriterLock.maxSpinRounds)
  }

  /// A blocked `withWriter` spins from `minSpinRounds` to `maxSpinRounds` rounds, looking
  /// at the writer after 1, 2, 4, ... pauses: 3 pauses at least, 127 (a few microseconds)
  /// at most.
  @usableFromInline static let minSpinRounds: UInt32 = 2
  @usableFromInline static let maxSpinRounds: UInt32 = 7

  @usableFromInline func deallocate() {
    sync.deinitialize(count: 1)
    sync.deallocate()
  }

  @inlinable var state: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_state(sync) }
  @inlinable var sequence: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_sequence(sync) }
  @inlinable var parkSequence: UnsafeMutablePointer<sw_atomic_u32> {
    sw_ts_park_sequence(sync)
  }
  @inlinable var spinRounds: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_spin_rounds(sync) }
  @inlinable var inbox: UnsafeMutablePointer<sw_atomic_uptr> { sw_ts_inbox(sync) }
  @inlinable var inboxLock: UnsafeMutablePointer<sw_mutex> { sw_ts_inbox_lock(sync) }
  @inlinable var checkoutThread: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_ts_checkout_thread(sync)
  }
  @inlinable var writingThread: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_ts_writing_thread(sync)
  }
  @inlinable var servingThread: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_ts_serving_thread(sync)
  }
  @inlinable var checkoutTask: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_ts_checkout_task(sync)
  }
  @inlinable var lendWord: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_lend_word(sync) }
  @inlinable var foreignArrivals: UnsafeMutablePointer<sw_atomic_u32> {
    sw_ts_foreign_arrivals(sync)
  }
  @inlinable var proxyHandoff: UnsafeMutablePointer<sw_atomic_u32> {
    sw_ts_proxy_handoff(sync)
  }

  // MARK: Lends

  /// Starts a new `writeNext` lend: a fresh generation, which only the proxy lent now
  /// carries. Only the checkout holder calls it.
  @inlinable @inline(__always) func openLend() -> UInt32 {
    let generation = (sw_load_relaxed(lendWord) >> 1) &+ 1
    sw_store_release(lendWord, generation << 1)
    return generation
  }

  /// The lend's closure returned and someone else references its proxy: accesses through
  /// it wait until `endLend` says whether it was kept or retired.
  @inlinable func resolveLend(_ generation: UInt32) {
    sw_store_release(lendWord, generation << 1 | 1)
  }

  /// Kept: the generation stays valid for as long as the proxy owns the checkout. Retired:
  /// a new generation, so that every access through the old proxy stops.
  @inlinable func endLend(_ generation: UInt32, kept: Bool) {
    sw_store_release(lendWord, (kept ? generation : generation &+ 1) << 1)
  }

  /// Stops an access through a lent proxy whose lend is over: `generation` is the one the
  /// proxy was lent with, 0 for proxies that own their checkout from the start.
  @inlinable @inline(__always) func checkLend(_ generation: UInt32) {
    guard generation != 0, sw_load_acquire(lendWord) != generation << 1 else { return }
    checkLendSlow(generation)
  }

  @usableFromInline func checkLendSlow(_ generation: UInt32) {
    var word = sw_load_acquire(lendWord)
    while word == generation << 1 | 1 {
      sw_yield_cpu()
      word = sw_load_acquire(lendWord)
    }
    if word != generation << 1 { staleProxyFailure() }
  }

  // MARK: Checkout

  /// Takes the checkout if nobody holds it and nothing is queued. `thread` is recorded
  /// as the holder, for the self-deadlock checks.
  @inlinable @inline(__always) func tryCheckout(as thread: UInt) -> Bool {
    var s = sw_load_relaxed(state)
    while s & (WriterState.writer | WriterState.queued) == 0 {
      if sw_cas(state, &s, s | WriterState.writer) {
        sw_uptr_store(checkoutThread, thread)
        return true
      }
    }
    return false
  }

  /// Ends the checkout unless something needs the slow path (queued writes, observers
  /// or a parked `withWriter`); then it returns `false` and the container finishes.
  @inlinable @inline(__always) func tryEndCheckout() -> Bool {
    sw_uptr_store(checkoutThread, 0)
    sw_uptr_store(checkoutTask, 0)
    var s = sw_load_relaxed(state)
    while s & (WriterState.queued | WriterState.observed | WriterState.parked) == 0 {
      if sw_cas(state, &s, s & ~WriterState.writer) { return true }
    }
    return false
  }

  /// Frees the checkout, with the queue empty. Returns `true` if a parked `withWriter`
  /// was woken.
  @inlinable @discardableResult func release() -> Bool {
    var s = sw_load_relaxed(state)
    while !sw_cas(
      state, &s, s & ~(WriterState.writer | WriterState.queued | WriterState.parked))
    {}
    guard s & WriterState.parked != 0 else { return false }
    unpark()
    return true
  }

  @usableFromInline func unpark() {
    sw_fetch_add(parkSequence, 1)
    sw_wake_one(parkSequence)
  }

  // MARK: Reading

  /// Takes a reader slot, waiting only for a write access in progress.
  @inlinable @inline(__always) func beginRead() {
    if !tryBeginRead() { beginReadSlow() }
  }

  /// Takes a reader slot unless a write access holds the value. Never waits: the
  /// compare-and-exchange fails only if the word changed.
  @inlinable @inline(__always) func tryBeginRead() -> Bool {
    var s = sw_load_relaxed(state)
    while s & WriterState.writing == 0 {
      if sw_cas(state, &s, s &+ WriterState.reader) { return true }
    }
    return false
  }

  @inlinable @inline(__always) func endRead() {
    let old = sw_fetch_sub(state, WriterState.reader)
    if old & WriterState.waiters != 0, old >> WriterState.readerShift == 1 { wakeWaiters() }
  }

  @usableFromInline func beginReadSlow() {
    let me = sw_current_thread()
    var s = sw_load_acquire(state)
    while true {
      if s & WriterState.writing == 0 {
        if sw_cas(state, &s, s &+ WriterState.reader) { return }
        continue
      }
      if sw_uptr_load(writingThread) == me {
        selfDeadlockFailure(
          """
          ThreadSafeSingleWriter: read inside a write on the same thread would wait forever \
          for that write to end. Inside tryWrite, withWriter or `await write`, use the inout \
          value you were given; inside an access through a proxy, read before the access.
          """)
      }
      sleep(expecting: &s)
    }
  }

  // MARK: Writing

  /// Takes `writing` for one access through a proxy, waiting for readers and other
  /// accesses to finish.
  @inlinable @inline(__always) func beginWriting() {
    var s = sw_load_relaxed(state)
    if s & WriterState.writer == 0 { staleProxyFailure() }
    if s & ~WriterState.compatibleWithWriting == 0,
      sw_cas(state, &s, s | WriterState.writing | WriterState.dirtyIfObserved(s))
    {
      sw_uptr_store(writingThread, sw_current_thread())
      sw_seq_begin_write(sequence)
      return
    }
    acquireWriting()
  }

  /// Waits for the readers and other accesses, then takes `writing`.
  @usableFromInline func acquireWriting() {
    let me = sw_current_thread()
    var s = sw_load_acquire(state)
    while true {
      if s & WriterState.writer == 0 { staleProxyFailure() }
      if s & ~WriterState.compatibleWithWriting == 0 {
        if sw_cas(state, &s, s | WriterState.writing | WriterState.dirtyIfObserved(s)) {
          sw_uptr_store(writingThread, me)
          sw_seq_begin_write(sequence)
          return
        }
        continue
      }
      if s & WriterState.writing != 0, sw_uptr_load(writingThread) == me {
        selfDeadlockFailure(
          """
          ThreadSafeSingleWriter: a write access through a proxy inside another write on the \
          same thread would wait forever. Inside tryWrite, withWriter or `await write`, \
          change the inout value instead of writing through a proxy.
          """)
      }
      sleep(expecting: &s)
    }
  }

  @inlinable @inline(__always) func endWriting() {
    sw_seq_end_write(sequence)
    releaseWriting()
  }

  /// Drops `writing`, with the sequence already even again.
  @inlinable @inline(__always) func releaseWriting() {
    sw_uptr_store(writingThread, 0)
    let old = sw_fetch_sub(state, WriterState.writing)
    if old & WriterState.waiters != 0 { wakeWaiters() }
  }

  // MARK: Closure writes

  /// Takes the checkout and `writing` together if the writer is free.
  @inlinable func tryBeginClosureWrite() -> Bool {
    var s = sw_load_relaxed(state)
    while s & ~WriterState.idle == 0 {
      if sw_cas(
        state, &s, s | WriterState.writer | WriterState.writing | WriterState.dirtyIfObserved(s))
      {
        let me = sw_current_thread()
        sw_uptr_store(writingThread, me)
        sw_uptr_store(checkoutThread, scoped(me))
        sw_seq_begin_write(sequence)
        return true
      }
    }
    // Free but for readers copying the value: take the checkout, then wait for them,
    // as a mutex would. `nil` from tryWrite means the writer is busy, not that someone
    // is reading.
    guard s & (WriterState.writer | WriterState.queued) == 0 else { return false }
    return beginClosureWriteAfterReaders()
  }

  @usableFromInline func beginClosureWriteAfterReaders() -> Bool {
    var s = sw_load_relaxed(state)
    while s & (WriterState.writer | WriterState.queued) == 0 {
      if sw_cas(state, &s, s | WriterState.writer) {
        beginClosureWrite()
        return true
      }
    }
    return false
  }

  /// With the checkout already held (handed over by the queue): marks it as this
  /// thread's closure and takes `writing`.
  @inlinable func beginClosureWrite() {
    sw_uptr_store(checkoutThread, scoped(sw_current_thread()))
    acquireWriting()
  }

  /// Drops `writing` and the checkout together; `false` if the container must finish
  /// (queued writes, observers, a parked `withWriter` or sleepers to wake), starting
  /// with `releaseWriting`.
  @inlinable func tryEndClosureWrite() -> Bool {
    sw_seq_end_write(sequence)
    sw_uptr_store(writingThread, 0)
    sw_uptr_store(checkoutThread, 0)
    var s = WriterState.writer | WriterState.writing
    return sw_cas(state, &s, 0)
  }

  // MARK: Sleeping

  /// Marks `waiters` in `s`, sleeps until the state word changes, and reloads `s`.
  @usableFromInline func sleep(expecting s: inout UInt32) {
    if s & WriterState.waiters == 0 {
      guard sw_cas(state, &s, s | WriterState.waiters) else { return }
      s |= WriterState.waiters
    }
    sw_wait(state, s)
    s = sw_load_acquire(state)
  }

  @usableFromInline func wakeWaiters() {
    sw_fetch_and(state, ~WriterState.waiters)
    sw_wake_all(state)
  }
}

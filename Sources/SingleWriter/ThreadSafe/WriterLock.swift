import SingleWriterAtomics

/// A ``ThreadSafeSingleWriter``'s checkout flag and value lock: one atomic word, plus
/// the queue lock and the owner ids used to catch self-deadlock.
///
/// Not generic, so a proxy locks through it without touching its container, and it
/// compiles once rather than per `Value`.
@usableFromInline
struct WriterLock {
  @usableFromInline let sync: UnsafeMutablePointer<sw_writer_sync>

  @usableFromInline init() {
    sync = .allocate(capacity: 1)
    sync.initialize(to: sw_writer_sync())
  }

  @usableFromInline func deallocate() {
    sync.deinitialize(count: 1)
    sync.deallocate()
  }

  @inlinable var state: UnsafeMutablePointer<sw_atomic_u32> { sw_writer_state(sync) }
  @inlinable var queueLock: UnsafeMutablePointer<sw_mutex> { sw_writer_queue_lock(sync) }
  @inlinable var checkoutThread: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_writer_checkout_thread(sync)
  }
  @inlinable var writingThread: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_writer_writing_thread(sync)
  }

  // MARK: Checkout

  /// Takes the checkout if nobody holds it and nothing is queued.
  @inlinable func tryCheckout() -> Bool {
    var s = sw_load_relaxed(state)
    while s & (WriterState.writer | WriterState.queued) == 0 {
      if sw_cas(state, &s, s | WriterState.writer) {
        sw_uptr_store(checkoutThread, sw_current_thread())
        return true
      }
    }
    return false
  }

  /// Ends the checkout unless writes are queued or someone observes changes; then it
  /// returns `false` and the container must finish the checkout.
  @inlinable func tryEndCheckout() -> Bool {
    sw_uptr_store(checkoutThread, 0)
    var s = sw_load_relaxed(state)
    while s & (WriterState.queued | WriterState.observed) == 0 {
      if sw_cas(state, &s, s & ~WriterState.writer) { return true }
    }
    return false
  }

  /// Frees the writer; only with nothing queued.
  @inlinable func clearWriter() {
    var s = sw_load_relaxed(state)
    while !sw_cas(state, &s, s & ~WriterState.writer) {}
  }

  // MARK: Reading

  /// Takes a reader slot. Returns `false`, without one, inside this thread's own
  /// `writeNext` body, which already holds the value and may read it directly.
  @inlinable func beginRead() -> Bool {
    var s = sw_load_relaxed(state)
    if s & WriterState.writing == 0, sw_cas(state, &s, s &+ WriterState.reader) { return true }
    if sw_uptr_load(writingThread) == scoped(sw_current_thread()) { return false }
    return beginReadSlow()
  }

  @inlinable func endRead() {
    let old = sw_fetch_sub(state, WriterState.reader)
    if old & WriterState.waiters != 0, old >> WriterState.readerShift == 1 { wakeWaiters() }
  }

  @usableFromInline func beginReadSlow() -> Bool {
    let me = sw_current_thread()
    var s = sw_load_acquire(state)
    while true {
      if s & WriterState.writing == 0 {
        if sw_cas(state, &s, s &+ WriterState.reader) { return true }
        continue
      }
      let holder = sw_uptr_load(writingThread)
      if holder == scoped(me) { return false }
      if holder == me { selfDeadlockFailure("read inside a write") }
      sleep(expecting: &s)
    }
  }

  // MARK: Writing

  /// Takes `writing` for one access through a proxy. Returns `false`, without taking
  /// it, inside this thread's own `writeNext` body, which already holds it.
  @inlinable func beginWriting() -> Bool {
    var s = sw_load_relaxed(state)
    if s & WriterState.writer == 0 { staleProxyFailure() }
    if s & ~WriterState.compatibleWithWriting == 0,
      sw_cas(state, &s, s | WriterState.writing | WriterState.dirtyIfObserved(s))
    {
      sw_uptr_store(writingThread, sw_current_thread())
      return true
    }
    let me = sw_current_thread()
    if sw_uptr_load(writingThread) == scoped(me) { return false }
    return acquireWriting(marking: me)
  }

  /// Waits for the readers and takes `writing`, recording `mark` as its holder.
  @usableFromInline func acquireWriting(marking mark: UInt) -> Bool {
    let me = sw_current_thread()
    var s = sw_load_acquire(state)
    while true {
      if s & WriterState.writer == 0 { staleProxyFailure() }
      if s & ~WriterState.compatibleWithWriting == 0 {
        if sw_cas(state, &s, s | WriterState.writing | WriterState.dirtyIfObserved(s)) {
          sw_uptr_store(writingThread, mark)
          return true
        }
        continue
      }
      if s & WriterState.writing != 0 {
        let holder = sw_uptr_load(writingThread)
        if holder == scoped(me) { return false }
        if holder == me { selfDeadlockFailure("a write access inside another write access") }
      }
      sleep(expecting: &s)
    }
  }

  @inlinable func endWriting() {
    sw_uptr_store(writingThread, 0)
    let old = sw_fetch_sub(state, WriterState.writing)
    if old & WriterState.waiters != 0 { wakeWaiters() }
  }

  // MARK: Closure writes

  /// Takes the checkout and `writing` together if the writer is free. `lent` marks a
  /// `writeNext` body, whose proxy writes then skip the lock.
  @inlinable func tryBeginClosureWrite(lent: Bool) -> Bool {
    var s = sw_load_relaxed(state)
    if s & ~(WriterState.waiters | WriterState.observed | WriterState.dirty) == 0,
      sw_cas(
        state, &s, s | WriterState.writer | WriterState.writing | WriterState.dirtyIfObserved(s))
    {
      let me = sw_current_thread()
      sw_uptr_store(writingThread, lent ? scoped(me) : me)
      sw_uptr_store(checkoutThread, scoped(me))
      return true
    }
    guard tryCheckout() else { return false }
    beginClosureWrite(lent: lent)
    return true
  }

  /// With the checkout already held (handed over by the queue): marks it as this
  /// thread's closure and takes `writing`.
  @inlinable func beginClosureWrite(lent: Bool) {
    let me = sw_current_thread()
    sw_uptr_store(checkoutThread, scoped(me))
    _ = acquireWriting(marking: lent ? scoped(me) : me)
  }

  /// Drops `writing` and the checkout together; `false` if the container must finish
  /// (queued writes, observers, or sleepers to wake).
  @inlinable func tryEndClosureWrite() -> Bool {
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

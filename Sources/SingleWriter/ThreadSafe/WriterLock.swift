import SingleWriterAtomics

/// A ``ThreadSafeSingleWriter``'s synchronization: the state word (``WriterWord``), the
/// hand-off's lock, and the side words that can live in neither (sw_writer.h says why).
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
  @inlinable var queuedHint: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_queued_hint(sync) }
  @inlinable var handOffLock: UnsafeMutablePointer<sw_mutex> { sw_ts_hand_off_lock(sync) }
  @inlinable var checkoutThread: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_ts_checkout_thread(sync)
  }
  @inlinable var writingThread: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_ts_writing_thread(sync)
  }
  @inlinable var checkoutTask: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_ts_checkout_task(sync)
  }
  @inlinable var lendWord: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_lend_word(sync) }
  @inlinable var gateWanted: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_gate_wanted(sync) }
  @inlinable var gate: UnsafeMutablePointer<sw_gate> { sw_ts_gate(sync) }
  @inlinable var gateThread: UnsafeMutablePointer<sw_atomic_uptr> { sw_ts_gate_thread(sync) }
  @inlinable var gateSleeps: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_gate_sleeps(sync) }

  // MARK: The word

  /// The word now, with no ordering: for decisions a transition re-checks.
  @inlinable var word: WriterWord { WriterWord(raw: sw_load_relaxed(state)) }

  /// The one driver of the word: applies `transition` with a compare-and-exchange until
  /// it sticks, or until `transition` returns `nil` in the state it finds. Returns the
  /// word it replaced and the transition's action. Debug builds check every new word.
  @inlinable @inline(__always)
  func update<Action>(
    _ transition: (WriterWord) -> (WriterWord, Action)?
  ) -> (old: WriterWord, action: Action)? {
    update(guessing: word, transition)
  }

  /// `update`, trying `guess` as the current word first, with no load: for the hot paths,
  /// whose common word is known, the first attempt folds to one compare-and-exchange.
  @inlinable @inline(__always)
  func update<Action>(
    guessing guess: WriterWord, _ transition: (WriterWord) -> (WriterWord, Action)?
  ) -> (old: WriterWord, action: Action)? {
    var old = guess
    while let (new, action) = transition(old) {
      assert(new.invariantViolation == nil, "\(old) -> \(new): \(new.invariantViolation!)")
      let found = sw_cas_value(state, old.raw, new.raw)
      if found == old.raw {
        TransitionRow.taken()
        return (old, action)
      }
      old.raw = found
    }
    return nil
  }

  /// `update` for transitions with no action.
  @inlinable @inline(__always) @discardableResult
  func update(_ transition: (WriterWord) -> WriterWord?) -> WriterWord? {
    update { word in transition(word).map { ($0, ()) } }?.old
  }

  /// `update(guessing:_:)` for transitions with no action.
  @inlinable @inline(__always) @discardableResult
  func update(
    guessing guess: WriterWord, _ transition: (WriterWord) -> WriterWord?
  ) -> WriterWord? {
    update(guessing: guess) { word in transition(word).map { ($0, ()) } }?.old
  }

  /// The word while a checkout is held and nothing else is going on.
  @inlinable static var heldWord: WriterWord { WriterWord(raw: WriterWord.writer) }
  /// The word while the holder has a write access and nothing else is going on.
  @inlinable static var writingWord: WriterWord {
    WriterWord(raw: WriterWord.writer | WriterWord.writing)
  }

  // MARK: The hand-off's lock

  /// Runs `body` under the hand-off's lock. Spins briefly before sleeping: the lock is
  /// held for an append or a batch decision.
  @inlinable @inline(__always)
  func withHandOffLock<R>(_ body: () -> R) -> R {
    if !sw_mutex_trylock(handOffLock) { acquireHandOffLockSlow() }
    defer { sw_mutex_unlock(handOffLock) }
    return body()
  }

  @usableFromInline func acquireHandOffLockSlow() {
    for round in 0..<6 {
      for _ in 0..<(1 << round) { sw_yield_cpu() }
      if sw_mutex_trylock(handOffLock) { return }
    }
    sw_mutex_lock(handOffLock)
  }

  /// Under the hand-off's lock: the first write to queue sets `queued`, taking a free
  /// checkout to serve it. Returns `true` if this thread took it.
  @inlinable func markQueued() -> Bool {
    sw_store_release(queuedHint, 1)
    return update { ($0.enqueue()) }.unsafelyUnwrapped.action
  }

  /// Under the hand-off's lock, with the queue empty: frees the checkout. Returns `true` if
  /// a parked `withWriter` must be woken.
  @inlinable func release() -> Bool {
    sw_store_release(queuedHint, 0)
    return update { $0.release() }.unsafelyUnwrapped.action
  }

  @usableFromInline func unpark() {
    sw_fetch_add(parkSequence, 1)
    sw_wake_one(parkSequence)
  }

  // MARK: Lends

  /// Starts a new `writeNext` lend: a fresh generation, which only the proxy lent now
  /// carries. Only the checkout holder calls it.
  @inlinable @inline(__always) func openLend() -> UInt32 {
    let generation = (sw_load_relaxed(lendWord) >> 2) &+ 1
    sw_store_release(lendWord, generation << 2)
    TransitionRow.lendOpen.reached()
    return generation
  }

  /// The lend's closure returned and someone else references its proxy: accesses through
  /// it wait until `endLend` says whether it was kept or retired.
  @inlinable func resolveLend(_ generation: UInt32) {
    sw_store_release(lendWord, generation << 2 | 1)
    TransitionRow.lendResolve.reached()
  }

  /// Kept: the generation stays valid for as long as the proxy owns the checkout. Retired:
  /// a new generation, so that every access through the old proxy stops. Its release
  /// ordering also publishes the proxy's new role to whichever thread frees it.
  @inlinable func endLend(_ generation: UInt32, kept: Bool) {
    let old = sw_exchange(lendWord, (kept ? generation : generation &+ 1) << 2)
    (kept ? TransitionRow.lendEndKept : .lendEndRetired).reached()
    guard old & 2 != 0 else { return }
    TransitionRow.lendEndWakes.reached()
    sw_wake_all(lendWord)
  }

  /// Stops an access through a lent proxy whose lend is over: `generation` is the one the
  /// proxy was lent with, 0 for proxies that own their checkout from the start.
  @inlinable @inline(__always) func checkLend(_ generation: UInt32) {
    guard generation != 0, sw_load_acquire(lendWord) != generation << 2 else { return }
    checkLendSlow(generation)
  }

  /// Waits while the lend is being resolved: a few pauses, since resolving takes a few
  /// instructions, then a sleep until `endLend` wakes it. Spinning without bound here
  /// would let a high-priority thread starve a preempted low-priority lender.
  @usableFromInline func checkLendSlow(_ generation: UInt32) {
    let resolving = generation << 2 | 1
    var spins = 0
    var word = sw_load_acquire(lendWord)
    while word & ~2 == resolving {
      if spins < 64 {
        spins += 1
        sw_yield_cpu()
      } else if word & 2 != 0 || sw_cas(lendWord, &word, word | 2) {
        TransitionRow.lendWaitSleeps.reached()
        sw_wait(lendWord, resolving | 2)
      } else {
        continue  // the word changed: look at it again
      }
      word = sw_load_acquire(lendWord)
    }
    if word != generation << 2 { staleProxyFailure() }
  }

  // MARK: Checkout

  /// Takes the checkout if nobody holds it (so nothing is queued either). `thread` is
  /// recorded as the holder, for the self-deadlock checks.
  @inlinable @inline(__always) func tryCheckout(as thread: UInt) -> Bool {
    guard update(guessing: WriterWord(raw: 0), { $0.checkout() }) != nil else { return false }
    sw_uptr_store(checkoutThread, thread)
    return true
  }

  /// Records the current task, if any, as the holder of a proxy just checked out.
  @usableFromInline func recordHoldingTask() {
    let task = currentTaskID()
    if task != 0 { sw_uptr_store(checkoutTask, task) }
  }

  /// Whether a proxy that `task` took holds the checkout (never for task 0).
  func isHeld(byTask task: UInt) -> Bool {
    task != 0 && sw_uptr_load(checkoutTask) == task
  }

  /// Whether a proxy that `task` took, or one taken on `thread`, holds the checkout: a
  /// blocked `withWriter` then warns, in words that say which.
  func isHeld(byTask task: UInt, orThread thread: UInt) -> Bool {
    isHeld(byTask: task) || sw_uptr_load(checkoutThread) == thread
  }

  /// Ends the checkout unless something needs the slow path (queued writes, observers
  /// or a parked `withWriter`); then it returns `false` and the container finishes.
  @inlinable @inline(__always) func tryEndCheckout() -> Bool {
    sw_uptr_store(checkoutThread, 0)
    sw_uptr_store(checkoutTask, 0)
    return update(guessing: WriterLock.heldWord) { $0.endCheckout() } != nil
  }

  // MARK: Reading

  /// Takes a reader slot, waiting only for a write access in progress.
  @inlinable @inline(__always) func beginRead() {
    if !tryBeginRead() { beginReadSlow() }
  }

  /// Takes a reader slot unless a write access holds the value. Never waits: the
  /// compare-and-exchange fails only if the word changed.
  @inlinable @inline(__always) func tryBeginRead() -> Bool {
    update { $0.beginRead() } != nil
  }

  @inlinable @inline(__always) func endRead() {
    if update({ $0.endRead() }).unsafelyUnwrapped.action { sw_wake_all(state) }
  }

  @usableFromInline func beginReadSlow() {
    let me = sw_current_thread()
    while !tryBeginRead() {
      if isAccessing(me) {
        selfDeadlockFailure(
          """
          ThreadSafeSingleWriter: read inside a write on the same thread would wait forever \
          for that write to end. Inside tryWrite, withWriter or `await write`, use the inout \
          value you were given; inside an access through a proxy, read before the access.
          """)
      }
      sleepWhileAccessed()
    }
  }

  // MARK: Writing

  /// Takes `writing` for one access through a proxy, waiting for readers and other
  /// accesses to finish.
  @inlinable @inline(__always) func beginWriting() {
    // One attempt inline, from the word of a checkout with nothing else going on (no
    // load; the transition folds to a constant); any other word goes through the driver,
    // out of line, so that the accessors around this stay small enough to inline.
    let expected = WriterLock.heldWord.raw
    let begun = WriterLock.heldWord.beginAccess().0.raw
    guard sw_cas_value(state, expected, begun) == expected else { return acquireWriting() }
    TransitionRow.taken()
    sw_uptr_store(writingThread, sw_current_thread())
    sw_seq_begin_write(sequence)
  }

  /// Waits for the readers and other accesses, then takes `writing`.
  @usableFromInline func acquireWriting() {
    let me = sw_current_thread()
    while true {
      switch update({ $0.beginAccess() }).unsafelyUnwrapped.action {
      case .begun:
        sw_uptr_store(writingThread, me)
        sw_seq_begin_write(sequence)
        return
      case .stale: staleProxyFailure()
      case .wait:
        stopIfReading()
        if isAccessing(me) {
          selfDeadlockFailure(
            """
            ThreadSafeSingleWriter: a write access through a proxy inside another write on \
            the same thread would wait forever. Inside tryWrite, withWriter or `await write`, \
            change the inout value instead of writing through a proxy.
            """)
        }
        sleepWhileAccessed()
      }
    }
  }

  @inlinable @inline(__always) func endWriting() {
    sw_seq_end_write(sequence)
    releaseWriting()
  }

  /// Drops `writing`, with the sequence already even again.
  @inlinable @inline(__always) func releaseWriting() {
    sw_uptr_store(writingThread, 0)
    let expected = WriterLock.writingWord.raw
    let ended = WriterLock.writingWord.endAccess().0.raw
    guard sw_cas_value(state, expected, ended) == expected else { return releaseWritingSlow() }
    TransitionRow.taken()
  }

  @usableFromInline func releaseWritingSlow() {
    if update({ $0.endAccess() }).unsafelyUnwrapped.action { sw_wake_all(state) }
  }

  // MARK: Closure writes

  /// Takes the checkout and `writing` together if the writer is free.
  @inlinable func tryBeginClosureWrite() -> Bool {
    guard update(guessing: WriterWord(raw: 0), { $0.beginClosureWrite() }) != nil else {
      // Free but for readers copying the value: take the checkout, then wait for them,
      // as a mutex would. `nil` from tryWrite means the writer is busy, not that someone
      // is reading.
      guard !word.isCheckedOut, update({ $0.checkout() }) != nil else { return false }
      beginClosureWrite()
      return true
    }
    let me = sw_current_thread()
    sw_uptr_store(writingThread, me)
    sw_uptr_store(checkoutThread, scoped(me))
    // The gate's flag comes with the sequence this loads anyway: free while it is clear.
    if sw_seq_begin_write_seen(sequence) & SW_SEQ_GATE_WANTED != 0 { closeGate() }
    return true
  }

  /// With the checkout already held (handed over by the queue, or taken by a waiter):
  /// marks it as this thread's closure, takes the gate if wanted, and takes `writing`.
  @inlinable func beginClosureWrite() {
    sw_uptr_store(checkoutThread, scoped(sw_current_thread()))
    closeGateIfWanted()
    acquireWriting()
  }

  /// Drops `writing` and the checkout together; `false` if the container must finish
  /// (queued writes, observers, a parked `withWriter` or sleepers to wake), starting
  /// with `releaseWriting`.
  @inlinable func tryEndClosureWrite() -> Bool {
    let seen = sw_seq_end_write_seen(sequence)
    sw_uptr_store(writingThread, 0)
    sw_uptr_store(checkoutThread, 0)
    // Only this thread clears the flag, so it is still set if this write took the gate.
    if seen & SW_SEQ_GATE_WANTED != 0 {
      openGateIfClosed()
    } else {
      assert(sw_uptr_load(gateThread) == 0, "the gate outlived its flag")
    }
    let expected = WriterWord.writer | WriterWord.writing
    let ended = WriterWord(raw: expected).endClosureWrite().unsafelyUnwrapped.raw
    guard sw_cas_value(state, expected, ended) == expected else { return false }
    TransitionRow.taken()
    return true
  }

  // MARK: The priority gate

  /// How many closure writes take the gate after a thread last slept for the writer.
  ///
  /// Taking it costs two atomic read-modify-writes, as much again as a closure write, so
  /// a container pays for it only while threads have been sleeping for its writer; one
  /// nobody waits for pays nothing (the flag rides in the sequence a write bumps anyway).
  /// The first sleep of a quiet spell finds the gate open.
  @usableFromInline static let gateSpan: UInt32 = 1024

  /// Asks the next `gateSpan` closure writes to take the gate.
  @usableFromInline func wantGate() {
    TransitionRow.gateWant.reached()
    if sw_load_relaxed(gateWanted) != WriterLock.gateSpan {
      sw_store_release(gateWanted, WriterLock.gateSpan)
    }
    if sw_load_relaxed(sequence) & SW_SEQ_GATE_WANTED == 0 {
      sw_fetch_or(sequence, SW_SEQ_GATE_WANTED)
    }
  }

  /// After taking the checkout for a closure write, or to serve the queue: takes the gate
  /// if threads have slept for the writer lately.
  @inlinable @inline(__always) func closeGateIfWanted() {
    if sw_load_relaxed(sequence) & SW_SEQ_GATE_WANTED != 0 { closeGate() }
  }

  @usableFromInline @inline(never) func closeGate() {
    // A lost update between this and a sleeper's store only shortens or lengthens the span.
    let wanted = sw_load_relaxed(gateWanted)
    if wanted != 0 { sw_store_release(gateWanted, wanted &- 1) }
    assert(sw_uptr_load(gateThread) == 0, "the gate is taken twice")
    // Busy only while a woken sleeper passes through it: this write goes without.
    guard sw_gate_trylock(gate) else { return TransitionRow.gateCloseBusy.reached() }
    TransitionRow.gateClose.reached()
    sw_uptr_store(gateThread, sw_current_thread())
  }

  /// Before the checkout can pass to another thread: releases the gate if this thread took
  /// it. Only the checkout's holder takes the gate, and it releases it before the checkout
  /// moves, so a non-zero `gateThread` seen by the holder is its own.
  @inlinable @inline(__always) func openGateIfClosed() {
    if sw_uptr_load(gateThread) != 0 { openGate() }
  }

  /// Releases the gate; once the span is used up, clears the flag too (only a holder of
  /// the checkout does, so a closure write that took the gate still finds it at its end).
  @usableFromInline @inline(never) func openGate() {
    assert(sw_uptr_load(gateThread) == sw_current_thread(), "the gate is opened by another thread")
    sw_uptr_store(gateThread, 0)
    sw_gate_unlock(gate)
    TransitionRow.gateOpen.reached()
    guard sw_load_relaxed(gateWanted) == 0 else { return }
    TransitionRow.gateOpenClearsTheFlag.reached()
    sw_fetch_and(sequence, ~SW_SEQ_GATE_WANTED)
  }

  /// For a thread about to sleep for the writer: asks the next closure writes to take the
  /// gate, then, if a closure write of another thread holds it now, sleeps on it until it
  /// opens, so that the OS boosts that thread. `false` if nobody holds it: sleep on the
  /// word instead.
  @usableFromInline func sleepOnGate(_ me: UInt) -> Bool {
    wantGate()
    let holder = sw_uptr_load(gateThread)
    guard holder != 0, holder != me else { return false }
    sw_fetch_add(gateSleeps, 1)
    TransitionRow.gateSleep.reached()
    sw_gate_lock(gate)
    sw_gate_unlock(gate)
    return true
  }

  // MARK: Waits a thread would block itself

  /// Whether this thread holds a write access (a closure write's body, or an access
  /// through a proxy) that a wait for the writer or the value would wait behind.
  ///
  /// An access begun on this thread may be another task's, suspended across an `await`
  /// (an async mutating method called through `proxy.write`): a wait for it ends when
  /// that task resumes. A proxy taken in a task names that task, so only an access of
  /// this task's, or of no task's, is this thread's own.
  @usableFromInline func isAccessing(_ me: UInt) -> Bool {
    guard sw_uptr_load(writingThread) == me, word.isWriting else { return false }
    let holder = sw_uptr_load(checkoutTask)
    return holder == 0 || holder == currentTaskID()
  }

  /// Stops a write to this container from inside one of its `read { }` closures on this
  /// thread, at any depth of nested reads: the write would wait forever for that read.
  /// Every path of a write that could wait asks, before it waits or is refused.
  @usableFromInline func stopIfReading() {
    guard sw_reading_contains(sync) else { return }
    selfDeadlockFailure(
      """
      ThreadSafeSingleWriter: a write inside `read { }` on the same thread would wait \
      forever for that read to end. Return what you need from the read, then write.
      """)
  }

  /// Stops a wait for the writer that this thread itself holds up: from a closure write's
  /// body or a served queue (marked in `checkoutThread`), from inside a write access
  /// through a proxy, or from inside `read { }`. Proxies held outside an access are not
  /// stopped: they may have gone to another thread, so their wait only warns.
  @usableFromInline func stopIfWaitingForItself(_ me: UInt) {
    if sw_uptr_load(checkoutThread) == scoped(me) {
      selfDeadlockFailure(
        """
        ThreadSafeSingleWriter: withWriter inside a write's closure (tryWrite, withWriter, \
        `await write` or a writeNext body), or inside an observer that a checkout's end is \
        calling, on the same thread would wait forever for that write to end. Change the \
        value you were given, or use writeNext to queue this write behind it.
        """)
    }
    if isAccessing(me) {
      selfDeadlockFailure(
        """
        ThreadSafeSingleWriter: withWriter inside a write access through a proxy (say a \
        mutating method called through `proxy.write`) on the same thread would wait forever \
        for that access to end. Write through the proxy, or call withWriter after the access.
        """)
    }
    stopIfReading()
  }

  // MARK: Sleeping

  /// Sleeps until the state word changes, if an access or a reader is still there to
  /// wake this thread when it ends.
  @usableFromInline func sleepWhileAccessed() {
    guard let old = update({ $0.markWaiters() }) else { return }
    sw_wait(state, old.raw | WriterWord.waiters)
  }
}

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
    sw_store_release(sw_ts_spin_rounds(sync), HandOffPolicy.maxSpinRounds)
  }

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
  @inlinable var checkoutHolder: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_ts_checkout_holder(sync)
  }
  @inlinable var lendWord: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_lend_word(sync) }
  @inlinable var gateWanted: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_gate_wanted(sync) }
  @inlinable var gate: UnsafeMutablePointer<sw_gate> { sw_ts_gate(sync) }
  @inlinable var closureWord: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_closure_word(sync) }
  @inlinable var accessWord: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_access_word(sync) }
  @inlinable var gateThread: UnsafeMutablePointer<sw_atomic_uptr> { sw_ts_gate_thread(sync) }
  @inlinable var gateSleeps: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_gate_sleeps(sync) }
  @inlinable var arrivedWrites: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_ts_arrived_writes(sync)
  }
  @inlinable var startedWrites: UnsafeMutablePointer<sw_atomic_uptr> {
    sw_ts_started_writes(sync)
  }
  @inlinable var ranEntries: UnsafeMutablePointer<UInt64> { sw_ts_ran(sync) }
  @inlinable var roomWanted: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_room_wanted(sync) }
  @inlinable var room: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_room(sync) }
  @inlinable var successorHint: UnsafeMutablePointer<sw_atomic_u32> {
    sw_ts_successor_hint(sync)
  }
  @inlinable var transactionHeld: UnsafeMutablePointer<sw_atomic_u32> {
    sw_ts_transaction_held(sync)
  }

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

  /// One attempt of `transition` from `expected`, with no load: the hot paths' first try,
  /// which folds to one compare-and-exchange of two constants. Returns the action, or
  /// `nil` if the word was not `expected` (the caller goes on through `update`).
  @inlinable @inline(__always)
  func tryUpdate<Action>(
    from expected: WriterWord, _ transition: (WriterWord) -> (WriterWord, Action)?
  ) -> Action? {
    guard let (new, action) = transition(expected) else { return nil }
    assert(new.invariantViolation == nil, "\(expected) -> \(new): \(new.invariantViolation!)")
    guard sw_cas_value(state, expected.raw, new.raw) == expected.raw else { return nil }
    TransitionRow.taken()
    return action
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
    for round in 0..<HandOffPolicy.handOffLockSpinRounds {
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

  /// Under the hand-off's lock, with the queue empty: frees the checkout. Returns whether
  /// a parked `withWriter` must be woken, and whether the checkout was dirty, to publish.
  @inlinable func release() -> (wake: Bool, publish: Bool) {
    sw_store_release(queuedHint, 0)
    return update { $0.release() }.unsafelyUnwrapped.action
  }

  @usableFromInline func unpark() {
    sw_fetch_add(parkSequence, 1)
    sw_wake_one(parkSequence)
  }

  // MARK: Checkout

  /// Takes the checkout if nobody holds it (so nothing is queued either). `thread` is
  /// recorded as the holder's scope mark (0 for a proxy), for the self-deadlock checks.
  @inlinable @inline(__always) func tryCheckout(as thread: UInt) -> Bool {
    guard update(guessing: WriterWord(raw: 0), { $0.checkout() }) != nil else { return false }
    sw_uptr_store(checkoutThread, thread)
    return true
  }

  /// Records the caller as the holder of a proxy that owns the checkout now: a task, if
  /// it runs in one, wherever it resumes, or else its thread, whatever that runs. An
  /// identity no later caller is given (see `sw_current_holder`): the proxy may outlive
  /// the task or thread that took it.
  @usableFromInline func recordHolder() {
    sw_uptr_store(checkoutHolder, sw_current_holder())
  }

  /// Who took the proxy that holds the checkout (see `recordHolder`), or 0.
  @inlinable var holder: UInt { sw_uptr_load(checkoutHolder) }

  /// The holder of a proxy that a body served for another thread kept, or of a checkout
  /// offered to a task that has not claimed it yet: someone, but no caller, so that no
  /// wait takes it for its own and every blocking wait in a task warns behind it
  /// (`blockedWaitMayStarveHolder`). Even, as a thread's serial is, and beyond any:
  /// serials count threads up from 2.
  @usableFromInline static let heldByNobodyKnown: UInt = ~1

  /// Whether the proxy that holds the checkout may be held up by this caller: this task
  /// took it, or this thread took it outside any task, so that whatever the thread runs
  /// now may be what keeps it. One load when no proxy holds the checkout.
  @inlinable func isHeldHere() -> Bool {
    let holder = holder
    return holder != 0 && WriterLock.isCaller(holder)
  }

  /// Whether the caller may be what keeps the proxy that holds the checkout, for a wait
  /// that would block rather than be warned of: it is held here (`isHeldHere`), or a
  /// task took it and this task runs inline (`sw_current_task_runs_inline`: started with
  /// `Task.immediate` by code that cannot go on until this task suspends, which may be
  /// the task that took it). The same identity as every other "who holds this" asks;
  /// only the answer for a task running inline errs towards not waiting, since whoever
  /// runs beneath it cannot be named.
  @usableFromInline func mayBeHeldUpHere() -> Bool {
    let holder = holder
    guard holder != 0 else { return false }
    return WriterLock.isCaller(holder) || (holder & 1 != 0 && sw_current_task_runs_inline())
  }

  /// Whether a blocking wait by the caller may starve the checkout it waits for: the
  /// caller runs in a task, so it may block a thread of the cooperative pool, and someone
  /// else holds the checkout through a proxy or an async transaction, which may be, or
  /// may have been handed to, a task that needs one of the pool's threads to go on
  /// (a proxy taken on a thread and held by a `Task` across its `await`s is one). When
  /// every thread of the pool waits like this, the holder never resumes to release it.
  /// A blocking wait for the checkout that outlasts a second warns if so (`Waiter.wait`,
  /// `waitForRoom`); a wait for a write access asks the same of the access's maker instead
  /// (`accessMayBeStarved`).
  @usableFromInline func blockedWaitMayStarveHolder() -> Bool {
    let holder = holder
    return holder != 0 && sw_current_task() != 0 && !WriterLock.isCaller(holder)
  }

  /// A thread's serial is one thread-local load; a task's number, two calls.
  @inlinable static func isCaller(_ holder: UInt) -> Bool {
    holder & 1 == 0 ? holder == sw_current_thread_serial() : holder == sw_current_task_holder()
  }

  /// Ends the checkout unless something needs the slow path (queued writes, observers
  /// or a parked `withWriter`); then it returns `false` and the container finishes.
  /// Takes the accesses' mark (`proxy_wrote`) before the release, after which the next
  /// holder's accesses mark: an unobserved end drops it, and a slow end gets it back.
  @inlinable @inline(__always) func tryEndCheckout() -> Bool {
    sw_uptr_store(checkoutThread, 0)
    let holder = sw_uptr_load(checkoutHolder)
    sw_uptr_store(checkoutHolder, 0)
    let wrote = sw_load_relaxed(proxyWrote)
    sw_store_relaxed(proxyWrote, 0)
    // From the loaded word: an observed checkout's end goes to the slow end without a
    // failed compare-and-exchange.
    guard update({ $0.endCheckout() }) == nil else { return true }
    // Still held: the container finishes, and asks who held it (the debts).
    sw_store_relaxed(proxyWrote, wrote)
    sw_uptr_store(checkoutHolder, holder)
    return false
  }

  // MARK: Reading

  /// Takes a reader slot, waiting only for a write access in progress.
  @inlinable @inline(__always) func beginRead() {
    if update({ $0.beginRead() }) == nil { beginReadSlow() }
    // Then look for an access through a proxy (WriterLock+ProxyAccess.swift).
    if sw_load_seq_cst(proxyAccess) != 0 { readAfterProxyAccess() }
  }

  /// Takes a reader slot unless a write access holds the value. Never waits.
  @inlinable func tryBeginRead() -> Bool {
    guard update({ $0.beginRead() }) != nil else { return false }
    guard sw_load_seq_cst(proxyAccess) == 0 else {
      endRead()
      return false
    }
    return true
  }

  @inlinable @inline(__always) func endRead() {
    if update({ $0.endRead() }).unsafelyUnwrapped.action { sw_wake_all(state) }
  }

  @usableFromInline func beginReadSlow() {
    let me = sw_current_thread()
    while update({ $0.beginRead() }) == nil {
      if isAccessing(me) { readInsideWriteFailure() }
      sleepWhileAccessed()
    }
  }

  // MARK: Writing

  /// Takes `writing` for one access by this thread (a transaction's commit), waiting for
  /// readers and other accesses to finish.
  @inlinable @inline(__always) func beginWriting() {
    if tryBeginWriting() == 0 { waitToBeginWriting(sw_current_thread()) }
    sw_uptr_store(writingThread, sw_current_thread())
    sw_seq_begin_write(sequence)
  }

  /// Takes the value for one access through a proxy (WriterLock+ProxyAccess.swift), and
  /// records who makes it: a proxy lent to a body running on this thread (its closure's
  /// mark is this thread's) is used there and then, by the thread; any other proxy, one
  /// that owns its checkout, may be a task's, which may suspend inside the access and
  /// resume elsewhere: the task's, tagged with the low bit (see `isAccessing` and
  /// `accessMayBeStarved`). An access a task started inline in the body makes and keeps
  /// past it is retagged when the lend ends (`lend`).
  ///
  /// Inlined whole, with the runtime's own entry point called directly: this runs on every
  /// access through a held proxy, the path the container is for, where a call through the
  /// C layer's looked-up pointer cost as much again as the access.
  @inlinable @inline(__always) func beginProxyWriting() {
    if !tryBeginProxyAccess() { waitToBeginProxyAccess(sw_current_thread()) }
    let me = sw_current_thread()
    // The thread first, then the task over it if there is one: nothing is kept in a
    // register across the runtime's call, which costs every access more than the second
    // store costs an access in a task.
    sw_uptr_store(writingThread, me)
    if sw_uptr_load(checkoutThread) != scoped(me) {
      let task = sw_current_task_inline()
      if task != 0 { sw_uptr_store(writingThread, task | 1) }
    }
    sw_seq_begin_write(sequence)
  }

  /// Ends an access through a proxy.
  @inlinable @inline(__always) func endProxyWriting() {
    sw_seq_end_write(sequence)
    sw_uptr_store(writingThread, 0)
    endProxyAccess()
  }

  /// One attempt to take `writing`, inline; returns the word it installed, or 0. First
  /// from the word the last access began from (`accessWord`), with no load of the state
  /// word before the exchange. If that guess is stale, the exchange returns the word, and
  /// the second guess is made from it: the bits the transition ignores kept (queued,
  /// observed, dirty, parked), `writer` set and those it waits for cleared, so an observed
  /// checkout's accesses, and those of one being served, begin here too. A wait goes
  /// through the driver, out of line, so that the accessors around this stay small
  /// enough to inline.
  @inlinable @inline(__always) func tryBeginWriting() -> UInt32 {
    let expected = WriterWord(raw: sw_load_relaxed(accessWord))
    guard expected.raw != 0 else { return tryBeginWriting(found: word.raw) }
    // `beginAccess` of a word an access began from: it begins again.
    let installed = expected.raw | WriterWord.writing | expected.dirtyIfObserved
    #if DEBUG
      // The transition the exchange takes, checked and counted as `tryUpdate` does.
      let (new, action) = expected.beginAccess()
      assert(new.raw == installed && action == .begun, "\(new) from \(expected)")
    #endif
    let found = sw_cas_value(state, expected.raw, installed)
    guard found == expected.raw else { return tryBeginWriting(found: found) }
    TransitionRow.taken()
    return installed
  }

  /// `tryBeginWriting`'s second guess, from the word `found`; records it in `accessWord`
  /// if it holds. Out of line: the first guess rarely misses.
  @usableFromInline @inline(never) func tryBeginWriting(found: UInt32) -> UInt32 {
    let kept = WriterWord.queued | WriterWord.observed | WriterWord.dirty | WriterWord.parked
    let guess = WriterWord(raw: found & kept | WriterWord.writer)
    let (new, action) = guess.beginAccess()
    assert(new.invariantViolation == nil, "\(guess) -> \(new): \(new.invariantViolation!)")
    guard action == .begun, sw_cas_value(state, guess.raw, new.raw) == guess.raw else { return 0 }
    TransitionRow.taken()
    sw_store_relaxed(accessWord, guess.raw)
    return new.raw
  }

  /// Waits for the readers and other accesses, then takes `writing`.
  @usableFromInline func acquireWriting() {
    let me = sw_current_thread()
    waitToBeginWriting(me)
    sw_uptr_store(writingThread, me)
    sw_seq_begin_write(sequence)
  }

  /// Waits for the readers and other accesses, then takes `writing`; the caller records
  /// the accessor.
  @usableFromInline func waitToBeginWriting(_ me: UInt) {
    while true {
      switch update({ $0.beginAccess() }).unsafelyUnwrapped.action {
      case .begun: return
      case .stale: staleProxyFailure("ThreadSafeWriterProxy")
      case .wait:
        stopIfReading()
        if isAccessing(me) { accessInsideAccessFailure() }
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
    // From the loaded word without `waiters`, as in `beginWriting`: whatever else it
    // holds, the end only clears `writing`; with sleepers to wake, out of line.
    let guess = WriterWord(raw: word.raw & ~WriterWord.waiters)
    if tryUpdate(from: guess, { $0.endAccess() }) == nil { releaseWritingSlow() }
  }

  @usableFromInline func releaseWritingSlow() {
    if update({ $0.endAccess() }).unsafelyUnwrapped.action { sw_wake_all(state) }
  }

  // MARK: Closure writes

  /// Takes the checkout and `writing` together if the writer is free.
  @inlinable func tryBeginClosureWrite() -> Bool {
    // The free word the last closure write left: free, and observed if it was.
    let guess = WriterWord(raw: sw_load_relaxed(closureWord) & WriterWord.observed)
    guard let (old, _) = update(guessing: guess, { $0.beginClosureWrite().map { ($0, ()) } })
    else {
      // Free but for readers copying the value: take the checkout, then wait for them,
      // as a mutex would. `nil` from tryWrite means the writer is busy, not that someone
      // is reading.
      guard !word.isCheckedOut, update({ $0.checkout() }) != nil else { return false }
      beginClosureWrite()
      return true
    }
    sw_store_relaxed(closureWord, old.beginClosureWrite().unsafelyUnwrapped.raw)
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

  /// How a closure write's end went.
  @usableFromInline enum ClosureWriteEnd {
    /// Ended: nothing more to do.
    case ended
    /// Ended, and the value is new to observers: publish it.
    case endedDirty
    /// The container must finish it (queued writes, a parked `withWriter` or sleepers to
    /// wake), starting with `releaseWriting`.
    case slow
  }

  /// Drops `writing` and the checkout together, from the word this write's begin set, as
  /// one compare-and-exchange, observed or not.
  @inlinable func tryEndClosureWrite() -> ClosureWriteEnd {
    let seen = sw_seq_end_write_seen(sequence)
    sw_uptr_store(writingThread, 0)
    sw_uptr_store(checkoutThread, 0)
    // Only this thread clears the flag, so it is still set if this write took the gate.
    if seen & SW_SEQ_GATE_WANTED != 0 {
      openGateIfClosed()
    } else {
      assert(sw_uptr_load(gateThread) == 0, "the gate outlived its flag")
    }
    let begun = WriterWord(raw: sw_load_relaxed(closureWord))
    guard let dirty = tryUpdate(from: begun, { $0.endClosureWrite() }) else { return .slow }
    return dirty ? .endedDirty : .ended
  }

}

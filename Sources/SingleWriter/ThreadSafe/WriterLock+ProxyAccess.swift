import SingleWriterAtomics

// A write access through a proxy holds the value in a word of its own, `proxy_access`
// (0 free, 1 held), rather than the state word's `writing`, so that it ends with a plain
// store: anyone may change the state word during the access (queue a write, observe,
// park, take a reader slot), so ending there takes a compare-and-exchange.
//
// The protocol, between an access A and a reader R (a holder of a reader slot):
//
// | Event | Step | Then |
// | --- | --- | --- |
// | A begins | exchange `proxy_access` 0 -> 1, then load `state` | admitted if checked out, no `writing` and no readers; else it steps back |
// | A steps back | store 0 to `proxy_access`, wake its sleepers | waits on `state` for the readers or `writing` it saw, then begins again |
// | A ends | store 0 to `proxy_access`, then look for sleepers | wakes them if any |
// | A is admitted | store 1 to `proxy_wrote`, before it writes | the checkout's end takes it, and publishes if observed |
// | R begins | take a slot in `state`, then load `proxy_access` | reads if 0; else keeps its slot and sleeps until it clears |
//
// Each side writes its own word with a sequentially consistent operation and then loads
// the other's, so at least one sees the other: an access never runs beside a reader.
// A reader that sees an access keeps its slot, so an access that saw the reader steps
// back and lets it read; one that did not is already admitted and ends soon, so neither
// waits for the other.
//
// So a reader also finds `proxy_wrote` as every access it does not overlap left it: one
// that ended before the reader's look released it with `proxy_access`.
//
// The end's look for sleepers is not ordered after its store: it may miss a sleeper that
// registered at that moment, which then looks at `proxy_access` before the store shows.
// So the first sleep after registering is short (`HandOffPolicy.accessRecheck`); by its
// end the store shows, and any later end sees the registration.

extension WriterLock {
  @inlinable var proxyAccess: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_proxy_access(sync) }
  @inlinable var proxyWrote: UnsafeMutablePointer<sw_atomic_u32> { sw_ts_proxy_wrote(sync) }
  @inlinable var proxyAccessSleepers: UnsafeMutablePointer<sw_atomic_u32> {
    sw_ts_proxy_access_sleepers(sync)
  }

  /// Whether a write access through a proxy holds the value now. An acquire: a reader
  /// that waited for an access reads the value once this says it ended.
  @inlinable var isProxyAccessed: Bool { sw_load_acquire(proxyAccess) != 0 }

  /// One attempt to begin an access through a proxy: takes `proxy_access`, then checks
  /// the state word. `true`: admitted, and the checkout marked written. `false`: nothing
  /// held.
  @inlinable @inline(__always) func tryBeginProxyAccess() -> Bool {
    guard sw_cas_value(proxyAccess, 0, 1) == 0 else { return false }
    return admitProxyAccess(WriterWord(raw: sw_load_seq_cst(state)))
  }

  /// With `proxy_access` taken and the state word `found` after it: admits the access
  /// (marking the checkout written first, in `proxy_wrote`), or steps back. The mark is a
  /// plain store: a consumer that takes a reader slot after this access began finds
  /// `proxy_access` taken, and waits for its end, whose release store carries the mark;
  /// one that took its slot before makes this access step back. Marked observed or not:
  /// an observer that arrives during the checkout learns from the mark alone whether the
  /// value may be half done.
  @inlinable @inline(__always) func admitProxyAccess(_ found: WriterWord) -> Bool {
    guard found.admitsProxyAccess else {
      stepBack()
      return false
    }
    sw_store_relaxed(proxyWrote, 1)
    TransitionRow.proxyAccessBegin.reached()
    return true
  }

  /// Ends an access through a proxy: one plain store, then a look for sleepers.
  @inlinable @inline(__always) func endProxyAccess() {
    assert(sw_load_relaxed(proxyAccess) == 1, "endProxyAccess without an access")
    sw_store_release(proxyAccess, 0)
    guard sw_load_relaxed(proxyAccessSleepers) != 0 else {
      return TransitionRow.proxyAccessEnd.reached()
    }
    TransitionRow.proxyAccessEndWakes.reached()
    wakeProxyAccessSleepers()
  }

  /// Lets go of `proxy_access` without an access: an access that found readers or
  /// `writing`, or a stale proxy.
  @usableFromInline func stepBack() {
    TransitionRow.proxyAccessStepsBack.reached()
    sw_store_release(proxyAccess, 0)
    if sw_load_seq_cst(proxyAccessSleepers) != 0 { wakeProxyAccessSleepers() }
  }

  @usableFromInline func wakeProxyAccessSleepers() { sw_wake_all(proxyAccess) }

  /// Whether an access through a proxy has begun since the last call; clears the mark.
  /// Only by the checkout's holder, as it ends the checkout or publishes a served entry,
  /// after every access it made: every end of a checkout takes it, so it never outlives
  /// the checkout that made it.
  @inlinable @inline(__always) func takeProxyWrote() -> Bool {
    guard sw_load_relaxed(proxyWrote) != 0 else { return false }
    sw_store_relaxed(proxyWrote, 0)
    return true
  }

  /// `takeProxyWrote` for serving, which takes the mark after each entry and then looks at
  /// `observed` with no exchange of the state word to settle the race with an arriving
  /// observer: both sequentially consistent, as the consumer's side is the other way round
  /// (it sets `observed`, then loads the mark), so a consumer that found the mark finds
  /// `observed` seen and the entry published, and one that comes later finds no mark.
  @inlinable @inline(__always) func takeProxyWroteBeforeLooking() -> Bool {
    guard sw_load_relaxed(proxyWrote) != 0 else { return false }
    return sw_fetch_and(proxyWrote, 0) != 0
  }

  /// Whether the value may be part-way through a checkout, for a consumer that holds a
  /// reader slot: one is held and has written since the last publication. The slot keeps
  /// writes out; `dirty`, set by a closure write or commit as it begins, was published by
  /// that write's end to the compare-and-exchange that took the slot, and `proxy_wrote`
  /// by an access's end to the load of `proxy_access` that followed it. The mark's load is
  /// sequentially consistent, against serving's take of it (`takeProxyWroteBeforeLooking`).
  var mayBeHalfDone: Bool {
    let word = word
    return word.mayBeHalfDone || (word.isCheckedOut && sw_load_seq_cst(proxyWrote) != 0)
  }

  /// An observer arrives, under the hub's lock: `observed`. A checkout held now needs no
  /// mark of its own: its accesses marked `proxy_wrote` unobserved too, so a consumer
  /// finds its value half done only if it has written, and its end publishes then.
  func observe() {
    update { $0.observe() }
  }

  /// Begins an access through a proxy, waiting for readers, a closure write or commit,
  /// or another access through a proxy (one proxy used from two threads).
  @usableFromInline func waitToBeginProxyAccess(_ me: UInt) {
    var wait = LongWait()
    while true {
      if sw_cas_value(proxyAccess, 0, 1) == 0 {
        let found = WriterWord(raw: sw_load_seq_cst(state))
        if admitProxyAccess(found) { return }
        guard found.isCheckedOut else { staleProxyFailure("ThreadSafeWriterProxy") }
        stopIfReading()
        if isAccessing(me) { accessInsideAccessFailure() }
        sleepWhileAccessed()
      } else {
        if isAccessing(me) { accessInsideAccessFailure() }
        sleepWhileProxyAccessed(&wait)
      }
    }
  }

  @usableFromInline func readInsideWriteFailure() -> Never {
    selfDeadlockFailure(
      """
      ThreadSafeSingleWriter: read inside a write on the same thread would wait forever \
      for that write to end. Inside tryWrite, withWriter or `await write`, use the inout \
      value you were given; inside an access through a proxy, read before the access.
      """)
  }

  @usableFromInline func accessInsideAccessFailure() -> Never {
    selfDeadlockFailure(
      """
      ThreadSafeSingleWriter: a write access through a proxy inside another write on \
      the same thread would wait forever. Inside tryWrite, withWriter or `await write`, \
      change the inout value instead of writing through a proxy.
      """)
  }

  /// With a reader slot taken: waits until no access through a proxy holds the value,
  /// keeping the slot (see the table above).
  @usableFromInline func readAfterProxyAccess() {
    TransitionRow.proxyAccessReaderWaits.reached()
    let me = sw_current_thread()
    var wait = LongWait()
    while isProxyAccessed {
      if isAccessing(me) { readInsideWriteFailure() }
      sleepWhileProxyAccessed(&wait)
    }
  }

  /// Sleeps until `proxy_access` clears, if it is held; warns once, as
  /// `sleepWhileAccessed` does, if the wait may starve the access of the pool's threads.
  @usableFromInline func sleepWhileProxyAccessed(_ wait: inout LongWait) {
    _ = sw_fetch_add(proxyAccessSleepers, 1)
    defer { _ = sw_fetch_sub(proxyAccessSleepers, 1) }
    var first = true
    while sw_load_seq_cst(proxyAccess) != 0 {
      if wait.isDue(), accessMayBeStarved() { wait.warn(WriterLock.starvedAccessWarning) }
      let due = wait.untilDue ?? UInt64(Int64.max)
      let timeout = first ? min(due, HandOffPolicy.accessRecheck) : due
      first = false
      _ = sw_wait_for(proxyAccess, 1, Int64(clamping: timeout))
    }
  }
}

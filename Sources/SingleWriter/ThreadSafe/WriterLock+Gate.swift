import SingleWriterAtomics

extension WriterLock {
  /// Asks the next `HandOffPolicy.gateSpan` closure writes to take the gate.
  @usableFromInline func wantGate() {
    TransitionRow.gateWant.reached()
    if sw_load_relaxed(gateWanted) != HandOffPolicy.gateSpan {
      sw_store_release(gateWanted, HandOffPolicy.gateSpan)
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
}

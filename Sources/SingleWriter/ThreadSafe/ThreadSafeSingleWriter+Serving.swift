import SingleWriterAtomics

// Serving the queue: entries arrive under the hand-off's lock, and the thread that ends
// the checkout runs them in batches (see HandOff.swift and "How the hand-off works").
extension ThreadSafeSingleWriter where Value: ~Copyable {
  /// How many writes wait, leaving out cancelled tasks; for tests and diagnostics. Only
  /// exact while no thread enqueues or runs the queue: it walks the holder's batch, which
  /// only the holder may touch.
  var pendingCount: Int {
    func counts(_ entry: Pending) -> Bool {
      switch entry {
      case .write: return true
      case .waiter(let waiter): return waiter.current != .withdrawn
      case .asyncWrite(let waiter, _), .checkout(let waiter):
        return waiter.current != .cancelled
      case .drain: return false
      }
    }
    var count = 0
    pending.pointee.forEach { if counts($0) { count += 1 } }
    lock.withHandOffLock { handOff.pointee.inbox.forEach { if counts($0) { count += 1 } } }
    return count
  }

  /// Queues `entry` behind the checkout. If the checkout turned out to be free, takes it
  /// and serves the queue here, so nothing is ever stranded.
  ///
  /// Under the hand-off's lock, only the first entry since the queue was last empty
  /// touches the state word: it sets `queued`, taking a free checkout with it. The holder
  /// clears `queued` under the same lock, only with the inbox empty, so an entry is either
  /// seen by the holder's next batch or finds the checkout free and serves itself.
  ///
  /// A task's entry (`await write`, `checkout()`) is never chosen to take over serving:
  /// its thread runs the task's enqueue, and must not serve others' writes before the task
  /// has suspended. If it finds the checkout free, its own entry is the first to run.
  ///
  /// `fileID`, `function` and `line` name a `writeNext` that runs its own body in place
  /// here, in debug builds' lock-order checking.
  @inlinable
  func enqueue(
    _ entry: Pending, fileID: StaticString = #fileID, function: StaticString = #function,
    line: UInt = #line
  ) {
    let me = sw_current_thread()
    // Nor is a thread inside this container's `read { }`: the bodies it would serve write.
    var mayServe: Bool
    switch entry {
    case .write, .waiter: mayServe = true
    case .asyncWrite, .checkout: mayServe = false
    case .drain(let waiter): return enqueueDrain(waiter, from: me)
    }
    if mayServe, sw_reading_depth() != 0, sw_reading_contains(lock.sync) { mayServe = false }
    var bounded = false
    if maxQueuedWrites != .max, case .write = entry { bounded = waitsForRoom(me) }
    let arrival: HandOff<Pending>.Arrival
    let tookOver: Bool
    if bounded {
      (arrival, tookOver) = arriveWithRoom(entry, from: me, mayServe: mayServe)
    } else {
      (arrival, tookOver) = lock.withHandOffLock {
        arrive(entry, from: me, mayServe: mayServe, isWrite: true)
      }
    }
    // Thousands of writes wait while another thread runs them: writers outpace it. Give
    // up the rest of this time slice (the call still returns without waiting), so that
    // on a machine with fewer cores than writers that thread gets to run.
    if arrival.yield { sw_yield_thread() }
    if tookOver {
      switch entry {
      case .checkout(let waiter):
        // A `checkout()` that took the free checkout is offered it, as at its turn; the
        // task claims it as soon as this enqueue returns.
        if offerCheckout(to: waiter, stoppingServing: nil) { return }
      case .write(let body):
        // This thread's own body, alone in the queue: it runs in place, as when the
        // writer is free, so that a proxy it keeps is known as this thread's and task's.
        sw_uptr_store(lock.checkoutThread, scoped(me))
        runInPlace(body, fileID, function, line)
        return
      case .asyncWrite, .waiter, .drain: break
      }
      return finishCheckout(self)
    }
    if let successor = arrival.successor { takeOverServing(successor) }
  }

  /// A `drained()` marker queues only if a write waits, or runs, ahead of it, decided
  /// under the same lock as its arrival: the queue may have emptied since `drained()`
  /// looked, and a proxy taken since then, with nothing queued, must not hold it up.
  /// Otherwise the task is resumed at once.
  @usableFromInline func enqueueDrain(_ waiter: TaskWaiter, from me: UInt) {
    let queuedBehind = lock.withHandOffLock { () -> Bool in
      guard handOff.pointee.queued,
        !handOff.pointee.drainsAtOnce(
          arrivedWrites: sw_uptr_load(lock.arrivedWrites),
          startedWrites: sw_uptr_load(lock.startedWrites))
      else { return false }
      // `queued` is set, so this takes no checkout and chooses no successor.
      _ = arrive(.drain(waiter), from: me, mayServe: false, isWrite: false)
      return true
    }
    if !queuedBehind, waiter.apply(.reach) {
      waiter.continuation.take().unsafelyUnwrapped.resume(returning: true)
    }
  }

  /// Under the hand-off's lock: appends `entry`, counts it, and sets `queued` if it is
  /// the first, taking a free checkout with it. Returns the arrival and whether this
  /// thread took the checkout.
  @inlinable @inline(__always)
  func arrive(
    _ entry: Pending, from me: UInt, mayServe: Bool, isWrite: Bool
  ) -> (HandOff<Pending>.Arrival, Bool) {
    // Queued by the checkout's holder (a closure write or in-place body running here, or
    // a proxy this task, or this thread outside a task, took): this thread owes it when it
    // ends the checkout. Asked only while nobody serves: a server holds the checkout
    // itself, and the holder's line, which the answer reads, is the one a server writes
    // for every entry it runs.
    let holding =
      handOff.pointee.server == 0
      && (sw_uptr_load(lock.checkoutThread) == scoped(me) || lock.isHeldHere())
    let arrival = handOff.pointee.arrive(
      entry, from: me, mayServe: mayServe, holding: holding)
    if arrival.successor != nil { sw_store_relaxed(lock.successorHint, 1) }
    if isWrite { sw_uptr_store(lock.arrivedWrites, sw_uptr_load(lock.arrivedWrites) &+ 1) }
    let tookOver = arrival.setQueued && lock.markQueued()
    // A `checkout()` or a `writeNext` that took the free checkout is the only entry: it is
    // taken out, to be handed over or run in place.
    if tookOver, takesOwnEntry(entry) {
      handOff.pointee.takeOwnEntry()
      ran &+= 1  // this thread holds the checkout now
      startedOwnEntry()
    }
    return (arrival, tookOver)
  }

  /// Whether an entry whose own enqueue took the free checkout leaves the queue at once:
  /// a `checkout()`, handed the checkout, and a `writeNext`, run in place.
  @usableFromInline @inline(never) func takesOwnEntry(_ entry: Pending) -> Bool {
    switch entry {
    case .checkout, .write: return true
    case .asyncWrite, .waiter, .drain: return false
    }
  }

  /// This thread was chosen to take over serving from a thread that has served others
  /// for long enough: waits for that server's batch to end, then serves. It waits about a
  /// millisecond at most: a batch still running then may be waiting for this very thread
  /// (a body that takes a lock this caller holds, or waits for it to queue), so it
  /// withdraws and returns, and the server, which has not returned, serves on.
  @usableFromInline
  func takeOverServing(_ successor: Waiter) {
    // Dismissed: the server stopped for another reason, and whoever ends that checkout
    // serves.
    let outcome = successor.waitOrWithdraw(after: HandOffPolicy.successorPatience)
    if outcome == .withdrawn { TransitionRow.handOffSuccessorWithdraws.reached() }
    guard outcome == .handedTheCheckout else { return }
    TransitionRow.handOffSuccessorServes.reached()
    finishCheckout(self)
  }

  /// Ends a closure write that `tryEndClosureWrite` could not end on its own.
  @inlinable
  func finishClosureWrite() {
    if tryEndObserved(closureWrite: true) { return }
    lock.releaseWriting()
    finishCheckoutNow()
  }

  /// Ends a checkout that could not end on its own, a closure write's (`closureWrite`) or
  /// one whose accesses are over (a proxy's, a `writeNext` body's), when observers are
  /// the only reason: one compare-and-exchange ends it and clears `dirty`, and the hub is
  /// told afterwards. Its versions are counters and consumers read the newest value, so
  /// publishing after the release loses nothing, and an observer that writes back finds
  /// the writer free. `false`: the slow end is needed (queued writes, a parked
  /// `withWriter`, sleepers to wake), or a consumer wants a snapshot, which only the
  /// holder can take.
  @inlinable @inline(__always)
  func tryEndObserved(closureWrite: Bool) -> Bool {
    // Taken before the release, after which the next holder's accesses mark it; a
    // closure write makes no access through a proxy.
    let wrote = !closureWrite && lock.takeProxyWrote()
    // Only the holder takes the gate, and a closure write opened it before it got here.
    // (Asked before the release: after it, the next holder may hold the gate.)
    assert(sw_uptr_load(lock.gateThread) == 0, "the gate outlived its checkout")
    guard !hub.wantsSnapshot,
      let (_, dirty) = lock.update({ $0.endObserved(closureWrite: closureWrite) })
    else {
      // Back for the slow end: serving takes it and publishes.
      if wrote { sw_store_relaxed(lock.proxyWrote, 1) }
      return false
    }
    if dirty || wrote { hub.publish() }
    return true
  }

  /// Ends a `writeNext` body's checkout whose proxy came back.
  @inlinable @inline(__always)
  func endLentCheckout() {
    if !lock.tryEndCheckout() { finishCheckoutNow() }
  }

  /// The slow end of a checkout: serves the queue, publishing to observers, then frees
  /// the writer, waking a parked `withWriter`. A checkout that ends inside this thread's
  /// own queue run, for example in the `deinit` of a proxy kept by a queued write, is
  /// handed back to that run.
  ///
  /// With observers the only reason it could not end on its own, it ends in one step, as
  /// a closure write does (`tryEndObserved`): nothing waits to be served, and a checkout
  /// that ends inside this thread's own run finds `queued` set, which that end refuses.
  @inlinable
  func finishCheckoutNow() {
    sw_uptr_store(lock.checkoutThread, 0)
    // Ended by its holder: a closure write's or in-place body's thread (no proxy holder
    // recorded), or whoever took the proxy, on whatever thread it ends it now. A proxy's
    // release elsewhere owes nothing. Cleared before the checkout can end below: the next
    // holder records its own.
    let holder = lock.holder
    sw_uptr_store(lock.checkoutHolder, 0)
    if tryEndObserved(closureWrite: false) { return }
    let byHolder = holder == 0 || WriterLock.isCaller(holder)
    let me = sw_current_thread()
    switch lock.withHandOffLock({ handOff.pointee.checkoutEnded(on: me, byHolder: byHolder) }) {
    case .handedBack:
      // Back inside this thread's own run, which still holds the checkout: a wait for it
      // from here (a `deinit` that calls `withWriter`, say) must stop with a message.
      sw_uptr_store(lock.checkoutThread, scoped(me))
    case .serve: serveQueue(me)
    }
  }

  /// Runs queued writes in order while holding the checkout, until the queue is empty
  /// (then frees the writer), a write keeps its proxy, a waiting `withWriter` is handed
  /// the checkout, or a successor takes over. A loop, not recursion: a deep queue uses no
  /// stack, and a checkout that ends inside it comes back to it (see `finishCheckoutNow`).
  @inlinable
  func serveQueue(_ me: UInt) {
    #if DEBUG
      // The writes run here were queued, not called here: a lock this thread took before
      // serving is not theirs (lock-order checking reports one that takes it).
      LockOrderCheck.beginServing(ObjectIdentifier(self))
      defer { LockOrderCheck.released(ObjectIdentifier(self)) }
    #endif
    // This thread runs the writes it queued while it held the checkout (and what is ahead
    // of them), as documented. Everything else is its job for about a millisecond; past
    // that, the next thread to queue one takes over (see `HandOff`).
    var deadline = sw_monotonic_ns() &+ HandOffPolicy.servingSlice
    var batches = 0
    var run = 0
    // Looked up once: a body that reads this container has ended that read on return.
    let insideRead = sw_reading_depth() != 0 && sw_reading_contains(lock.sync)
    var lateInBatch = false
    // Serving runs on this one thread: it holds the gate, so that a thread sleeping for the
    // writer boosts it, and releases it before the checkout passes to any other thread.
    lock.closeGateIfWanted()
    while true {
      // The entry that ran is whole: its mark is taken, so that it passes neither to what
      // runs next nor to whoever is handed the checkout, and published if observed.
      let wrote = lock.takeProxyWroteBeforeLooking()
      if WriterWord(raw: sw_load_seq_cst(lock.state)).isObserved {
        // Observers run here, holding the checkout: waiting for it from one stops the
        // program with a message instead of hanging.
        sw_uptr_store(lock.checkoutThread, scoped(me))
        publishIfDirty(wrote: wrote)
        sw_uptr_store(lock.checkoutThread, 0)
      }
      if pending.pointee.isEmpty {
        batches &+= 1
        let late = batches > 1 && sw_monotonic_ns() > deadline
        let (next, released) = lock.withHandOffLock {
          let next = handOff.pointee.nextBatch(into: &pending.pointee, late: late)
          guard case .release = next else { return (next, (wake: false, publish: false)) }
          assert(sw_uptr_load(lock.checkoutThread) != scoped(me), "a closure's mark outlived it")
          lock.openGateIfClosed()
          return (next, lock.release())
        }
        switch next {
        case .run: break
        case .release:
          // Published after the release, as a one-step end.
          if released.publish { hub.publish() }
          if released.wake { lock.unpark() }
          return
        case .handOver(let successor):
          lock.openGateIfClosed()
          if successor.grant() { return }
          // It withdrew: it waited long enough, perhaps for a body of this run that waits
          // for it. Serve on, and ask again only after another millisecond.
          lock.closeGateIfWanted()
          lock.withHandOffLock { handOff.pointee.serveOn(me) }
          deadline = sw_monotonic_ns() &+ HandOffPolicy.servingSlice
          batches = 0
          continue
        }
      }
      switch runNext(me, insideRead: insideRead) {
      case .ran:
        // Only now: the entry, and what its closure captured, has been released while
        // this thread was still marked as the writer, so a `deinit` that waits for this
        // container stops with a message instead of hanging.
        sw_uptr_store(lock.checkoutThread, 0)
        // A batch has no size bound (a backlog taken at once): past the millisecond, the
        // rest of it goes to a successor too, with the checkout, once what is owed ran.
        // The clock is read every few entries; once late (which lasts: the clock only
        // moves on), the hint is looked at after every entry, since a successor waits only
        // about a millisecond and bodies may be slow, and the lock taken only when set.
        run &+= 1
        if !pending.pointee.isEmpty,
          lateInBatch
            ? sw_load_relaxed(lock.successorHint) != 0
            : run % HandOffPolicy.entriesPerClockRead == 0 && sw_monotonic_ns() > deadline
        {
          lateInBatch = true
          let chosen = lock.withHandOffLock { () -> Waiter? in
            let chosen = handOff.pointee.midBatch(ran: ran)
            // Cleared only here, with the lock held, as `successor` is read: never while
            // one waits, so a stale hint costs one look under the lock, never a wait.
            sw_store_relaxed(lock.successorHint, handOff.pointee.successor == nil ? 0 : 1)
            return chosen
          }
          if let successor = chosen {
            lock.openGateIfClosed()
            if successor.grant() { return }
            lock.closeGateIfWanted()
            lock.withHandOffLock { handOff.pointee.serveOn(me) }
            deadline = sw_monotonic_ns() &+ HandOffPolicy.servingSlice
            lateInBatch = false
          }
        }
      case .handedOff:
        return
      case .kept:
        // The write kept its proxy. Its closure is gone now, and with it maybe the
        // proxy's last holder: if that ended the checkout on this thread, it was handed
        // back (see `finishCheckoutNow`), and the run goes on.
        let (goesOn, dismissed, drains) = lock.withHandOffLock {
          () -> (Bool, Waiter?, [TaskWaiter]) in
          let serving = handOff.pointee.server == me
          let (goesOn, dismissed) = handOff.pointee.proxyKept(by: me)
          // Stopped while still the server: this thread holds the run until the lock is
          // dropped, and the writer is in the kept proxy's hands.
          return (goesOn, dismissed, serving && !goesOn ? takeLeadingDrains() : [])
        }
        dismissed?.grant(checkout: false)
        resume(drains)
        guard goesOn else { return }
        // Handed back, and the closure is gone: drop the mark `finishCheckoutNow` set for
        // its release, as after any entry. Left set, it outlived the run, and a later
        // `withWriter` on this thread, finding the writer busy, took itself for its holder.
        sw_uptr_store(lock.checkoutThread, 0)
        lock.closeGateIfWanted()  // released when the proxy was kept; see `lend`
      }
    }
  }

  /// Under the hand-off's lock, by the checkout's holder, as the queue stops with the
  /// writer in a proxy's hands (a queued body kept it, or a `checkout()` claimed it): takes
  /// out the entries at the front of the queue that are no writes to run, `drained()`
  /// markers and waiters that ran early, every write ahead of them having run, and
  /// returns the drains, to be resumed once the lock is dropped. `drained()` waits for
  /// queued writes, never for a proxy's release: otherwise a drain queued before a body
  /// that kept its proxy would wait for that proxy, and forever in the task it was handed
  /// to; and one queued behind a `withWriter` that took the offer back and ran in the
  /// proxy's place would wait for it all the same.
  @usableFromInline func takeLeadingDrains() -> [TaskWaiter] {
    var drains: [TaskWaiter] = []
    while let entry = pending.pointee.first, !isWrite(entry) {
      _ = pending.pointee.popFirst()
      ran &+= 1
      skip(entry, into: &drains)
    }
    guard pending.pointee.isEmpty else { return drains }
    while let entry = handOff.pointee.inbox.first, !isWrite(entry) {
      _ = handOff.pointee.inbox.popFirst()
      handOff.pointee.taken &+= 1
      ran &+= 1
      skip(entry, into: &drains)
    }
    return drains
  }

  /// `takeLeadingDrains`' handling of an entry that is no write: a drain to resume, or a
  /// waiter that ran early, skipped as `runNext` skips it.
  @usableFromInline func skip(_ entry: Pending, into drains: inout [TaskWaiter]) {
    if case .drain(let waiter) = entry {
      drains.append(waiter)
    } else {
      TransitionRow.entryWaiterRanEarly.reached()
    }
  }

  /// Whether a queued entry is a write that starts when it runs: not a `drained()` marker,
  /// nor a waiter that ran early (`takeBackStaleOffer`).
  @inlinable @inline(__always) func isWrite(_ entry: Pending) -> Bool {
    switch entry {
    case .drain: return false
    case .waiter(let waiter): return waiter.current != .withdrawn
    default: return true
    }
  }

  /// Resumes the `drained()` tasks `takeLeadingDrains` took out, with no lock held.
  @usableFromInline func resume(_ drains: [TaskWaiter]) {
    for waiter in drains where waiter.apply(.reach) {
      waiter.continuation.take().unsafelyUnwrapped.resume(returning: true)
    }
  }

  /// Whether the oldest pending entry is a write that starts when it runs: not a
  /// `drained()` marker, nor a waiter that ran early. Looked at in place, not copied.
  @inlinable @inline(__always) func nextEntryIsAWrite() -> Bool {
    switch pending.pointee.storage[pending.pointee.head] {
    case .drain?: return false
    case .waiter(let waiter)?: return waiter.current != .withdrawn
    default: return true
    }
  }

  /// What running one queued entry did with the checkout.
  @usableFromInline
  enum Served { case ran, kept, handedOff }

  /// Runs the oldest pending entry. The entry is released before this returns.
  @inlinable
  func runNext(_ me: UInt, insideRead: Bool) -> Served {
    ran &+= 1
    sw_uptr_store(lock.checkoutThread, scoped(me))
    // Counted as started (`queuedWrites`) before it runs if it is a write: not a
    // `drained()` marker, nor a waiter that ran early. Counted first and taken back, the
    // count read one low in between, and a bounded backlog admitted a write past its bound.
    if nextEntryIsAWrite() { startedWrite() }
    switch pending.pointee.popFirst().unsafelyUnwrapped {
    case .write(let body):
      TransitionRow.entryWrite.reached()
      if insideRead { lock.stopServingInsideARead() }
      return lend(body, inPlace: false) ? .ran : .kept
    case .asyncWrite(let waiter, let job):
      runAsyncWrite(waiter, job, insideRead: insideRead)
      return .ran
    case .checkout(let waiter):
      guard offerCheckout(to: waiter, stoppingServing: me) else {
        TransitionRow.entryCancelledSkipped.reached()
        return .ran
      }
      TransitionRow.entryCheckout.reached()
      return .handedOff
    case .drain(let waiter):
      if waiter.apply(.reach) {
        waiter.continuation.take().unsafelyUnwrapped.resume(returning: true)
      }
      return .ran
    case .waiter(let waiter):
      if waiter.current == .withdrawn {
        // It took an offer back and ran in the task's place (`takeBackStaleOffer`): its
        // write started then, so this entry is not a write any more.
        TransitionRow.entryWaiterRanEarly.reached()
        return .ran
      }
      TransitionRow.entryWaiter.reached()
      // `queued` stays set while entries remain, so that the waiter's end serves them.
      let dismissed = lock.withHandOffLock { handOff.pointee.stopServing(me) }
      dismissed?.grant(checkout: false)
      // Not this thread's any more: it may call withWriter again before the waiter runs.
      sw_uptr_store(lock.checkoutThread, 0)
      lock.openGateIfClosed()
      waiter.grant()
      return .handedOff
    }
  }
}

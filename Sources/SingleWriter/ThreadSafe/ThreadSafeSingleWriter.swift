import SingleWriterAtomics

/// A ``SingleWriter`` that any thread, queue or task can use.
///
/// The same rules hold: any code can ``read``, only one ``ThreadSafeWriterProxy`` is
/// alive at a time, and ``writeNext(_:)`` queues writes FIFO, never losing one. On
/// top, ``withWriter(_:)`` waits for the writer, and ``tryWrite(_:)`` writes only if
/// the writer is free; neither allocates.
///
/// ```swift
/// let hits = ThreadSafeSingleWriter(value: 0)
/// DispatchQueue.concurrentPerform(iterations: 1_000) { _ in
///   if hits.tryWrite({ $0 += 1 }) == nil {  // writer busy?
///     hits.writeNext { $0.write += 1 }      // then queue it
///   }
/// }
/// // hits.read == 1_000
/// ```
///
/// A checkout is a flag, taken with one compare-and-exchange, and held as long as the
/// proxy lives. The value itself has a short lock of its own, in the same atomic word,
/// held only for the duration of each read or write access, so ``read`` never waits
/// for a checkout to end, always sees whole writes, and sees writes through a held
/// proxy at once. That holds inside a `writeNext` body too: the body holds the
/// checkout, and each access through its proxy holds the value only for that access.
///
/// Misuse that would hang stops the program with a message instead: ``withWriter(_:)``
/// from inside a write's closure on the same thread, or ``read`` from inside
/// ``tryWrite(_:)``'s closure.
public final class ThreadSafeSingleWriter<Value: ~Copyable> {
  /// The state word, the hand-off's lock and the owner ids.
  @usableFromInline let lock: WriterLock
  /// The value, at a stable address so proxies reach it without touching `self`. Read
  /// only with a reader slot, written only with `writing`.
  @usableFromInline let storage: UnsafeMutablePointer<Value>
  /// Ends a checkout that has queued writes, observers or parked threads to serve. Built
  /// in the inlinable `init`, so it is specialized for `Value` in the caller's module
  /// instead of running as unspecialized generic code from a proxy's `deinit`.
  @usableFromInline let finishCheckout: (ThreadSafeSingleWriter<Value>) -> Void
  /// Touched only by the checkout holder; acquire/release on the state word, or a
  /// waiter's grant, orders it from one holder to the next.
  @usableFromInline @exclusivity(unchecked) var spare: ThreadSafeWriterProxy<Value>?
  /// `refCountWordIsReadable`, copied: a lazy global costs a call per read.
  @usableFromInline let refCountWordIsCached = refCountWordIsReadable
  /// Writes taken from the hand-off's inbox and not run yet, oldest first. Only the checkout
  /// holder touches it, ordered like `spare`.
  /// Behind a pointer, as in ``SingleWriter``: queued bodies may enqueue while the loop
  /// that runs them is on the stack, so the optimizer must reload it after every call.
  @usableFromInline let pending: UnsafeMutablePointer<FIFO<Pending>>
  /// Entries popped from the queue to run, by every server: the position of the one
  /// running, against what a server owes (`HandOff.owedThrough`). Touched only by the
  /// checkout's holder, ordered like `spare`; not in `HandOff`, whose other fields only
  /// its lock guards.
  @usableFromInline @exclusivity(unchecked) var ran: UInt64 = 0
  /// Where observers learn of changes; see Observation/ChangeHub.swift.
  @usableFromInline let hub = ChangeHub()

  /// A write waiting for the checkout.
  @usableFromInline
  enum Pending {
    /// A `writeNext` body, lent the spare proxy when its turn comes.
    case write(@Sendable (ThreadSafeWriterProxy<Value>) -> Void)
    /// A `withWriter` that has waited long: handed the checkout, and it serves after.
    case waiter(Waiter)
    /// An `await write`: the server runs its body for it, then resumes the task. The task
    /// never owns the checkout, so no thread ever waits for a suspended task's turn.
    case asyncWrite(TaskWaiter, (ThreadSafeSingleWriter<Value>) -> Void)
    /// A `checkout()`: woken when its turn comes, to take the writer if it can.
    case checkout(TaskWaiter)
  }

  /// The writes that found the checkout busy and the thread serving them, behind the
  /// hand-off's lock (see HandOff.swift).
  @usableFromInline let handOff: UnsafeMutablePointer<HandOff<Pending>>

  /// Wraps `value` so that only one place at a time, on any thread, can write it.
  ///
  /// The container is `Sendable` whatever `Value` is, as a `Mutex` is: `value` is sent
  /// into it, and closure writes hand it to their body as `inout sending`. What reads
  /// or writes it from several threads at once (``read``, proxies, ``writeNext(_:)``,
  /// `changes()`) needs `Value: Sendable`.
  @inlinable
  public init(value: consuming sending Value) {
    lock = WriterLock()
    handOff = .allocateOnOwnCacheLines(HandOff())
    storage = .allocateOnOwnCacheLines(value)
    pending = .allocateOnOwnCacheLines(FIFO())
    finishCheckout = { $0.finishCheckoutNow() }
  }

  deinit {
    // Nothing can be queued now: a queued write or waiter would hold the checkout's
    // holder back, and every holder keeps this container alive.
    handOff.deinitialize(count: 1)
    handOff.deallocate()
    pending.deinitialize(count: 1)
    pending.deallocate()
    spare = nil
    hub.close()  // ends every `changes()` consumer, after this value (see `subscribe`)
    storage.deinitialize(count: 1)
    storage.deallocate()
    lock.deallocate()
  }

  // MARK: Closure writes

  /// Mutates the value in place if the writer is free, and returns `nil` if it is not.
  ///
  /// ```swift
  /// state.tryWrite { $0.count += 1 }
  /// ```
  ///
  /// Reading this container from inside `body` on the same thread stops the program:
  /// use the `inout` value instead.
  @inlinable
  @discardableResult
  public func tryWrite<R: ~Copyable, E: Error>(
    _ body: (inout sending Value) throws(E) -> sending R
  ) throws(E) -> sending R? {
    guard lock.tryBeginClosureWrite() else {
      // Refused, but inside this container's `read { }` it would have waited forever had
      // the writer been free: stop either way, so the misuse never depends on timing.
      lock.stopIfReading()
      return nil
    }
    return try runClosureWrite(body)
  }

  /// Waits for the writer, then mutates the value in place.
  ///
  /// ```swift
  /// let total = state.withWriter { value -> Int in
  ///   value.count += 1
  ///   return value.count
  /// }
  /// ```
  ///
  /// Blocks the calling thread while it waits: first it spins, for at most a few
  /// microseconds and less when spinning has not been paying off, since most checkouts
  /// last nanoseconds, then it sleeps until a checkout ends. A running thread
  /// may take a free writer ahead of a sleeping one, which keeps the writer busy instead
  /// of waiting for a thread to wake; a caller that has waited more than about a
  /// millisecond joins the queue and is handed the writer in turn, so none starves.
  /// On Apple platforms, while it sleeps behind a closure write (this one, `tryWrite`,
  /// `await write` or a queued body) running on another thread, it boosts that thread to
  /// its own priority, as `Mutex` does; see "How the hand-off works" for when, and why a
  /// proxy's holder is not boosted.
  ///
  /// Called from inside a write's closure on the same thread, from inside a write access
  /// through a proxy (a mutating method called through `proxy.write`), or from inside
  /// this container's `read { }`, it could never return, so it stops the program with a
  /// message. Called while this thread or task holds a proxy, it waits for that proxy's
  /// release, which is right if the proxy went elsewhere; if it did not, a warning on
  /// standard error after a second names the deadlock.
  @inlinable
  public func withWriter<R: ~Copyable, E: Error>(
    _ body: (inout sending Value) throws(E) -> sending R
  ) throws(E) -> sending R {
    if !lock.tryBeginClosureWrite() { waitForClosureWrite() }
    return try runClosureWrite(body)
  }

  /// Runs a closure write's `body` on the value, with the checkout and `writing` already
  /// taken, then ends both: the one place every closure write (`tryWrite`, `withWriter`,
  /// the async writes when free) ends.
  @inlinable @inline(__always)
  func runClosureWrite<R: ~Copyable, E: Error>(
    _ body: (inout sending Value) throws(E) -> sending R
  ) throws(E) -> sending R {
    defer {
      if !lock.tryEndClosureWrite() { finishClosureWrite() }
      _fixLifetime(self)  // `body` writes through `storage`, which the container frees
    }
    return try body(&storage.pointee)
  }

  // MARK: Checkout

  /// How many writes wait, leaving out cancelled tasks; for tests and diagnostics. Only
  /// exact while no thread enqueues or runs the queue: it walks the holder's batch, which
  /// only the holder may touch.
  var pendingCount: Int {
    func counts(_ entry: Pending) -> Bool {
      switch entry {
      case .write, .waiter: return true
      case .asyncWrite(let waiter, _), .checkout(let waiter):
        return sw_load_acquire(waiter.state) != TaskWaiter.cancelled
      }
    }
    var count = 0
    pending.pointee.forEach { if counts($0) { count += 1 } }
    lock.withHandOffLock { handOff.pointee.inbox.forEach { if counts($0) { count += 1 } } }
    return count
  }

  /// Queues `entry` behind the checkout, at the back, or at the front for a task whose
  /// turn came and that lost the writer to a running thread. If the checkout turned out
  /// to be free, takes it and serves the queue here, so nothing is ever stranded.
  ///
  /// Under the hand-off's lock, only the first entry since the queue was last empty
  /// touches the state word: it sets `queued`, taking a free checkout with it. The holder
  /// clears `queued` under the same lock, only with the inbox empty, so an entry is either
  /// seen by the holder's next batch or finds the checkout free and serves itself.
  ///
  /// A task's entry (`await write`, `checkout()`) is never chosen to take over serving:
  /// its thread runs the task's enqueue, and must not serve others' writes before the task
  /// has suspended. If it finds the checkout free, its own entry is the first to run.
  @inlinable
  func enqueue(_ entry: Pending, atFront: Bool = false) {
    let me = sw_current_thread()
    // Nor is a thread inside this container's `read { }`: the bodies it would serve write.
    var mayServe: Bool
    switch entry {
    case .write, .waiter: mayServe = true
    case .asyncWrite, .checkout: mayServe = false
    }
    if mayServe, sw_reading_depth() != 0, sw_reading_contains(lock.sync) { mayServe = false }
    // Queued by the checkout's holder (a proxy taken on this thread, or a closure write or
    // served body running here): this thread owes it when it ends the checkout.
    let holding = sw_uptr_load(lock.checkoutThread) & ~1 == me
    let (arrival, tookOver) = lock.withHandOffLock {
      let arrival = handOff.pointee.arrive(
        entry, from: me, atFront: atFront, mayServe: mayServe, holding: holding)
      let tookOver = arrival.setQueued && lock.markQueued()
      if tookOver, case .checkout = entry {
        handOff.pointee.takeOwnEntry()
        ran &+= 1  // this thread holds the checkout now
      }
      return (arrival, tookOver)
    }
    // Thousands of writes wait while another thread runs them: writers outpace it. Give
    // up the rest of this time slice (the call still returns without waiting), so that
    // on a machine with fewer cores than writers that thread gets to run.
    if arrival.yield { sw_yield_thread() }
    if tookOver {
      // A `checkout()` that took the free checkout holds it now: handed over directly.
      if case .checkout(let waiter) = entry {
        sw_uptr_store(lock.checkoutThread, 0)
        if waiter.handOverUnclaimed() { return }
      }
      return finishCheckout(self)
    }
    if let successor = arrival.successor { takeOverServing(successor) }
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
    let outcome = successor.waitOrWithdraw(after: 1_000_000)
    if outcome == Waiter.withdrawn { TransitionRow.handOffSuccessorWithdraws.reached() }
    guard outcome == Waiter.checkout else { return }
    TransitionRow.handOffSuccessorServes.reached()
    finishCheckout(self)
  }

  /// Ends a closure write that `tryEndClosureWrite` could not end on its own.
  ///
  /// When the only reason was observers, one compare-and-exchange ends the write and the
  /// checkout and clears `dirty`, and the hub is told afterwards: its versions are
  /// counters and consumers read the newest value, so publishing after the release
  /// loses nothing, and an observer that writes back finds the writer free.
  @inlinable
  func finishClosureWrite() {
    if let (_, dirty) = lock.update({ $0.endObservedClosureWrite() }) {
      if dirty { hub.publish() }
      return
    }
    lock.releaseWriting()
    finishCheckoutNow()
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
  @inlinable
  func finishCheckoutNow() {
    sw_uptr_store(lock.checkoutThread, 0)
    let me = sw_current_thread()
    switch lock.withHandOffLock({ handOff.pointee.checkoutEnded(on: me) }) {
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
    // This thread runs the writes it queued while it held the checkout (and what is ahead
    // of them), as documented. Everything else is its job for about a millisecond; past
    // that, the next thread to queue one takes over (see `HandOff`).
    var deadline = sw_monotonic_ns() &+ 1_000_000
    var batches = 0
    var run = 0
    var lateInBatch = false
    // Serving runs on this one thread: it holds the gate, so that a thread sleeping for the
    // writer boosts it, and releases it before the checkout passes to any other thread.
    lock.closeGateIfWanted()
    while true {
      if lock.word.isObserved {
        // Observers run here, holding the checkout: waiting for it from one stops the
        // program with a message instead of hanging.
        sw_uptr_store(lock.checkoutThread, scoped(me))
        publishIfDirty()
        sw_uptr_store(lock.checkoutThread, 0)
      }
      if pending.pointee.isEmpty {
        batches &+= 1
        let late = batches > 1 && sw_monotonic_ns() > deadline
        let (next, wake) = lock.withHandOffLock {
          let next = handOff.pointee.nextBatch(into: &pending.pointee, late: late)
          guard case .release = next else { return (next, false) }
          assert(sw_uptr_load(lock.checkoutThread) != scoped(me), "a closure's mark outlived it")
          lock.openGateIfClosed()
          return (next, lock.release())
        }
        switch next {
        case .run: break
        case .release:
          if wake { lock.unpark() }
          return
        case .handOver(let successor):
          lock.openGateIfClosed()
          if successor.grant() { return }
          // It withdrew: it waited long enough, perhaps for a body of this run that waits
          // for it. Serve on, and ask again only after another millisecond.
          lock.closeGateIfWanted()
          lock.withHandOffLock { handOff.pointee.serveOn(me) }
          deadline = sw_monotonic_ns() &+ 1_000_000
          batches = 0
          continue
        }
      }
      switch runNext(me) {
      case .ran:
        // Only now: the entry, and what its closure captured, has been released while
        // this thread was still marked as the writer, so a `deinit` that waits for this
        // container stops with a message instead of hanging.
        sw_uptr_store(lock.checkoutThread, 0)
        // A batch has no size bound (a backlog taken at once): past the millisecond, the
        // rest of it goes to a successor too, with the checkout, once what is owed ran.
        // The clock is read every 64 entries; once late, after every entry, since a
        // successor waits only about a millisecond and bodies may be slow.
        run &+= 1
        if !pending.pointee.isEmpty, lateInBatch || run & 63 == 0,
          sw_monotonic_ns() > deadline
        {
          lateInBatch = true
          if let successor = lock.withHandOffLock({ handOff.pointee.midBatch(ran: ran) }) {
            lock.openGateIfClosed()
            if successor.grant() { return }
            lock.closeGateIfWanted()
            lock.withHandOffLock { handOff.pointee.serveOn(me) }
            deadline = sw_monotonic_ns() &+ 1_000_000
            lateInBatch = false
          }
        }
      case .handedOff:
        return
      case .kept:
        // The write kept its proxy. Its closure is gone now, and with it maybe the
        // proxy's last holder: if that ended the checkout on this thread, it was handed
        // back (see `finishCheckoutNow`), and the run goes on.
        let (goesOn, dismissed) = lock.withHandOffLock { handOff.pointee.proxyKept(by: me) }
        dismissed?.grant(checkout: false)
        guard goesOn else { return }
        // Handed back, and the closure is gone: drop the mark `finishCheckoutNow` set for
        // its release, as after any entry. Left set, it outlived the run, and a later
        // `withWriter` on this thread, finding the writer busy, took itself for its holder.
        sw_uptr_store(lock.checkoutThread, 0)
        lock.closeGateIfWanted()  // released when the proxy was kept; see `lend`
      }
    }
  }

  /// What running one queued entry did with the checkout.
  @usableFromInline
  enum Served { case ran, kept, handedOff }

  /// Runs the oldest pending entry. The entry is released before this returns.
  @inlinable
  func runNext(_ me: UInt) -> Served {
    ran &+= 1
    sw_uptr_store(lock.checkoutThread, scoped(me))
    switch pending.pointee.popFirst().unsafelyUnwrapped {
    case .write(let body):
      TransitionRow.entryWrite.reached()
      return lend(body, inPlace: false) ? .ran : .kept
    case .asyncWrite(let waiter, let job):
      // A cancelled task has left already: skip it. Otherwise its body runs here, as a
      // closure write of this thread's, and the task is resumed once the write is whole.
      guard waiter.transition(from: TaskWaiter.waiting, to: TaskWaiter.granted) else {
        TransitionRow.entryCancelledSkipped.reached()
        return .ran
      }
      TransitionRow.entryAsyncWrite.reached()
      lock.acquireWriting()
      job(self)
      lock.endWriting()
      // Released here, acquired by the task: orders the body's accesses before the task's.
      sw_store_release(waiter.state, TaskWaiter.done)
      waiter.continuation.take().unsafelyUnwrapped.resume(returning: true)
      return .ran
    case .checkout(let waiter):
      // Woken, not handed the writer while it sleeps: a task that is not running must not
      // hold up the threads that wait for the writer. This thread waits about a
      // millisecond for it to run and claim the writer, which it then hands over; after
      // that the task competes for the writer, at the front of the queue.
      guard waiter.transition(from: TaskWaiter.waiting, to: TaskWaiter.granted) else {
        TransitionRow.entryCancelledSkipped.reached()
        return .ran
      }
      waiter.continuation.take().unsafelyUnwrapped.resume(returning: true)
      guard waiter.awaitClaim(upTo: 1_000_000) else {
        TransitionRow.entryCheckoutExpired.reached()
        return .ran
      }
      TransitionRow.entryCheckoutClaimed.reached()
      let dismissed = lock.withHandOffLock { handOff.pointee.stopServing(me) }
      dismissed?.grant(checkout: false)
      sw_uptr_store(lock.checkoutThread, 0)
      lock.openGateIfClosed()
      waiter.handOver()
      return .handedOff
    case .waiter(let waiter):
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

  /// Lends the spare proxy to `body`. Returns `true` once the proxy is back, or `false`
  /// if `body` kept it: that proxy now owns the checkout, until ARC releases it.
  ///
  /// A proxy that anything else still references, even weakly, is never lent again: a
  /// reference kept from this closure must not become the live proxy of a later one.
  ///
  /// `inPlace`: the body is the calling thread's own `writeNext`, not one served for
  /// another thread; only then is a kept proxy recorded as this thread's and task's.
  @inlinable
  func lend(_ body: (ThreadSafeWriterProxy<Value>) -> Void, inPlace: Bool) -> Bool {
    if spare == nil { spare = ThreadSafeWriterProxy(lentBy: self) }
    // Guaranteed, not retained: only the checkout holder, this thread, replaces `spare`.
    let generation = lock.openLend()
    Unmanaged.passUnretained(spare.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
      $0.generation = generation  // nobody else can reach the spare here
      body($0)
    }
    if isSoleReference(&spare, wordIsReadable: refCountWordIsCached) {
      // Another thread may have used the proxy and dropped it just now. Its last access
      // ended with a release on the state word; acquire it, so that its accesses are
      // ordered before this proxy's next lend even for tools that do not see ARC's atomics.
      _ = sw_load_acquire(lock.state)
      return true
    }
    // Someone else may use it from now on: hold their accesses while deciding.
    lock.resolveLend(generation)
    var taken = spare.take()
    // The proxy's new role is set before `endLend`, whose release store publishes it to
    // whichever thread frees the proxy.
    if isKnownUniquelyReferenced(&taken) {
      // Only weak or unowned references remain, and one may turn strong on another
      // thread any moment: retire it. Its generation ends, so every access through it
      // stops the program, and it keeps this container alive so that those accesses
      // never touch freed memory.
      taken.unsafelyUnwrapped.retire()
      lock.endLend(generation, kept: false)
      return true
    }
    // Kept, maybe for another thread. Recorded as this thread's, so that a `withWriter`
    // on this thread warns if it waits for it. The gate goes first: once the lend ends, the
    // proxy may end the checkout on any thread, and only this one may release the gate.
    lock.openGateIfClosed()
    if inPlace {
      sw_uptr_store(lock.checkoutThread, sw_current_thread())
      lock.recordHoldingTask()
    } else {
      // Kept by another thread's body: who holds it now is not known here, and a warning
      // that named this thread or task would be false.
      sw_uptr_store(lock.checkoutThread, 0)
    }
    taken.unsafelyUnwrapped.becomeOwner()
    lock.endLend(generation, kept: true)
    return false
  }

  /// The slow half of `withWriter`: spin briefly, then park until a checkout ends, then
  /// after about a millisecond queue up for a direct hand-off; then take `writing`.
  @usableFromInline
  func waitForClosureWrite() {
    let me = sw_current_thread()
    lock.stopIfWaitingForItself(me)
    var parkedSince: UInt64 = 0
    // Spin, looking again after 1, 2, 4, ... pauses, then park. The spin is adaptive:
    // one that ends with the writer raises the budget for the next waiter (up to 127
    // pauses, a few microseconds), one that ends in a park lowers it (down to 3); and
    // nobody spins while another waiter sleeps, as in Rust's futex mutex. A short hold
    // is caught while spinning, with no sleep. Under a stream of writes from several
    // threads, where the thread that just wrote takes the writer again at once, waiters
    // sleep instead, so that thread writes on with the cache line its own rather than
    // the line moving between cores on every write.
    let budget = sw_load_relaxed(lock.spinRounds)
    var wokenOnce = false
    var spins: UInt32 = 0
    var s = lock.word
    while true {
      if !s.isCheckedOut {
        // Having slept, this thread may not be the last sleeper: keep `parked` so that
        // its end wakes the next one.
        let taken =
          parkedSince == 0
          ? lock.update { $0.checkout() } : lock.update { $0.checkoutAfterParking() }
        if taken != nil {
          sw_uptr_store(lock.checkoutThread, scoped(me))
          if parkedSince == 0, spins != 0, budget < WriterLock.maxSpinRounds {
            sw_store_release(lock.spinRounds, budget + 1)
          }
          lock.closeGateIfWanted()
          lock.acquireWriting()
          return
        }
        s = lock.word
        continue
      }
      if spins < budget, !s.hasParked {
        for _ in 0..<(1 << spins) { sw_yield_cpu() }
        spins += 1
        s = lock.word
        continue
      }
      let now = sw_monotonic_ns()
      if parkedSince == 0 {
        parkedSince = now
        if budget > WriterLock.minSpinRounds { sw_store_release(lock.spinRounds, budget - 1) }
      }
      if now &- parkedSince > 1_000_000 { break }
      // A closure write holds the gate: sleep on it rather than on the word, so that the
      // OS lends this thread's priority to the one it waits for. Then look again.
      if lock.sleepOnGate(me) {
        spins = 0
        s = lock.word
        continue
      }
      // Park: read the sequence, then the word afresh, so that a release before the
      // sequence read shows in the word (and the writer is taken instead), and one after
      // it changes the sequence and ends the wait at once. With a stale word that already
      // showed `parked`, a release in between cleared the bit, never bumped the sequence
      // again, and left this thread asleep until its timeout.
      //
      // Only the first sleep asks to be woken (sets `parked`). A thread that was woken and
      // still lost the writer to a running thread is in a stream of writes: it sleeps out
      // the rest of its millisecond unasked for, then queues for a direct hand-off. Its
      // releases then cost the writing thread no wake-up call each; the wait stays bounded
      // by the millisecond.
      let sequence = sw_load_acquire(lock.parkSequence)
      s = WriterWord(raw: sw_load_acquire(lock.state))
      if !s.isCheckedOut { continue }
      if !wokenOnce, !s.hasParked, lock.update({ $0.park() }) == nil {
        s = lock.word
        continue  // freed meanwhile
      }
      _ = sw_wait_for(lock.parkSequence, sequence, 1_000_000 - Int64(now &- parkedSince))
      wokenOnce = true
      spins = 0
      s = lock.word
    }
    // Waited over a millisecond: join the queue, and be handed the checkout in turn.
    let waiter = Waiter()
    enqueue(.waiter(waiter))
    // A checkout this thread or task holds through a proxy may never come back.
    let task = currentTaskID()
    waiter.wait(sleepingOnGateOf: lock) { lock.isHeld(byTask: task, orThread: me) }
    lock.beginClosureWrite()
  }
}

extension ThreadSafeSingleWriter where Value: Sendable {
  /// The current value, including writes made through a proxy that is still held.
  ///
  /// Never waits for a checkout, only for a write access in progress, so it never
  /// sees half a write.
  @inlinable
  public var read: Value {
    defer { _fixLifetime(self) }  // alive until the copy is made; see SingleWriter.read
    // A value with no references to count is copied optimistically and checked against
    // the write sequence: no read-modify-write at all. Others take a reader slot.
    if _isPOD(Value.self) {
      let copy = withUnsafeTemporaryAllocation(of: Value.self, capacity: 1) { buffer in
        let done = sw_seq_try_copy(
          lock.sequence, buffer.baseAddress!, storage, MemoryLayout<Value>.size)
        return done ? buffer.baseAddress!.move() : nil
      }
      if let copy { return copy }
    }
    lock.beginRead()
    defer { lock.endRead() }
    return storage.pointee
  }

  /// A proxy for writing, or `nil` while the writer is out or writes are queued.
  ///
  /// The proxy can be sent to, used on and released on any thread. Releasing it runs
  /// the queued writes on the releasing thread (see ``writeNext(_:)`` for the one
  /// exception). Since it can move, a thread waiting for it in `withWriter` does not
  /// boost its holder's priority; where priority inversion matters, write in a closure.
  ///
  /// ```swift
  /// if let writer = session.writer {
  ///   writer.write.token = newToken
  /// }
  /// ```
  @inlinable
  public var writer: ThreadSafeWriterProxy<Value>? {
    // Always inlined: a proxy made in the caller's own code and released there is
    // allocated on the stack; one returned from a call is not.
    @inline(__always) get {
      guard lock.tryCheckout(as: sw_current_thread()) else { return nil }
      // Whose it is, for the deadlock warnings: a task's proxy is the task's wherever it
      // resumes. Out of line, one runtime call: this path allocates a proxy anyway.
      lock.recordHoldingTask()
      return ThreadSafeWriterProxy(owning: self)
    }
  }

  /// Runs `body` with the writer now if it is free; otherwise queues it to run, in FIFO
  /// order, on whichever thread ends the checkout ahead of it. That thread runs what it
  /// queued while it held the checkout before it returns (unless a waiting `withWriter`
  /// or `checkout()` queued ahead takes the writer first); when other threads keep
  /// queueing for more than about a millisecond, the next of them to call this takes
  /// over serving before it returns, waiting about a millisecond at most for the batch in
  /// progress (past that it returns and the serving thread serves on). So when every call
  /// has returned, every write has run.
  /// It never waits for the writer; with more than 4,096 writes waiting while a thread
  /// runs them, it gives up the rest of its time slice first, so that writers outpacing
  /// that thread leave it the CPU. Since the caller may be chosen to run other threads'
  /// queued bodies, do not call it while holding a lock that a queued body takes.
  ///
  /// `body` may keep the proxy, and the checkout then lasts until that proxy is
  /// released. A `writeNext` from inside `body` goes to the back of the queue. Each
  /// access through the proxy holds the value only for that access, so other threads
  /// can read while `body` runs, and `body` may hand the proxy to another thread.
  ///
  /// ```swift
  /// state.writeNext { $0.write.count += 1 }
  /// ```
  @inlinable
  public func writeNext(_ body: @escaping @Sendable (ThreadSafeWriterProxy<Value>) -> Void) {
    // Writes already wait: go behind them without touching the state word, which the
    // holder is busy with.
    guard sw_load_relaxed(lock.queuedHint) == 0,
      lock.tryCheckout(as: scoped(sw_current_thread()))
    else {
      return enqueue(.write(body))
    }
    if lend(body, inPlace: true) { endLentCheckout() }
  }

}

extension ThreadSafeSingleWriter where Value: Sendable & ~Copyable {
  /// Reads the value in place: `body` borrows it, so nothing is copied out but what it
  /// returns. For one field of a large value, and the only read of a `~Copyable` one.
  ///
  /// ```swift
  /// let price = catalog.read { $0.prices[sku] }
  /// ```
  ///
  /// Like ``read``, it never waits for a checkout, only for a write access in progress,
  /// so it sees whole writes; writes wait for `body` to return, so keep it short. Reading
  /// from inside a closure write on the same thread stops the program, as ``read`` does,
  /// and so does writing this container from inside `body` on the same thread, which
  /// would wait for `body` to return: `withWriter`, `tryWrite`, a proxy's write, or a
  /// `writeNext` that would run at once. That holds inside reads of other containers
  /// nested in `body`, and whoever holds the writer. Write after `body` has returned.
  @inlinable
  public func read<R: ~Copyable, E: Error>(
    _ body: (borrowing Value) throws(E) -> R
  ) throws(E) -> R {
    lock.beginRead()
    sw_reading_push(lock.sync)
    defer {
      sw_reading_pop()
      lock.endRead()
      _fixLifetime(self)  // `body` reads through `storage`, which the container frees
    }
    return try body(storage.pointee)
  }
}

// Sendable whatever `Value` is, as `Mutex` is. Proved by the protocol in `WriterWord` and
// `HandOff`: the value is read only while holding a reader slot and written only while
// holding `writing`, both taken with acquire/release atomics on the state word; queued
// writes pass through the hand-off, under its lock; `spare` and `pending` are touched
// only by the checkout holder, which passes them on through the same atomics, the lock,
// or a waiter's grant. A value that is not `Sendable` is reachable only through closure
// writes, which take it `inout sending` (its region is disconnected from the caller's,
// so it moves between threads whole) and return `sending` results: every member that
// could share it between threads (`read`, proxies, `writeNext`, `changes()`) requires
// `Value: Sendable`.
extension ThreadSafeSingleWriter: @unchecked Sendable where Value: ~Copyable {}

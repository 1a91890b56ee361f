import SingleWriterAtomics

/// The slow half of a ``ThreadSafeSingleWriter``'s protocol: the writes that wait for the
/// checkout and the thread that serves them, as one state machine behind one lock (the
/// word's `hand_off_lock`).
///
/// Its transitions run under the lock and return what the caller must do once the lock
/// is dropped (take the checkout and serve, run a batch, wake a parked thread); no user
/// code and no deallocation of a user's closure ever runs under the lock. The two changes
/// to the state word that must be ordered with the queue, setting `queued` and clearing
/// it with the checkout, happen only under the lock, so an enqueuer and a releasing
/// holder always agree on who serves: the window in which a newcomer could take the
/// checkout between a release and the queue's next entry does not exist.
///
/// Enqueuers append under the lock, held for one append; the holder takes everything
/// at once by swapping buffers and runs the batch with no lock (flat combining), so it
/// takes the lock once per batch, never per write, and in steady state nothing is
/// allocated.
///
/// Serving is a role, handed on rather than given to a helper thread: a server that has
/// served other threads for over a millisecond, and has run what it owes, lets the next
/// thread that queues take over at the end of a batch. That thread has not returned yet,
/// so when every call has returned, every queued write has run.
@usableFromInline
struct HandOff<Entry> {
  /// Writes that found the checkout busy, oldest first, until the holder takes them.
  @usableFromInline var inbox = FIFO<Entry>()
  /// Mirrors the word's `queued` bit, which changes only under this lock: an enqueuer
  /// reads this instead of the word, which lives on the holder's cache line.
  @usableFromInline var queued = false
  /// The thread serving the queue, or 0.
  @usableFromInline var server: UInt = 0
  /// A proxy holds the checkout, claimed by a `checkout()` at a queued turn or kept by a
  /// `writeNext` body, and nothing queued has run since: `queued` may still be set with
  /// nothing queued, and `drained()` must not wait for that proxy. Set only with `queued`,
  /// so that the checkout's end takes the slow path, `checkoutEnded`, which clears it.
  @usableFromInline var heldByProxy = false
  /// A checkout ended inside the server's own run (a proxy kept by a queued write, then
  /// released there) and was handed back to that run instead of starting another.
  @usableFromInline var handedBack = false
  /// How many entries have arrived, and how many servers have taken into their batches,
  /// since the container was made.
  @usableFromInline var arrived: UInt64 = 0
  @usableFromInline var taken: UInt64 = 0
  /// The server owes every entry up to this one: the writes the checkout's holder queued
  /// while it held it, with whatever queued ahead of them, when the holder ends it. It hands the queue on only
  /// once they have run, so that a release returns only after the writes it queued. What
  /// those writes queue in turn, and other threads' writes, it runs on borrowed time: a
  /// debt that grew with what bodies queue could never be paid while other threads keep
  /// queueing ahead of it. A thread that queued nothing while it held the checkout (a
  /// `withWriter`, a successor) owes nothing. Entries are counted by position in the
  /// order the servers run them.
  @usableFromInline var owedThrough: UInt64 = 0
  /// The position of the last write the checkout's holder queued while it held it (a
  /// task's from any thread): what the holder owes if it ends the checkout itself.
  @usableFromInline var holderOwes: UInt64 = 0
  /// The server has served other threads past its time: the next thread to queue from
  /// elsewhere becomes its successor.
  @usableFromInline var successorWanted = false
  /// The thread that takes over serving, blocked until the server's batch ends.
  @usableFromInline var successor: Waiter?
  /// A `checkout()` handed the checkout while its task sleeps, until the task claims it
  /// or a blocked `withWriter` takes it back; and when it was offered.
  @usableFromInline var offer: TaskWaiter?
  @usableFromInline var offeredAt: UInt64 = 0

  @inlinable init() {}

  /// What an enqueuer does after its append.
  @usableFromInline
  struct Arrival {
    /// `queued` was clear: set it in the word, and serve if the checkout was free.
    @usableFromInline var setQueued: Bool
    /// Thousands wait while another thread serves: give it the CPU.
    @usableFromInline var yield: Bool
    /// This thread was chosen to take over serving: wait on it.
    @usableFromInline var successor: Waiter?

    @inlinable init(setQueued: Bool, yield: Bool, successor: Waiter?) {
      self.setQueued = setQueued
      self.yield = yield
      self.successor = successor
    }
  }

  /// `thread` queues `entry` at the back. Only a thread that waits for the call's return
  /// (`mayServe`: `writeNext`, `withWriter`) may be chosen to take over serving; a task's
  /// entry never is, since its thread must not serve before it suspends. `holding`:
  /// `thread` holds the checkout now, so the write is its own debt; the caller asks only
  /// while nobody serves (see `ThreadSafeSingleWriter.arrive`).
  @inlinable mutating func arrive(
    _ entry: Entry, from thread: UInt, mayServe: Bool = true, holding: Bool = false
  ) -> Arrival {
    inbox.append(entry)
    arrived &+= 1
    var chosen: Waiter?
    // The rows of `arrive` overlap: one from the holder with `queued` clear does both.
    TransitionRow.handOffArriveSettingQueued.reached(if: !queued)
    if holding, thread != server {
      TransitionRow.handOffArriveFromTheHolder.reached()
      holderOwes = taken &+ UInt64(inbox.count)
    }
    // A nested write from the server's own thread is served on borrowed time, like any
    // other thread's, and that thread is never its own successor.
    if thread != server, mayServe, successorWanted, successor == nil {
      TransitionRow.handOffArriveAsSuccessor.reached()
      successorWanted = false
      chosen = Waiter()
      successor = chosen
    }
    TransitionRow.handOffArriveBehind.reached(
      if: queued && (!holding || thread == server) && chosen == nil)
    let yield =
      chosen == nil && inbox.count > HandOffPolicy.yieldingBacklog && server != 0
      && server != thread
    defer { queued = true }
    return Arrival(setQueued: !queued, yield: yield, successor: chosen)
  }

  /// A `checkout()` or `writeNext` queued and found the checkout free, so took it
  /// (`Arrival`'s `setQueued`): its entry, first in the inbox, is taken out, to be offered
  /// to the task or run in place.
  @inlinable mutating func takeOwnEntry() {
    TransitionRow.handOffArriveCheckoutTakesTheWriter.reached()
    _ = inbox.popFirst()
    taken &+= 1
  }

  /// What a checkout's end does with the hand-off.
  @usableFromInline
  enum CheckoutEnd {
    /// The checkout ended inside this thread's own queue run, which goes on.
    case handedBack
    /// This thread now serves the queue.
    case serve
  }

  /// A checkout ends on `thread` and must be served; `byHolder`: ended by its holder, who
  /// owes what it queued.
  @inlinable mutating func checkoutEnded(on thread: UInt, byHolder: Bool) -> CheckoutEnd {
    heldByProxy = false
    if server == thread {
      assert(!handedBack, "a checkout handed back twice")
      TransitionRow.handOffCheckoutEndedHandedBack.reached()
      handedBack = true
      return .handedBack
    }
    TransitionRow.handOffCheckoutEndedServe.reached()
    server = thread
    owedThrough = byHolder ? holderOwes : 0
    holderOwes = 0
    return .serve
  }

  /// The successor withdrew before the hand-over: `thread` serves on, late as it was.
  @inlinable mutating func serveOn(_ thread: UInt) {
    TransitionRow.handOffServeOn.reached()
    server = thread
  }

  /// What the server does when its batch is done.
  @usableFromInline
  enum Next {
    /// `pending` holds the next batch: run it.
    case run
    /// The queue is empty: free the checkout (in the word, under the lock).
    case release
    /// Pass the checkout, and the queue with it, to the successor, and return.
    case handOver(Waiter)
  }

  /// The server's batch is done: takes the next one into `pending`, or frees the checkout,
  /// or passes it to a successor. `late`: this server began serving over a millisecond ago.
  @inlinable mutating func nextBatch(into pending: inout FIFO<Entry>, late: Bool) -> Next {
    assert(pending.isEmpty, "a batch taken over another")
    let paid = taken >= owedThrough
    if let next = successor, paid || inbox.isEmpty {
      TransitionRow.handOffNextBatchHandOver.reached()
      successor = nil
      server = 0
      return .handOver(next)
    }
    if inbox.isEmpty {
      TransitionRow.handOffNextBatchRelease.reached()
      assert(!heldByProxy, "a proxy's mark outlived its checkout")
      queued = false
      server = 0
      successorWanted = false
      return .release
    }
    if late, paid {
      // Serving other threads on borrowed time: small batches, so that a successor
      // chosen by the next arrival takes over within a few writes.
      TransitionRow.handOffNextBatchLate.reached()
      if successor == nil { successorWanted = true }
      for _ in 0..<HandOffPolicy.lateBatch {
        guard let entry = inbox.popFirst() else { break }
        pending.append(entry)
        taken &+= 1
      }
      return .run
    }
    TransitionRow.handOffNextBatchWholeInbox.reached()
    swap(&pending, &inbox)
    taken &+= UInt64(pending.count)
    return .run
  }

  /// Whether `drained()` may return at once: no write waits, and the checkout is held by
  /// a proxy (see `heldByProxy`), not by a write that is running. The counts are those of
  /// `queuedWrites`; only a server changes `startedWrites`, and nobody serves then. The
  /// inbox may still hold entries that are no writes: a waiter that took an offer back
  /// and ran early, a `drained()` marker.
  @inlinable func drainsAtOnce(arrivedWrites: UInt, startedWrites: UInt) -> Bool {
    assert(!heldByProxy || queued, "a proxy's mark without queued")
    return heldByProxy && server == 0 && arrivedWrites == startedWrites
  }

  /// The server is past its millisecond in the middle of a batch: returns the successor
  /// to pass the checkout and the rest of the batch to, if one waits and everything the
  /// server owes has run; otherwise asks the next thread that queues to become one.
  /// `ran`: the entries the servers have popped to run, the last one included.
  @inlinable mutating func midBatch(ran: UInt64) -> Waiter? {
    assert(ran <= taken, "more entries ran than were taken from the queue")
    if let next = successor, ran >= owedThrough {
      TransitionRow.handOffMidBatchHandOver.reached()
      successor = nil
      server = 0
      return next
    }
    TransitionRow.handOffMidBatchRunOn.reached()
    if successor == nil { successorWanted = true }
    return nil
  }

  /// The server stops without freeing the checkout: a queued write kept its proxy, or a
  /// waiter was handed the checkout. Whoever ends that checkout serves next, so a chosen
  /// successor is let go (returned, to be dismissed).
  @inlinable mutating func stopServing(_ thread: UInt) -> Waiter? {
    TransitionRow.handOffStopServing.reached()
    TransitionRow.handOffStopServingDismissesTheSuccessor.reached(if: successor != nil)
    if server == thread { server = 0 }
    successorWanted = false
    defer { successor = nil }
    return successor
  }

  /// After a queued write kept its proxy, and that write's closure is gone: `true` if the
  /// proxy's release handed the checkout back already, and the run goes on; otherwise
  /// the server stops (see `stopServing`). If the proxy's release happened on another
  /// thread, that thread serves now: this one stops and touches nothing of its run.
  @inlinable mutating func proxyKept(by thread: UInt) -> (goesOn: Bool, dismissed: Waiter?) {
    guard server == thread else {
      TransitionRow.handOffProxyKeptElsewhere.reached()
      return (false, nil)
    }
    if handedBack {
      TransitionRow.handOffProxyKeptHandedBack.reached()
      handedBack = false
      return (true, nil)
    }
    return (false, stopServing(thread))
  }

  // MARK: Offers to `checkout()`

  /// Offers the checkout, which the caller holds, to `task`'s `checkout()`: the state it
  /// left (`waiting`: resume the task; `expired`: the task has not waited again since its
  /// last offer was taken back, and claims this one when it runs), or `nil` if the task
  /// was cancelled first.
  @inlinable mutating func offer(to task: TaskWaiter, at now: UInt64) -> TaskWaiterState? {
    assert(offer == nil, "two offers at once")
    guard let left = task.state.apply(.offer, as: TaskWaiterState.self) else { return nil }
    offer = task
    offeredAt = now
    return left
  }

  /// The woken task claims what it was offered: `false` if it was taken back meanwhile.
  /// `asProxy`: a `checkout()`, whose proxy never holds a drain up (`heldByProxy`); an
  /// async transaction is a write that has run only once it has committed.
  @inlinable mutating func claim(_ task: TaskWaiter, asProxy: Bool) -> Bool {
    guard offer === task else { return false }
    offer = nil
    heldByProxy = asProxy
    let claimed = task.apply(.claim)
    assert(claimed, "an offer held by a task that is not offered it")
    return true
  }

  /// A thread blocked in `withWriter`, whose entry is `mine`: takes the checkout back from
  /// an offer its task has left unclaimed for `window` nanoseconds, and withdraws its own
  /// entry, since it runs now, in the task's place. Returns the task, whose entry the
  /// caller puts back at the front, or `nil`.
  @inlinable mutating func takeBack(
    unclaimedFor window: UInt64, at now: UInt64, for mine: Waiter
  ) -> TaskWaiter? {
    guard let task = offer, now &- offeredAt >= window else { return nil }
    // Nobody serves while the offer holds the checkout, so nobody can grant `mine`.
    guard mine.flag.apply(.withdraw, as: WaiterState.self) != nil else { return nil }
    offer = nil
    let expired = task.apply(.expire)
    assert(expired, "an offer held by a task that is not offered it")
    return task
  }
}

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
@usableFromInline
struct HandOff<Entry> {
  /// Writes that found the checkout busy, oldest first, until the holder takes them.
  @usableFromInline var inbox = FIFO<Entry>()
  /// Mirrors the word's `queued` bit, which changes only under this lock: an enqueuer
  /// reads this instead of the word, which lives on the holder's cache line.
  @usableFromInline var queued = false
  /// The thread serving the queue, or 0.
  @usableFromInline var server: UInt = 0
  /// A checkout ended inside the server's own run (a proxy kept by a queued write, then
  /// released there) and was handed back to that run instead of starting another.
  @usableFromInline var handedBack = false
  /// A thread other than the server queued since the last batch: only then may the
  /// server pass the queue to a helper thread.
  @usableFromInline var foreignArrivals = false

  @inlinable init() {}

  /// What an enqueuer does after its append.
  @usableFromInline
  struct Arrival {
    /// `queued` was clear: set it in the word, and serve if the checkout was free.
    @usableFromInline var setQueued: Bool
    /// Thousands wait while another thread serves: give it the CPU.
    @usableFromInline var yield: Bool

    @inlinable init(setQueued: Bool, yield: Bool) {
      self.setQueued = setQueued
      self.yield = yield
    }
  }

  /// `thread` queues `entry`.
  @inlinable mutating func arrive(_ entry: Entry, from thread: UInt) -> Arrival {
    inbox.append(entry)
    if server != thread { foreignArrivals = true }
    let yield = inbox.count > 4_096 && server != 0 && server != thread
    guard !queued else { return Arrival(setQueued: false, yield: yield) }
    queued = true
    return Arrival(setQueued: true, yield: yield)
  }

  /// What a checkout's end does with the hand-off.
  @usableFromInline
  enum CheckoutEnd {
    /// The checkout ended inside this thread's own queue run, which goes on.
    case handedBack
    /// This thread now serves the queue.
    case serve
  }

  /// A checkout ends on `thread` and must be served.
  @inlinable mutating func checkoutEnded(on thread: UInt) -> CheckoutEnd {
    if server == thread {
      assert(!handedBack, "a checkout handed back twice")
      handedBack = true
      return .handedBack
    }
    server = thread
    return .serve
  }

  /// What the server does when its batch is done.
  @usableFromInline
  enum Next {
    /// `pending` holds the next batch: run it.
    case run
    /// The queue is empty: free the checkout (in the word, under the lock).
    case release
    /// Other threads have kept the queue full past the server's time: pass it on.
    case passOn
  }

  /// The server's batch is done: takes the next one into `pending`, or decides to free
  /// the checkout or pass the queue on. `mayPassOn`: this server has served for longer
  /// than it should for other threads.
  @inlinable mutating func nextBatch(
    into pending: inout FIFO<Entry>, mayPassOn: Bool
  ) -> Next {
    assert(pending.isEmpty, "a batch taken over another")
    if inbox.isEmpty {
      queued = false
      server = 0
      return .release
    }
    if mayPassOn, foreignArrivals {
      server = 0
      return .passOn
    }
    foreignArrivals = false
    swap(&pending, &inbox)
    return .run
  }

  /// After a queued write kept its proxy, and that write's closure is gone: `true` if the
  /// proxy's release handed the checkout back already, and the run goes on.
  @inlinable mutating func proxyKept(by thread: UInt) -> Bool {
    if handedBack {
      handedBack = false
      return true
    }
    if server == thread { server = 0 }
    return false
  }

  /// The server hands the checkout to a waiter.
  @inlinable mutating func stopServing(_ thread: UInt) {
    if server == thread { server = 0 }
  }

  /// A helper thread begins serving a queue passed on to it.
  @inlinable mutating func beginServing(_ thread: UInt) {
    server = thread
  }
}

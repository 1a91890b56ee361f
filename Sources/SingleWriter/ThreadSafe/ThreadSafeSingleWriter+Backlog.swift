import SingleWriterAtomics

// The backlog: how many writes wait, and, for a bounded container, room for more. Two
// counters, each stored by one side only: enqueuers count arrivals under the hand-off's
// lock, and the thread serving the queue counts the writes it starts.
extension ThreadSafeSingleWriter where Value: ~Copyable {
  /// Wraps `value`, with at most `maxQueuedWrites` ``writeNext(fileID:function:line:_:)`` writes waiting at
  /// once: a bounded backlog, so that memory stays bounded under any storm of writes.
  ///
  /// ```swift
  /// let log = ThreadSafeSingleWriter(value: [String](), maxQueuedWrites: 1_024)
  /// log.writeNext { $0.write.append(line) }  // waits for room while 1,024 are queued
  /// ```
  ///
  /// A `writeNext` that finds the backlog full waits for room, blocking its thread as
  /// ``withWriter(fileID:function:line:_:)`` does, instead of queueing; nothing is lost.
  /// It never waits for room that only it could make: from the checkout's holder (a proxy
  /// taken by this task, or on this thread outside any task, whatever the thread runs now;
  /// a closure write's body; a queued body being served here), from a task started with
  /// `Task.immediate` that runs inline, before its first suspension, while a task holds
  /// the checkout through a proxy (the task beneath it may be that one), or from inside
  /// this container's `read { }`, it queues past the bound. A `Task.immediate` that
  /// inherits an actor's isolation runs like any job of that actor, which no look can tell
  /// apart: started by the holder task, it waits, and warns on standard error after a
  /// second. Other waits are not bounded by it: `await write` and
  /// `checkout()` suspend as before, and a `withWriter` that queued waits in its own
  /// thread. Since a `writeNext` may now wait for the queued bodies to run, a queued body
  /// must not wait for a thread that calls `writeNext` on this container; and in async
  /// code, where waiting blocks a thread of the cooperative pool that a task holding the
  /// checkout may need in order to release it, use `await write`.
  @inlinable
  public convenience init(value: consuming sending Value, maxQueuedWrites: Int) {
    precondition(maxQueuedWrites > 0, "maxQueuedWrites must be at least 1")
    self.init(value: value, bound: maxQueuedWrites)
  }

  /// How many writes wait behind the checkout now: queued `writeNext` bodies, and
  /// `await write`, `checkout()` and `withWriter` calls that queued for their turn.
  ///
  /// ```swift
  /// if state.queuedWrites > 10_000 { logger.warning("writes are piling up") }
  /// ```
  ///
  /// A snapshot for diagnostics and tests, two loads, cheap enough to read in a loop:
  /// writes may queue or start while it is read. A write that is running is no longer
  /// counted; a `withWriter` or `await write` still spinning for the writer is not counted
  /// yet. A cancelled `writeUnlessCancelled` or `checkout()` counts until the queue
  /// reaches it and skips it, even after its call has thrown `CancellationError`.
  public var queuedWrites: Int {
    let arrived = sw_uptr_load(lock.arrivedWrites)
    let started = sw_uptr_load(lock.startedWrites)
    return max(0, Int(bitPattern: UInt(arrived &- started)))
  }

  /// The checkout's holder starts a queued write: counts it, and wakes the writes waiting
  /// for room, if any.
  @inlinable @inline(__always)
  func startedWrite() {
    sw_uptr_store(lock.startedWrites, sw_uptr_load(lock.startedWrites) &+ 1)
    if maxQueuedWrites != .max, sw_load_relaxed(lock.roomWanted) != 0 { makeRoom() }
  }

  /// `startedWrite`, for a `checkout()` whose own enqueue took the free checkout: rare,
  /// so out of line, keeping the enqueue's lock closure small enough to inline.
  @usableFromInline @inline(never) func startedOwnEntry() { startedWrite() }

  @usableFromInline func makeRoom() {
    sw_store_release(lock.roomWanted, 0)
    sw_fetch_add(lock.room, 1)
    sw_wake_all(lock.room)
  }

  /// Whether a `writeNext` of a bounded container on this thread may wait for room:
  /// not if the room could only come from this thread or task (see
  /// `init(value:maxQueuedWrites:)`); it then queues past the bound.
  @usableFromInline func waitsForRoom(_ me: UInt) -> Bool {
    !(sw_uptr_load(lock.checkoutThread) == scoped(me) || sw_reading_contains(lock.sync)
      || lock.mayBeHeldUpHere() || lock.withHandOffLock({ handOff.pointee.server == me }))
  }

  /// A bounded backlog admits a `writeNext` only with room, counted under the same lock
  /// as the arrivals, so that concurrent producers never pass the bound.
  @usableFromInline
  func arriveWithRoom(
    _ entry: Pending, from me: UInt, mayServe: Bool
  ) -> (HandOff<Pending>.Arrival, Bool) {
    while true {
      waitForRoom()
      let admitted = lock.withHandOffLock { () -> (HandOff<Pending>.Arrival, Bool)? in
        guard queuedWrites < maxQueuedWrites else { return nil }
        return arrive(
          entry, from: me, mayServe: mayServe, isWrite: true)
      }
      if let admitted { return admitted }
    }
  }

  /// Sleeps while the bounded backlog is full. After a second, from a task while the
  /// checkout is held elsewhere (a proxy, or an async transaction), warns once
  /// (`blockedWaitMayStarveHolder`): a task started with `Task.immediate` on an actor by
  /// the very task that holds the proxy runs inline like any job of that actor, which no
  /// look can tell apart, and waits forever.
  @usableFromInline func waitForRoom() {
    var wait = LongWait()
    while queuedWrites >= maxQueuedWrites {
      if wait.isDue(), lock.blockedWaitMayStarveHolder() {
        wait.warn(
          """
          SingleWriter: a bounded writeNext in a task has waited 1 s for room, blocking \
          its thread, while the checkout is held elsewhere (a proxy, or an async \
          transaction). If its holder started this task with `Task.immediate` and waits \
          for it, or holds it across an `await`, needing the cooperative pool to go on, \
          while every thread of the pool waits like this one, this is a deadlock: use \
          `await write` in async code.
          """)
      }
      // Ask, then look again: a write started between the look and the ask would not
      // know to wake this thread. A start that misses the ask still ends the sleep
      // within `HandOffPolicy.roomRecheck`.
      let seen = sw_load_acquire(lock.room)
      _ = sw_exchange(lock.roomWanted, 1)
      guard queuedWrites >= maxQueuedWrites else { return }
      _ = sw_wait_for(lock.room, seen, Int64(HandOffPolicy.roomRecheck))
    }
  }
}

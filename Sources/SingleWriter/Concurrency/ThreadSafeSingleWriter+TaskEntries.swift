import SingleWriterAtomics

// What the thread serving the queue does with a task's entry when its turn comes.
extension ThreadSafeSingleWriter where Value: ~Copyable {
  /// An `await write`'s turn. A cancelled task has left already: skip it. Otherwise its
  /// body runs here, as a closure write of this thread's, and the task is resumed once
  /// the write is whole.
  /// `insideRead`: this thread is inside a read of this container, where the body cannot
  /// run; a cancelled task's entry is skipped all the same.
  @inlinable
  func runAsyncWrite(
    _ waiter: TaskWaiter, _ job: (ThreadSafeSingleWriter<Value>) -> Void, insideRead: Bool
  ) {
    guard waiter.apply(.reach) else { return TransitionRow.entryCancelledSkipped.reached() }
    if insideRead { lock.stopServingInsideARead() }
    TransitionRow.entryAsyncWrite.reached()
    lock.acquireWriting()
    job(self)
    lock.endWriting()
    // Released here, acquired by the task: orders the body's accesses before the task's.
    waiter.apply(.finish)
    waiter.continuation.take().unsafelyUnwrapped.resume(returning: true)
  }

  /// A `checkout()`'s turn, or its enqueue that took the free checkout: the checkout is
  /// offered to the task as it sleeps, and the serving thread (`stoppingServing`) stops,
  /// as for a waiting `withWriter`, without waiting for the task to run. The task claims
  /// it when it runs, and its proxy's release serves what is queued after it. `false` if
  /// the task was cancelled first: the checkout is still the caller's.
  ///
  /// Until the task claims it, a thread blocked in `withWriter` may take it back (see
  /// `takeBackStaleOffer`): that is what keeps a task that needs a thread from being
  /// waited for by every thread of the cooperative pool.
  @inlinable
  func offerCheckout(to waiter: TaskWaiter, stoppingServing server: UInt?) -> Bool {
    // This thread's marks go first: once offered, the checkout can be taken back and
    // served on another thread, whose marks and gate a late store here would undo.
    sw_uptr_store(lock.checkoutThread, 0)
    lock.openGateIfClosed()
    let now = sw_monotonic_ns()
    let (left, dismissed) = lock.withHandOffLock { () -> (TaskWaiterState?, Waiter?) in
      // Held elsewhere from the offer on, by a task that may need a thread of the pool to
      // claim it: a blocking wait in a task behind it warns (`blockedWaitMayStarveHolder`;
      // a wait for room cannot take it back). Before the offer, so that the task's own
      // record, once it claims, comes after; under the lock, as a take-back's clearing is.
      sw_uptr_store(lock.checkoutHolder, WriterLock.heldByNobodyKnown)
      guard let left = handOff.pointee.offer(to: waiter, at: now) else {
        sw_uptr_store(lock.checkoutHolder, 0)
        return (nil, nil)
      }
      return (left, server.flatMap { handOff.pointee.stopServing($0) })
    }
    guard let left else {
      // Cancelled first: this thread still holds the checkout, and serves on.
      if server != nil { lock.closeGateIfWanted() }
      return false
    }
    dismissed?.grant(checkout: false)
    // Last: once resumed, the task may claim and release the checkout at once. A task
    // whose last offer was taken back is not waiting: it claims this one when it runs.
    if left == .waiting { waiter.continuation.take().unsafelyUnwrapped.resume(returning: true) }
    return true
  }

  /// A thread blocked in `withWriter` (its entry `mine`) behind an offer that its task has
  /// left unclaimed for `HandOffPolicy.claimWindow`: takes the checkout back and runs in
  /// the task's place, ahead of what was queued between them, while the task's entry goes
  /// back to the front of the queue, so that it keeps its place before every other write
  /// and `drained()`. `true` if it did: this thread holds the checkout, as if granted it.
  func takeBackStaleOffer(for mine: Waiter) -> Bool {
    let now = sw_monotonic_ns()
    guard
      let task = lock.withHandOffLock({ () -> TaskWaiter? in
        let task = handOff.pointee.takeBack(
          unclaimedFor: HandOffPolicy.claimWindow, at: now, for: mine)
        // A closure write of this thread's from now on: no proxy holds it.
        if task != nil { sw_uptr_store(lock.checkoutHolder, 0) }
        return task
      })
    else { return false }
    // This thread holds the checkout, and nobody serves: the batch is its to change. The
    // task's entry counted as started when it was offered, and this write starts now,
    // so the started count stays as it is (its own entry is skipped when reached). The
    // entry will be popped a second time: `ran` counts it once, as `taken` did, or every
    // take-back would move the position that debts are paid against one entry ahead.
    pending.pointee.prepend(.checkout(task))
    ran &-= 1
    return true
  }
}

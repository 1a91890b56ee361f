import SingleWriterAtomics

// What the thread serving the queue does with a task's entry when its turn comes.
extension ThreadSafeSingleWriter where Value: ~Copyable {
  /// An `await write`'s turn. A cancelled task has left already: skip it. Otherwise its
  /// body runs here, as a closure write of this thread's, and the task is resumed once
  /// the write is whole.
  @inlinable
  func runAsyncWrite(_ waiter: TaskWaiter, _ job: (ThreadSafeSingleWriter<Value>) -> Void) {
    guard waiter.apply(.reach) else { return TransitionRow.entryCancelledSkipped.reached() }
    TransitionRow.entryAsyncWrite.reached()
    lock.acquireWriting()
    job(self)
    lock.endWriting()
    // Released here, acquired by the task: orders the body's accesses before the task's.
    waiter.apply(.finish)
    waiter.continuation.take().unsafelyUnwrapped.resume(returning: true)
  }

  /// A `checkout()`'s turn: the task is woken, not handed the writer while it sleeps, since
  /// a task that is not running must not hold up the threads that wait for the writer.
  /// This thread waits up to `HandOffPolicy.claimWindow` for it to run and claim the
  /// writer, which it then hands over (`true`); after that the task competes for the
  /// writer, at the front of the queue, and this thread serves on (`false`).
  @inlinable
  func offerCheckout(to waiter: TaskWaiter, _ me: UInt) -> Bool {
    guard waiter.apply(.reach) else {
      TransitionRow.entryCancelledSkipped.reached()
      return false
    }
    waiter.continuation.take().unsafelyUnwrapped.resume(returning: true)
    guard waiter.awaitClaim(upTo: HandOffPolicy.claimWindow) else {
      TransitionRow.entryCheckoutExpired.reached()
      return false
    }
    TransitionRow.entryCheckoutClaimed.reached()
    let dismissed = lock.withHandOffLock { handOff.pointee.stopServing(me) }
    dismissed?.grant(checkout: false)
    sw_uptr_store(lock.checkoutThread, 0)
    lock.openGateIfClosed()
    waiter.handOver()
    return true
  }
}

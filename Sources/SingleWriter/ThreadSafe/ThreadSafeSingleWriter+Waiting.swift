import SingleWriterAtomics

extension ThreadSafeSingleWriter where Value: ~Copyable {
  /// The slow half of `withWriter`: waits in the phases of ``ClosureWriteWait`` (spin,
  /// sleep, then queue for a direct hand-off), then takes `writing`.
  @usableFromInline
  func waitForClosureWrite() {
    let me = sw_current_thread()
    lock.stopIfWaitingForItself(me)
    var wait = ClosureWriteWait(lock: lock, thread: me)
    if wait.takeWriter() {
      sw_uptr_store(lock.checkoutThread, scoped(me))
      lock.closeGateIfWanted()
      lock.acquireWriting()
      return
    }
    // Overtaken for too long: join the queue, and be handed the checkout in turn.
    let waiter = Waiter()
    enqueue(.waiter(waiter))
    // A checkout this thread or task holds through a proxy may never come back.
    waiter.wait(sleepingOnGateOf: lock, takingBack: { takeBackStaleOffer(for: waiter) }) {
      lock.isHeldHere()
    }
    lock.beginClosureWrite()
  }
}

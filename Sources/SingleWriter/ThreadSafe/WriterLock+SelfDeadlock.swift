import SingleWriterAtomics

extension WriterLock {
  /// Whether this thread or task holds a write access (a closure write's body, or an
  /// access through a proxy) that a wait for the writer or the value would wait behind.
  ///
  /// An access through a proxy that owns its checkout, made in a task, is that task's
  /// (`beginProxyWriting`): the task may suspend inside it (an async mutating method called
  /// through `proxy.write`) and resume on another thread, while other tasks, whose waits
  /// end when it resumes, run on this one. Any other access is its thread's. A task is
  /// recorded with the low bit set, which no thread's identity has.
  @usableFromInline func isAccessing(_ me: UInt) -> Bool {
    guard word.isWriting || isProxyAccessed else { return false }
    let accessor = sw_uptr_load(writingThread)
    return accessor == me || accessor == sw_current_task_inline() | 1
  }

  /// The maker of an access through a lent proxy that outlived the body it was lent to,
  /// made by a task the body started inline: a task's (the low bit set), but no caller's,
  /// since no task's address is all ones.
  @usableFromInline static let accessedByNoTaskKnown: UInt = ~0

  /// Whether a blocking wait by the caller for the write access in progress may starve
  /// it: the access was made in a task, through a proxy, so it may span an `await` and
  /// need a thread of the cooperative pool to end, and the caller, another task, may be
  /// blocking one. Keyed on who makes the access, not on who took the proxy: a proxy
  /// taken on a thread and used in a task spans `await`s the same way.
  @usableFromInline func accessMayBeStarved() -> Bool {
    let accessor = sw_uptr_load(writingThread)
    guard accessor & 1 != 0 else { return false }
    let task = sw_current_task_inline()
    return task != 0 && accessor != task | 1
  }

  /// Stops a write to this container from inside one of its `read { }` closures on this
  /// thread, at any depth of nested reads: the write would wait forever for that read.
  /// Every path of a write that could wait asks, before it waits or is refused.
  @usableFromInline func stopIfReading() {
    guard sw_reading_contains(sync) else { return }
    selfDeadlockFailure(
      """
      ThreadSafeSingleWriter: a write inside `read { }` on the same thread would wait \
      forever for that read to end. Return what you need from the read, then write.
      """)
  }

  /// Stops a queue run that reaches a write on a thread inside this container's
  /// `read { }`: a checkout ended there (a proxy released, an in-place `writeNext` body
  /// done) with writes queued behind it. They would wait for the read, on the thread that
  /// holds it; a thread inside a read is never chosen to serve, but the end of a checkout
  /// it holds cannot pass the queue to anyone else.
  @usableFromInline @inline(never) func stopServingInsideARead() -> Never {
    selfDeadlockFailure(
      """
      ThreadSafeSingleWriter: a checkout ended inside `read { }` on the same thread, with \
      writes queued behind it, which would run inside that read and wait forever for it \
      to end. Release the proxy, or call `writeNext`, outside the read.
      """)
  }

  /// Stops a wait for the writer that this thread itself holds up: from a closure write's
  /// body or a served queue (marked in `checkoutThread`), from inside a write access
  /// through a proxy, or from inside `read { }`. Proxies held outside an access are not
  /// stopped: they may have gone to another thread, so their wait only warns.
  @usableFromInline func stopIfWaitingForItself(_ me: UInt) {
    if sw_uptr_load(checkoutThread) == scoped(me) {
      selfDeadlockFailure(
        """
        ThreadSafeSingleWriter: withWriter inside a write's closure (tryWrite, withWriter, \
        `await write`, transaction or a writeNext body), or inside an observer that a \
        checkout's end is calling, on the same thread would wait forever for that write to \
        end. Change the value you were given, or use writeNext to queue this write behind it.
        """)
    }
    stopIfInsideOwnTransaction()
    if isAccessing(me) {
      selfDeadlockFailure(
        """
        ThreadSafeSingleWriter: withWriter inside a write access through a proxy (say a \
        mutating method called through `proxy.write`) on the same thread would wait forever \
        for that access to end. Write through the proxy, or call withWriter after the access.
        """)
    }
    stopIfReading()
  }

  /// Stops a wait for the writer from inside an async `transaction`'s body by the task
  /// running it: the transaction holds the writer until its body returns, which waits for
  /// this. (A proxy's holder may have sent it elsewhere, so its wait only warns; a
  /// transaction's checkout never leaves its body.) One load while no transaction is held.
  @usableFromInline func stopIfInsideOwnTransaction() {
    guard sw_ts_transaction_is_held(sync), isHeldHere() else { return }
    selfDeadlockFailure(
      """
      ThreadSafeSingleWriter: a write (withWriter, `await write`, transaction, checkout()) \
      or a wait for the queue (drained(), or a call that drains it, such as \
      PersistedState.saved()) inside an async transaction's body on the same container \
      would wait forever for that transaction, which ends only when its body returns. \
      Change the value you were given, or use writeNext to queue this write behind the \
      commit.
      """)
  }

  // MARK: Sleeping

  /// Sleeps until the state word changes, if a closure write, a commit or a reader is
  /// still there to wake this thread when it ends. None of them spans an `await`, so this
  /// wait never warns; a wait for an access through a proxy, which may, is
  /// `sleepWhileProxyAccessed`.
  @usableFromInline func sleepWhileAccessed() {
    guard let old = update({ $0.markWaiters() }) else { return }
    sw_wait(state, old.raw | WriterWord.waiters)
  }

  /// The warning of a wait for a write access that a task makes through a proxy.
  @usableFromInline static var starvedAccessWarning: String {
    """
    SingleWriter: a read (or a write access through a proxy) in a task has waited 1 s, \
    blocking its thread, for a write access through a proxy that another task made. An \
    access that spans an `await` (`await proxy.write.method()`) needs a thread to end: \
    if both run on the cooperative pool and every thread of it waits like this one, it \
    never does. Await first, then assign through the proxy.
    """
  }
}

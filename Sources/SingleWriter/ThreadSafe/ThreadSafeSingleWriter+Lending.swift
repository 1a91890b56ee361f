import SingleWriterAtomics

extension ThreadSafeSingleWriter where Value: ~Copyable {
  /// Runs the caller's own `writeNext` body in place, with the checkout just taken: it
  /// holds the writer without having waited, so no lock-order edge leads to it, and the
  /// `fileID`, `function` and `line` of that `writeNext` name it where one leads from it.
  /// Ends the checkout unless `body` kept its proxy.
  @inlinable @inline(__always)
  func runInPlace(
    _ body: (ThreadSafeWriterProxy<Value>) -> Void, _ fileID: StaticString,
    _ function: StaticString, _ line: UInt
  ) {
    #if DEBUG
      LockOrderCheck.took(ObjectIdentifier(self), fileID, function, line)
    #endif
    let returned = lend(body, inPlace: true)
    #if DEBUG
      LockOrderCheck.released(ObjectIdentifier(self))
    #endif
    if returned { endLentCheckout() }
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
      // ended with a release on `proxy_access`; acquire it, so that its accesses are
      // ordered before this proxy's next lend even for tools that do not see ARC's atomics.
      _ = sw_load_acquire(lock.proxyAccess)
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
    // With `queued` set, this proxy's release takes the slow path, which clears the mark;
    // with it clear, `drained()` returns at once anyway, and the release may not.
    lock.withHandOffLock {
      if handOff.pointee.queued { handOff.pointee.heldByProxy = true }
    }
    if inPlace {
      // No longer this thread's closure: the proxy's, whoever took it here.
      sw_uptr_store(lock.checkoutThread, 0)
      lock.recordHolder()
      #if DEBUG
        // Held through this proxy from now on, as one from `writer` is.
        LockOrderCheck.keptInPlace(ObjectIdentifier(self), holder: lock.holder)
      #endif
    } else {
      // Kept by another thread's body: who holds it now is not known here, and a warning
      // that named this thread or task would be false. Held elsewhere all the same: a
      // blocking wait in a task behind it warns that it may starve the pool.
      sw_uptr_store(lock.checkoutThread, 0)
      sw_uptr_store(lock.checkoutHolder, WriterLock.heldByNobodyKnown)
    }
    // An access through it still under way and recorded as this thread's outlived the
    // body: a task the body started inline (`Task.immediate`) made it and suspended
    // inside, and resumes wherever the pool runs it. It is that task's, not this
    // thread's: tagged as a task's that no caller is, so that this thread does not take
    // it for its own, and a blocking wait in a task behind it warns. Replaced only while
    // still this thread's: an access that ends meanwhile clears the record first, and no
    // new one begins until `endLend`.
    if lock.isProxyAccessed {
      _ = sw_uptr_replace(
        lock.writingThread, sw_current_thread(), WriterLock.accessedByNoTaskKnown)
    }
    taken.unsafelyUnwrapped.becomeOwner()
    lock.endLend(generation, kept: true)
    return false
  }
}

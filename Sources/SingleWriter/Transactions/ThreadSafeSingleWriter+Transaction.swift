import SingleWriterAtomics

// Transactions: the writer is held while the body works on a copy of the value, so readers
// keep the value from before, without waiting; the commit swaps the copy in under one
// write access, so they see everything the body wrote at once. The checkout is held the
// way an in-place `writeNext` body (sync) or a `checkout()` proxy (async) holds it, and
// ends the way theirs does: queued writes run after the commit, and observers are told
// once, since the commit is the checkout's only write access.
extension ThreadSafeSingleWriter where Value: Sendable {
  /// Waits for the writer, as ``withWriter(fileID:function:line:_:)`` does, then runs
  /// `body` on a copy of the value and publishes what it wrote all at once.
  ///
  /// ```swift
  /// settings.transaction { settings in
  ///   settings.theme = .dark
  ///   settings.version += 1  // readers see both changes or neither
  /// }
  /// ```
  ///
  /// Until `body` returns, ``read``, `read { }`, `trackedRead`, observers and `changes()`
  /// see the value from before, and never wait for `body`: only for the commit, one
  /// store of the value. When `body` returns, everything it wrote becomes visible at once,
  /// with one observer notification and at most one `changes()` element. When it throws,
  /// nothing it wrote is ever visible, observers are not told, and the error propagates.
  ///
  /// It waits its turn in FIFO order with every other writer, blocking its thread as
  /// `withWriter` does, and excludes them all until the commit: writes queued meanwhile
  /// (`writeNext`, `await write`, a waiting `withWriter`) run after it and see it. A read
  /// of this container inside `body` sees the value from before, not `body`'s changes.
  /// Writing it inside `body` on the same thread stops the program with a message, as
  /// inside `withWriter`; `writeNext` queues behind the commit, and `tryWrite` and
  /// ``writer`` find the writer busy.
  ///
  /// `body` works on a copy. For copy-on-write storage (arrays, dictionaries, strings)
  /// the copy is a reference until `body` first writes to each buffer, which then copies
  /// that buffer whole: prefer ``withWriter(fileID:function:line:_:)`` for one small
  /// change to a large collection that readers may wait for. The commit moves the copy
  /// in; it copies nothing. The value it replaces, like a throwing body's copy, is freed
  /// once the writer is free again, so a `deinit` there may write to this container.
  ///
  /// Debug builds' lock-order checking (see ``RaceDetector``) orders it as `withWriter`;
  /// the defaulted `fileID`, `function` and `line` name the caller in its reports.
  @inlinable
  public func transaction<R: ~Copyable, E: Error>(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: (inout Value) throws(E) -> R
  ) throws(E) -> R {
    #if DEBUG
      LockOrderCheck.willTake(ObjectIdentifier(self), fileID, function, line)
    #endif
    let me = sw_current_thread()
    // Marked as this thread's closure, as an in-place `writeNext` body: a wait for the
    // writer from `body` on this thread stops with a message, and writes queued from it
    // are this thread's to serve when it ends the checkout.
    if !lock.tryCheckout(as: scoped(me)) { waitForTransaction(me) }
    // A thread sleeping for the writer boosts this one while `body` runs, as for a
    // closure write; released before the checkout can pass to another thread.
    lock.closeGateIfWanted()
    var committed = false
    // Declared before the `defer`, so freed after it, with the checkout ended: the value
    // from before the commit, or a throwing body's copy. A `deinit` there may write to
    // this container, as after any write that replaced a value.
    var draft: Value
    defer {
      #if DEBUG
        LockOrderCheck.released(ObjectIdentifier(self))
      #endif
      if !committed {
        lock.openGateIfClosed()
        if !lock.tryEndCheckout() { finishCheckoutNow() }
      }
      _fixLifetime(self)  // the copy and the commit go through `storage`
    }
    // The checkout is held, so nothing else writes the value: copied with no reader slot.
    draft = storage.pointee
    let result = try body(&draft)
    // The commit's write access, then the checkout and the access end together, as a
    // closure write's do: one compare-and-exchange fewer than ending them one by one.
    lock.beginWriting()
    swap(&storage.pointee, &draft)
    committed = true
    endCommit()
    return result
  }

  /// Ends a sync transaction's commit access and its checkout at once, as a closure write
  /// ends (see `runClosureWrite`): the checkout is this thread's scoped one, with no
  /// holder recorded, exactly as a closure write's.
  @inlinable @inline(__always)
  func endCommit() {
    switch lock.tryEndClosureWrite() {
    case .ended: break
    case .endedDirty: hub.publish()
    case .slow: finishClosureWrite()
    }
  }

  /// Swaps `draft` in as the value, in one write access: readers wait only for the swap,
  /// and see all of it or none. The previous value goes back in `draft`, to be freed
  /// outside the access. Marks the checkout dirty for observers, as any write access does.
  @inlinable @inline(__always)
  func commit(_ draft: inout Value) {
    lock.beginWriting()
    swap(&storage.pointee, &draft)
    lock.endWriting()
  }

  /// The slow half of the sync `transaction`: waits for the checkout as `withWriter` does
  /// (spin, sleep, then queue for a direct hand-off), but takes only the checkout, not
  /// the value, which readers keep reading until the commit.
  @usableFromInline
  func waitForTransaction(_ me: UInt) {
    lock.stopIfWaitingForItself(me)
    var wait = ClosureWriteWait(lock: lock, thread: me)
    if !wait.takeWriter() {
      // Overtaken for too long: join the queue, and be handed the checkout in turn.
      let waiter = Waiter()
      enqueue(.waiter(waiter))
      waiter.wait(sleepingOnGateOf: lock, takingBack: { takeBackStaleOffer(for: waiter) }) {
        lock.isHeldHere()
      }
    }
    sw_uptr_store(lock.checkoutThread, scoped(me))
  }

  /// Waits its turn for the writer by suspending, as ``write(fileID:function:line:_:)``
  /// does, then runs `body` on a copy of the value, across its `await`s, and publishes
  /// what it wrote all at once.
  ///
  /// ```swift
  /// try await session.transaction { session in
  ///   let token = try await api.refresh(session.refreshToken)
  ///   session.token = token.access  // readers keep the old token
  ///   session.refreshToken = token.refresh  // until both are new
  /// }
  /// ```
  ///
  /// The same promises as the synchronous `transaction`: readers and observers see the
  /// value from before until `body` returns, then all of it at once, one notification; a
  /// throw publishes nothing; every other writer waits, and those queued meanwhile run
  /// after the commit. `body` runs in the caller's isolation (on the main
  /// actor if called there), and holds the writer across its suspensions, as a proxy
  /// from ``checkout(fileID:function:line:)`` does: while it does, do not block every
  /// thread of the cooperative pool in `withWriter` on this container. Its end, like that
  /// proxy's release, runs the writes queued behind it on the task's thread.
  ///
  /// Swift chooses this form for a body that contains `await`; a body that does not runs
  /// the synchronous form, which blocks its thread while it waits its turn.
  ///
  /// Throws `CancellationError` without running `body` if the task is cancelled before
  /// the call or while it waits its turn, as
  /// ``writeUnlessCancelled(fileID:function:line:_:)`` does. Once its turn has come
  /// (the writer handed to the task, which may not have run yet), a cancellation has lost,
  /// as for ``checkout(fileID:function:line:)``, and `body` runs. Once `body` has begun,
  /// cancellation is its business: it commits if `body` returns, whatever the task's
  /// cancellation.
  ///
  /// A wait for this container's writer inside `body` by the same task (`withWriter`,
  /// `await write`, another `transaction`, `checkout()`, `drained()`) could never end,
  /// and stops the program with a message; `writeNext` queues behind the commit.
  @inlinable
  public func transaction<R>(
    isolation: isolated (any Actor)? = #isolation,
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: (inout Value) async throws -> R
  ) async throws -> R {
    try Task.checkCancellation()
    #if DEBUG
      LockOrderCheck.willSuspend(for: ObjectIdentifier(self), fileID, function, line)
    #endif
    // A task may resume on any thread: the checkout is this task's, as a proxy's is.
    // A closure write, though it holds the checkout as a proxy does: a `drained()` queued
    // behind it waits for its commit, not only for its task to have the writer.
    if !lock.tryCheckout(as: 0) { try await checkOutInTurn(endsDrainsAtClaim: false) }
    lock.recordHolder()
    sw_store_release(lock.transactionHeld, 1)
    #if DEBUG
      LockOrderCheck.checkedOut(
        ObjectIdentifier(self), holder: lock.holder, fileID, function, line)
    #endif
    // Freed after the `defer`, with the checkout ended, as in the synchronous form.
    var draft: Value
    defer {
      sw_store_release(lock.transactionHeld, 0)
      #if DEBUG
        LockOrderCheck.checkoutEnded(ObjectIdentifier(self))
      #endif
      // Ended as a proxy's release by its holder ends it: serving what queued behind it.
      if !lock.tryEndCheckout() { finishCheckoutNow() }
      _fixLifetime(self)
    }
    draft = storage.pointee
    let result = try await body(&draft)
    commit(&draft)
    return result
  }
}

extension ThreadSafeSingleWriter where Value: ~Copyable {
  /// The queued half of `checkout()` and the async `transaction`: waits for this task's
  /// turn, and returns holding the checkout. Throws `CancellationError`, holding nothing,
  /// if the task is cancelled while it waits.
  ///
  /// With `endsDrainsAtClaim` (a `checkout()`), the `drained()` calls at the front return
  /// once the task has the writer: a drain never waits for a proxy's release. Without it
  /// (a transaction, a closure write), they stay at the front, and the checkout's end
  /// resumes them after the commit.
  @usableFromInline
  func checkOutInTurn(endsDrainsAtClaim: Bool = true) async throws {
    let waiter = TaskWaiter()
    guard await waitForTurn(unlessCancelled: true, waiter: waiter, { .checkout($0) }) else {
      throw CancellationError()
    }
    // Offered the writer as it slept: it is this task's unless a blocked `withWriter`
    // took it back meanwhile, putting the entry back at the front; then wait again.
    while true {
      let (claimed, drains) = lock.withHandOffLock { () -> (Bool, [TaskWaiter]) in
        guard handOff.pointee.claim(waiter, asProxy: endsDrainsAtClaim) else {
          return (false, [])
        }
        // This task holds the checkout now, and nobody can take it back: the `drained()`
        // calls at the front wait for queued writes, never for a proxy's release.
        return (true, endsDrainsAtClaim ? takeLeadingDrains() : [])
      }
      if claimed {
        resume(drains)
        return
      }
      await waitAgain(waiter)
    }
  }
}

import SingleWriterAtomics

// Swift concurrency on top of the same queue: an async write and an async checkout that
// wait their turn by suspending. The async writes take the value `inout sending`, as the
// closure writes do, so they work whatever `Value` is; `checkout()` hands out a proxy,
// which needs `Value: Sendable`.
extension ThreadSafeSingleWriter where Value: ~Copyable {
  /// Waits its turn for the writer by suspending, in FIFO order with `writeNext` and
  /// `withWriter`, then mutates the value in place.
  ///
  /// ```swift
  /// let count = await state.write { value -> Int in
  ///   value.count += 1
  ///   return value.count
  /// }
  /// ```
  ///
  /// Never blocks a thread while it waits: if the writer is busy for more than a few
  /// microseconds, the write joins the queue and the task suspends; the thread that serves
  /// the queue runs `body` in its turn, in place, and resumes the task with the result.
  /// The task's own thread never serves other threads' writes before `body` has run.
  /// So a burst of async writes runs back to back on one thread instead of waiting for
  /// each task to be scheduled, and a suspended task never holds the writer up for
  /// anyone.
  ///
  /// Like `Mutex.withLock`, it waits its turn whatever the task's cancellation, and
  /// throws only what `body` throws: a cancelled request still counts its hit. For a
  /// wait that gives up on cancellation, use
  /// ``writeUnlessCancelled(fileID:function:line:_:)``. `body` itself is synchronous, so the
  /// value is never held across an `await`.
  ///
  /// Debug builds' lock-order checking (see ``RaceDetector``) orders it after the
  /// checkouts this task holds; the defaulted `fileID`, `function` and `line` name the
  /// caller in its reports.
  @inlinable
  public func write<R, E: Error>(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: sending (inout sending Value) throws(E) -> sending R
  ) async throws(E) -> sending R {
    #if DEBUG
      LockOrderCheck.willSuspend(for: ObjectIdentifier(self), fileID, function, line)
    #endif
    if lock.tryBeginClosureWrite() || spinForClosureWrite() {
      #if DEBUG
        LockOrderCheck.took(ObjectIdentifier(self), fileID, function, line)
      #endif
      return try runClosureWrite(body)
    }
    return try await writeInTurn(body, unlessCancelled: false).unsafelyUnwrapped.get()
  }

  /// ``write(fileID:function:line:_:)``, unless the task is cancelled first: then it throws
  /// `CancellationError` and `body` never runs.
  ///
  /// ```swift
  /// let saved = try await drafts.writeUnlessCancelled { $0.save(draft) }
  /// ```
  ///
  /// Cancellation is checked before the call and while it waits in the queue; once
  /// `body` has begun, the write completes.
  @inlinable
  public func writeUnlessCancelled<R, E: Error>(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: sending (inout sending Value) throws(E) -> sending R
  ) async throws -> sending R {
    try Task.checkCancellation()
    #if DEBUG
      LockOrderCheck.willSuspend(for: ObjectIdentifier(self), fileID, function, line)
    #endif
    if lock.tryBeginClosureWrite() || spinForClosureWrite() {
      #if DEBUG
        LockOrderCheck.took(ObjectIdentifier(self), fileID, function, line)
      #endif
      return try runClosureWrite(body)
    }
    guard let result = await writeInTurn(body, unlessCancelled: true) else {
      throw CancellationError()
    }
    return try result.get()
  }

  /// The queued half of the async writes: the body goes into the queue, to be run by its
  /// server. `nil` if cancelled while waiting (only `unlessCancelled`).
  @usableFromInline
  func writeInTurn<R, E: Error>(
    _ body: sending (inout sending Value) throws(E) -> sending R, unlessCancelled: Bool
  ) async -> sending Result<R, E>? {
    let queued = QueuedWrite<Value, R, E>()
    let waiter = TaskWaiter()
    // The body runs on the serving thread while this task is suspended, and this call
    // returns only after it ran or was skipped. A skipped (cancelled) entry stays queued
    // until the server reaches it, so the box lets go of the body before returning.
    let ran = await withoutActuallyEscaping(body) { body in
      queued.body = body
      defer { queued.body = nil }
      let ran = await waitForTurn(
        unlessCancelled: unlessCancelled, waiter: waiter
      ) { .asyncWrite($0, queued.run) }
      // Acquires what the server released after the body: its accesses come first.
      if ran { _ = waiter.current }
      return ran
    }
    return ran ? queued.takeResult() : nil
  }

  /// A short spin for the writer before an async write queues, as `withWriter` spins: most
  /// checkouts last nanoseconds, far less than a task's suspension and resumption.
  ///
  /// Only while a write is under way: a checkout held with no write in progress (through
  /// a proxy, or handed to a sleeping `checkout()`) may last across an `await`, and its
  /// task may need this very thread to run and release it. A closure write takes the
  /// checkout and `writing` in one step, so it never looks like that.
  @usableFromInline
  func spinForClosureWrite() -> Bool {
    let budget = sw_load_relaxed(lock.spinRounds)
    for spins in 0..<budget {
      for _ in 0..<(1 << spins) { sw_yield_cpu() }
      let word = lock.word
      if !word.isCheckedOut {
        if lock.tryBeginClosureWrite() { return true }
      } else if !word.isWriting {
        return false
      }
    }
    return false
  }

  /// Suspends until the queue reaches this task's entry and returns `true`, or, with
  /// `unlessCancelled`, returns `false` if the task is cancelled first. The waiter's
  /// state decides which of the two happens.
  @usableFromInline
  func waitForTurn(
    unlessCancelled: Bool, waiter: TaskWaiter = TaskWaiter(),
    _ entry: (TaskWaiter) -> Pending
  ) async -> Bool {
    lock.stopIfInsideOwnTransaction()
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        waiter.continuation = continuation
        // Cancelled before it could queue: never queued, so it resumes itself.
        guard waiter.apply(.queue) else {
          waiter.continuation.take()!.resume(returning: false)
          return
        }
        // Waiting behind a checkout this task holds may never end: warn after a second.
        // A proxy from `writer` or `checkout()` carries the id of the task that took it,
        // wherever the task has run since; a thread says nothing about a task.
        let holder = lock.holder
        // Only a task's own proxy: its await suspends, so a thread's holds nothing up.
        if holder & 1 != 0, WriterLock.isCaller(holder) {
          warnIfStillWaiting(waiter, holder: holder)
        }
        enqueue(entry(waiter))
      }
    } onCancel: {
      // Before it queued, it will see this; after, whoever wins the transition resumes
      // it, and a cancelled entry is skipped when the queue reaches it.
      guard unlessCancelled else { return }
      if waiter.cancel() == .waiting { waiter.continuation.take()!.resume(returning: false) }
    }
  }

  /// A `checkout()` whose offer was taken back before its task ran: its entry is at the
  /// front of the queue again, and the task waits for it, unless it was offered the writer
  /// again meanwhile (then it returns at once). Whatever the task's cancellation: once
  /// offered the writer, a checkout's cancellation has lost, and the wait is short, for
  /// the `withWriter` that took the offer back.
  func waitAgain(_ waiter: TaskWaiter) async {
    _ = await withCheckedContinuation { continuation in
      waiter.continuation = continuation
      guard !waiter.apply(.rearm) else { return }
      // Offered again before it could wait: it resumes itself.
      waiter.continuation.take()!.resume(returning: true)
    }
  }

  /// Returns once every write queued before the call has run: suspends, never blocks a
  /// thread, and holds no checkout of its own.
  ///
  /// ```swift
  /// for event in batch { events.writeNext { $0.write.append(event) } }
  /// await events.drained()  // flushed: every append above has run
  /// ```
  ///
  /// Returns at once if nothing is queued. Otherwise it waits its turn in the queue, as
  /// ``write(fileID:function:line:_:)`` does, whatever the task's cancellation, and then returns: writes
  /// queued after it may run before it resumes. Only queued writes count, and a write has
  /// run once its closure has returned (an async `transaction`'s body included, however
  /// long it holds the writer), or, for a `checkout()`, once its task has the
  /// proxy: a proxy holding the writer never holds the drain up, whether a queued body
  /// kept it, a `checkout()` queued before the drain got it, or it was taken with nothing
  /// queued; the writes queued between that proxy and the drain do. A cancelled task's
  /// write counts until the queue reaches it and skips it, as in ``queuedWrites``. A
  /// `withWriter` or `await write` still spinning for the writer has not queued yet, and
  /// does not count.
  ///
  /// Called while this task holds a proxy it took (from `writer` or `checkout()`) with
  /// writes queued behind it, it waits for that proxy's release like any other wait, and
  /// warns on standard error after a second, as ``write(fileID:function:line:_:)`` does:
  /// the task may have sent the proxy to another task, which will release it; if it still
  /// holds it, the queue cannot move.
  public func drained(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) async {
    // `queued` is cleared only once the last queued write has run, or stays set while a
    // proxy taken at a queued turn holds the checkout with nothing behind it.
    guard sw_load_acquire(lock.queuedHint) != 0 else { return }
    let atOnce = lock.withHandOffLock {
      handOff.pointee.drainsAtOnce(
        arrivedWrites: sw_uptr_load(lock.arrivedWrites),
        startedWrites: sw_uptr_load(lock.startedWrites))
    }
    if atOnce { return }
    #if DEBUG
      // It waits for the queue, which waits for whatever its bodies take.
      LockOrderCheck.willSuspend(for: ObjectIdentifier(self), fileID, function, line)
    #endif
    _ = await waitForTurn(unlessCancelled: false) { .drain($0) }
  }

  /// After a second, warns on standard error if `waiter` still waits while its own task
  /// seems to hold the checkout: a wait that can never end if it still does.
  ///
  /// Only a task that holds the checkout as it queues can be in that state (it cannot
  /// check out while it waits), so no other wait starts the timer.
  func warnIfStillWaiting(_ waiter: TaskWaiter, holder: UInt) {
    Task { [weak self] in
      try? await Task.sleep(nanoseconds: HandOffPolicy.deadlockWarning)
      // `self` held across the loads: the container frees the lock's memory.
      guard let self, waiter.current == .waiting, self.lock.holder == holder else { return }
      sw_print_error(
        """
        SingleWriter: `await write`, `checkout()` or `drained()` has waited 1 s for a \
        checkout that this same task took, with `checkout()` or `writer` (or a `writeNext` \
        closure that kept its proxy). If this task still holds that proxy, this is a \
        deadlock: release it before waiting for the writer again.
        """)
    }
  }
}

extension ThreadSafeSingleWriter where Value: Sendable {
  /// For a wait in a module of this package that a proxy this task took can hold up
  /// (SingleWriterPersistence's `saved()`, behind a proxy written over unsaved writes): as
  /// for `drained()`, a timer that warns on standard error after a second, naming `call`,
  /// unless it is cancelled first (the wait ended) or the proxy has been released. `nil`
  /// if no proxy this task took holds the checkout: a thread's holds no await up.
  package func warnIfStillWaitingBehindThisTask(in call: StaticString) -> Task<Void, Never>? {
    let holder = lock.holder
    guard holder & 1 != 0, WriterLock.isCaller(holder) else { return nil }
    return Task { [weak self] in
      try? await Task.sleep(nanoseconds: HandOffPolicy.deadlockWarning)
      // `self` held across the loads: the container frees the lock's memory.
      guard !Task.isCancelled, let self, self.lock.holder == holder else { return }
      sw_print_error(
        """
        SingleWriter: \(call) has waited 1 s for a checkout that this same task took, with \
        `checkout()` or `writer` (or a `writeNext` closure that kept its proxy), and wrote \
        through. If this task still holds that proxy, this is a deadlock: release it \
        before waiting.
        """)
    }
  }

  /// Waits its turn for the writer by suspending, then returns the proxy. The checkout
  /// lasts until ARC releases it, as with ``writer``.
  ///
  /// ```swift
  /// let writer = try await session.checkout()
  /// writer.write.token = try await refreshToken()  // others queue meanwhile
  /// ```
  ///
  /// At its turn the writer is handed to the task while it still sleeps, as an actor's
  /// turn is: no thread waits for the task to run, and the writes queued after it wait
  /// for its proxy's release, which serves them (a `drained()` queued after it returns
  /// once the task has the proxy). Only a thread blocked in `withWriter`
  /// may take the writer back, from a task still not running a millisecond later, and
  /// write in its place, so that threads blocked in `withWriter` never wait for a task
  /// that needs one of them to run; the task keeps its place at the front of the queue.
  /// Throws `CancellationError`, without checking out, if the task is cancelled while it
  /// waits; a task cancelled once the writer was handed to it gets the proxy, even if a
  /// blocked `withWriter` took the writer back meanwhile and the task waits again for it.
  ///
  /// In debug builds' lock-order checking (see ``RaceDetector``) the checkout is ordered
  /// after those this task holds, and held by this task until the proxy is released; the
  /// defaulted `fileID`, `function` and `line` name the caller.
  ///
  /// From its turn until the proxy is released, including any `await` it is held across,
  /// every other writer waits, as intended: meanwhile, do not block every thread of the
  /// cooperative pool in `withWriter` on this container (use `await write`), or the task
  /// holding it cannot run.
  public func checkout(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) async throws -> ThreadSafeWriterProxy<Value> {
    #if DEBUG
      LockOrderCheck.willSuspend(for: ObjectIdentifier(self), fileID, function, line)
    #endif
    // A task can resume on any thread: no thread in particular holds this checkout, but
    // this task does, for the warning in `waitForTurn`.
    if !lock.tryCheckout(as: 0) { try await checkOutInTurn() }
    lock.recordHolder()
    #if DEBUG
      LockOrderCheck.checkedOut(
        ObjectIdentifier(self), holder: lock.holder, fileID, function, line)
    #endif
    return ThreadSafeWriterProxy(owning: self)
  }
}

import SingleWriterAtomics

// Swift concurrency on top of the same queue: an async write and an async checkout that
// wait their turn by suspending, and a stream of the values that checkouts leave behind.
// They need `Value: Sendable`: the container crosses into other tasks.
extension ThreadSafeSingleWriter where Value: Sendable {
  /// Waits its turn for the writer by suspending, in FIFO order with `writeNext` and
  /// `withWriter`, then mutates the value in place.
  ///
  /// ```swift
  /// let count = try await state.write { value -> Int in
  ///   value.count += 1
  ///   return value.count
  /// }
  /// ```
  ///
  /// Never blocks a thread while it waits. If the task is cancelled while waiting, the
  /// write leaves the queue without running and this throws `CancellationError`;
  /// otherwise it throws only what `body` throws. `body` itself is synchronous, so the
  /// value is never held across an `await`.
  @inlinable
  public func write<R: Sendable>(
    _ body: sending (inout Value) throws -> R
  ) async throws -> R {
    if !lock.tryBeginClosureWrite(lent: false) {
      try await waitForTurn()
      lock.beginClosureWrite(lent: false)
    }
    defer { if !lock.tryEndClosureWrite() { finishClosureWrite() } }
    return try body(&storage.pointee)
  }

  /// Waits its turn for the writer by suspending, then returns the proxy. The checkout
  /// lasts until ARC releases it, as with ``writer``.
  ///
  /// ```swift
  /// let writer = try await session.checkout()
  /// writer.write.token = try await refreshToken()  // others queue meanwhile
  /// ```
  ///
  /// Throws `CancellationError`, without checking out, if the task is cancelled while
  /// waiting.
  public func checkout() async throws -> ThreadSafeWriterProxy<Value> {
    if !lock.tryCheckout() { try await waitForTurn() }
    // A task can resume on any thread: no thread in particular holds this checkout.
    sw_uptr_store(lock.checkoutThread, 0)
    return ThreadSafeWriterProxy(owning: self)
  }

  /// Suspends until the queue hands this task the checkout, or throws if the task is
  /// cancelled first. The queue lock decides which of the two happens.
  @usableFromInline
  func waitForTurn() async throws {
    let waiter = TaskWaiter()
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        switch enqueueTask(waiter, continuation) {
        case .queued: break
        case .checkedOut: continuation.resume()
        case .cancelled: continuation.resume(throwing: CancellationError())
        }
      }
    } onCancel: {
      cancelWaiting(waiter)?.resume(throwing: CancellationError())
    }
  }

}

extension ThreadSafeSingleWriter {
  @usableFromInline
  enum TaskEnqueueResult { case queued, checkedOut, cancelled }

  func enqueueTask(
    _ waiter: TaskWaiter, _ continuation: CheckedContinuation<Void, any Error>
  ) -> TaskEnqueueResult {
    sw_mutex_lock(lock.queueLock)
    defer { sw_mutex_unlock(lock.queueLock) }
    if waiter.isCancelled { return .cancelled }
    // Set before queueing: the drain may pop the waiter as soon as the lock is free.
    waiter.continuation = continuation
    return enqueueHoldingQueueLock(.task(waiter)) ? .queued : .checkedOut
  }

  /// Marks `waiter` cancelled and takes it out of the queue. Returns its continuation
  /// if it was still waiting, for the caller to resume outside the lock.
  func cancelWaiting(_ waiter: TaskWaiter) -> CheckedContinuation<Void, any Error>? {
    sw_mutex_lock(lock.queueLock)
    defer { sw_mutex_unlock(lock.queueLock) }
    waiter.isCancelled = true
    let removed = pending.removeFirst {
      if case .task(let queued) = $0 { return queued === waiter }
      return false
    }
    guard removed != nil else { return nil }
    if pending.isEmpty { sw_fetch_and(lock.state, ~WriterState.queued) }
    return waiter.continuation.take()
  }

  // MARK: Publishing changes

  /// Called by the checkout holder as a checkout ends: yields the value to every
  /// `changes()` stream if a write happened. Checkouts are ordered, so publications
  /// are too; the yields happen outside the queue lock.
  @inlinable
  func publishIfDirty() {
    let slot = lock.beginRead()
    guard sw_load_relaxed(lock.state) & WriterState.dirty != 0 else {
      if slot { lock.endRead() }
      return
    }
    sw_fetch_and(lock.state, ~WriterState.dirty)
    let snapshot = storage.pointee
    if slot { lock.endRead() }
    sw_mutex_lock(lock.queueLock)
    let targets = Array(subscribers.values)
    sw_mutex_unlock(lock.queueLock)
    for subscriber in targets { subscriber.yield(snapshot) }
  }

  func unsubscribe(_ id: UInt64) {
    sw_mutex_lock(lock.queueLock)
    subscribers[id] = nil
    if subscribers.isEmpty {
      sw_fetch_and(lock.state, ~(WriterState.observed | WriterState.dirty))
    }
    sw_mutex_unlock(lock.queueLock)
  }

  /// How many `changes()` streams are live; for tests.
  var subscriberCount: Int {
    sw_mutex_lock(lock.queueLock)
    defer { sw_mutex_unlock(lock.queueLock) }
    return subscribers.count
  }
}

extension ThreadSafeSingleWriter where Value: Sendable {
  /// The current value, then the value after each checkout or closure write that
  /// wrote something, in order.
  ///
  /// ```swift
  /// for await user in currentUser.changes() {
  ///   render(user)
  /// }
  /// ```
  ///
  /// A slow consumer gets the newest value, not a backlog (`bufferingNewest(1)`). The
  /// stream ends when the container is deallocated or the consumer stops iterating;
  /// it does not keep the container alive. Values are yielded outside any lock, so a
  /// consumer may write back to the container.
  public func changes() -> AsyncStream<Value> {
    AsyncStream(Value.self, bufferingPolicy: .bufferingNewest(1)) { subscribe($0) }
  }

  /// Registers `continuation` and yields it the current value, under the queue lock so
  /// that no publication can slip between the two. The read must not wait for a write
  /// in progress while holding that lock (the writer may need it to queue a write), so
  /// it only tries, and retries after the write ends.
  func subscribe(_ continuation: AsyncStream<Value>.Continuation) {
    let me = sw_current_thread()
    while true {
      sw_mutex_lock(lock.queueLock)
      var s = sw_load_relaxed(lock.state)
      if s & WriterState.writing == 0, sw_cas(lock.state, &s, s &+ WriterState.reader) {
        let id = nextSubscriberID
        nextSubscriberID += 1
        subscribers[id] = Subscriber(
          yield: { continuation.yield($0) }, finish: { continuation.finish() })
        sw_fetch_or(lock.state, WriterState.observed)
        continuation.yield(storage.pointee)
        lock.endRead()
        sw_mutex_unlock(lock.queueLock)
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return
      }
      sw_mutex_unlock(lock.queueLock)
      let holder = sw_uptr_load(lock.writingThread)
      if s & WriterState.writing != 0, holder == me || holder == scoped(me) {
        selfDeadlockFailure("changes() inside a write")
      }
      lock.sleep(expecting: &s)
    }
  }
}

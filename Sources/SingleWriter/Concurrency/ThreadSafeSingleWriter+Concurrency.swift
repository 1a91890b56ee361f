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
    if !lock.tryBeginClosureWrite() {
      try await waitForTurn()
      lock.beginClosureWrite()
    }
    defer {
      if !lock.tryEndClosureWrite() { finishClosureWrite() }
      _fixLifetime(self)  // `body` writes through `storage`, which the container frees
    }
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
    if !lock.tryCheckout(as: 0) { try await waitForTurn() }
    // A task can resume on any thread: no thread in particular holds this checkout, but
    // this task does, for the warning in `waitForTurn`.
    sw_uptr_store(lock.checkoutThread, 0)
    sw_uptr_store(lock.checkoutTask, currentTaskID())
    return ThreadSafeWriterProxy(owning: self)
  }

  /// Suspends until the queue hands this task the checkout, or throws if the task is
  /// cancelled first. The waiter's state decides which of the two happens.
  @usableFromInline
  func waitForTurn() async throws {
    let waiter = TaskWaiter()
    let me = currentTaskID()
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        waiter.continuation = continuation
        // Cancelled before it could queue: never queued, so it resumes itself.
        guard waiter.transition(from: TaskWaiter.new, to: TaskWaiter.waiting) else {
          waiter.continuation.take()!.resume(throwing: CancellationError())
          return
        }
        enqueue(.task(waiter))
        warnIfStillWaiting(waiter, task: me)
      }
    } onCancel: {
      // Before it queued, it will see this; after, whoever wins the transition resumes
      // it, and a cancelled entry is skipped when the queue reaches it.
      if waiter.transition(from: TaskWaiter.new, to: TaskWaiter.cancelled) { return }
      if waiter.transition(from: TaskWaiter.waiting, to: TaskWaiter.cancelled) {
        waiter.continuation.take()!.resume(throwing: CancellationError())
      }
    }
  }

  /// After a second, warns on standard error if `waiter` still waits while its own task
  /// holds the checkout through `checkout()`: a wait that can never end.
  ///
  /// Only a task that holds the checkout as it queues can be in that state (it cannot
  /// check out while it waits), so no other wait starts the timer.
  func warnIfStillWaiting(_ waiter: TaskWaiter, task: UInt) {
    guard task != 0, sw_uptr_load(lock.checkoutTask) == task else { return }
    Task { [weak self] in
      try? await Task.sleep(nanoseconds: 1_000_000_000)
      // `self` held across the loads: the container frees the lock's memory.
      guard let self, sw_load_acquire(waiter.state) == TaskWaiter.waiting,
        sw_uptr_load(self.lock.checkoutTask) == task
      else { return }
      sw_print_error(
        """
        SingleWriter: `await write` or `checkout()` has waited 1 s for a checkout that this \
        same task holds through a proxy from `checkout()`. This is a deadlock: release that \
        proxy before waiting for the writer again.
        """)
    }
  }
}

/// An id for the current task, or 0 outside one; only compared, never dereferenced.
func currentTaskID() -> UInt {
  withUnsafeCurrentTask { task in task.map { UInt(bitPattern: $0.hashValue) } ?? 0 }
}

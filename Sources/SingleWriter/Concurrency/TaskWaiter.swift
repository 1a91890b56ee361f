import SingleWriterAtomics

/// A task suspended in `await write` or `checkout()` until the queue reaches it.
@usableFromInline
final class TaskWaiter: @unchecked Sendable {
  // Sendable: `state` is only touched through atomics. `continuation` is written once,
  // before the `queue` transition publishes it, and read only by the one party that
  // wins the transition out of `waiting`.
  /// A ``TaskWaiterState``, changed only by `apply`.
  @usableFromInline let state: UnsafeMutablePointer<sw_atomic_u32>
  /// Resumed with `true` when the queue reaches the task, `false` if it was cancelled.
  @usableFromInline var continuation: CheckedContinuation<Bool, Never>?

  @usableFromInline init() {
    state = .allocate(capacity: 1)
    state.initialize(to: sw_atomic_u32())
  }

  deinit { state.deallocate() }

  /// The state now.
  @inlinable var current: TaskWaiterState { state.state() }

  /// Applies `event`: `true` if this call moved the state, `false` if the state found
  /// could not take it (another party moved it first).
  @inlinable @discardableResult
  func apply(_ event: TaskWaiterState.Event) -> Bool {
    state.apply(event, as: TaskWaiterState.self) != nil
  }

  /// Cancels the wait; returns the state it left (`new` or `waiting`), or `nil` if it was
  /// past them.
  @usableFromInline func cancel() -> TaskWaiterState? {
    state.apply(.cancel, as: TaskWaiterState.self)
  }

  /// The server, having woken a `checkout()`: waits up to `nanoseconds` for the task to run
  /// and claim the writer. `true` if it did; `false` if the offer expired first, and the
  /// task will compete for the writer later.
  @usableFromInline func awaitClaim(upTo nanoseconds: UInt64) -> Bool {
    let deadline = sw_monotonic_ns() &+ nanoseconds
    while true {
      if current == .claimed { return true }
      let now = sw_monotonic_ns()
      if now >= deadline { return !apply(.expire) }
      _ = sw_wait_for(state, TaskWaiterState.granted.rawValue, Int64(deadline &- now))
    }
  }

  /// The woken task: claims the writer, and blocks the few instructions it takes the
  /// server, which is waiting for this, to hand it over. `false` if the offer expired.
  @usableFromInline func claim() -> Bool {
    if current == .handed { return true }  // see handOverUnclaimed
    guard apply(.claim) else { return false }
    sw_wake_all(state)
    while current != .handed { sw_wait(state, TaskWaiterState.claimed.rawValue) }
    return true
  }

  /// The task's own enqueue took the free checkout for it: it is the task's before the
  /// task suspends, with no claim (the thread running that enqueue is the task's own).
  /// `false` if the task was cancelled first: the checkout is then the caller's to end.
  @usableFromInline func handOverUnclaimed() -> Bool {
    guard apply(.handOverUnclaimed) else { return false }
    continuation.take().unsafelyUnwrapped.resume(returning: true)
    return true
  }

  /// The server hands the checkout to a task that claimed it.
  @usableFromInline func handOver() {
    let handed = apply(.handOver)
    assert(handed, "handed over with no claim")
    sw_wake_all(state)
  }
}

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
  /// past them: a `checkout()` offered the writer once keeps its claim to it.
  @usableFromInline func cancel() -> TaskWaiterState? {
    state.apply(.cancel, as: TaskWaiterState.self)
  }
}

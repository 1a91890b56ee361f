import SingleWriterAtomics

/// A task suspended in `await write` or `checkout()` until the queue reaches it.
@usableFromInline
final class TaskWaiter: @unchecked Sendable {
  // Sendable: `state` is only touched through atomics. `continuation` is written once,
  // before the `waiting` transition publishes it, and read only by the one party that
  // wins the transition out of `waiting`.
  @usableFromInline let state: UnsafeMutablePointer<sw_atomic_u32>
  /// Resumed with `true` when the queue reaches the task, `false` if it was cancelled.
  @usableFromInline var continuation: CheckedContinuation<Bool, Never>?

  /// Not queued yet, queued with its continuation, reached by the queue (its write ran, or
  /// it was woken to take the writer), or cancelled.
  @usableFromInline static var new: UInt32 { 0 }
  @usableFromInline static var waiting: UInt32 { 1 }
  @usableFromInline static var granted: UInt32 { 2 }
  @usableFromInline static var cancelled: UInt32 { 3 }

  @usableFromInline init() {
    state = .allocate(capacity: 1)
    state.initialize(to: sw_atomic_u32())
  }

  deinit { state.deallocate() }

  /// Moves from `from` to `to`; false if another party moved it first.
  @usableFromInline func transition(from: UInt32, to: UInt32) -> Bool {
    var expected = from
    return sw_cas(state, &expected, to)
  }
}

/// A thread blocked in `withWriter` until the queue reaches it.
@usableFromInline
final class Waiter: @unchecked Sendable {
  // Sendable: `flag` is only touched through atomics, and the pointer never changes.
  @usableFromInline let flag: UnsafeMutablePointer<sw_atomic_u32>

  @usableFromInline init() {
    flag = .allocate(capacity: 1)
    flag.initialize(to: sw_atomic_u32())
  }

  deinit {
    flag.deallocate()
  }

  /// Blocks until `grant` is called, and returns what it said: `true` if the checkout is
  /// now the caller's. If `suspect` still holds after a second, warns once on standard
  /// error: the wait may be on a proxy this same thread holds, which no lock could tell
  /// from a slow writer.
  @usableFromInline @discardableResult
  func wait(warningIf suspect: () -> Bool) -> Bool {
    var warned = false
    while true {
      let granted = sw_load_acquire(flag)
      if granted != 0 { return granted == Waiter.checkout }
      if !sw_wait_for(flag, 0, 1_000_000_000), !warned, suspect() {
        warned = true
        sw_print_error(
          """
          SingleWriter: withWriter has waited 1 s for a checkout that this same thread \
          holds through a proxy (from `writer`, `checkout()`, or a `writeNext` closure that \
          kept it). If this thread still holds that proxy, this is a deadlock: release it \
          before calling withWriter.
          """)
      }
    }
  }

  @usableFromInline static var checkout: UInt32 { 1 }
  @usableFromInline static var dismissed: UInt32 { 2 }

  /// Hands the checkout over, or (`checkout: false`) says it is not coming: someone else
  /// will serve. The caller keeps the waiter alive until this returns.
  @usableFromInline func grant(checkout: Bool = true) {
    sw_store_release(flag, checkout ? Waiter.checkout : Waiter.dismissed)
    sw_wake_all(flag)
  }
}

/// Marks a thread id in `checkoutThread` as held for the length of a closure on that
/// thread (`tryWrite`, `withWriter`, `await write` or a `writeNext` body), so waiting
/// for the checkout from that thread can never end. Thread ids keep the low bit clear.
@inlinable
func scoped(_ thread: UInt) -> UInt { thread | 1 }

/// Stops a wait that could never end because this thread holds what it waits for.
@usableFromInline @inline(never)
func selfDeadlockFailure(_ message: StaticString) -> Never {
  fatalError("\(message)")
}

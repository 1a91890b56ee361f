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

  /// Not queued yet, queued with its continuation, reached by the queue (its write is
  /// running, or it was woken to take the writer), or cancelled. A woken `checkout()` then
  /// claims the writer, or finds its offer expired; a claimed one is handed the checkout.
  /// An async write's server marks it done once the write is whole.
  @usableFromInline static var new: UInt32 { 0 }
  @usableFromInline static var waiting: UInt32 { 1 }
  @usableFromInline static var granted: UInt32 { 2 }
  @usableFromInline static var cancelled: UInt32 { 3 }
  @usableFromInline static var claimed: UInt32 { 4 }
  @usableFromInline static var expired: UInt32 { 5 }
  @usableFromInline static var handed: UInt32 { 6 }
  @usableFromInline static var done: UInt32 { 7 }

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

  /// The server, having woken a `checkout()`: waits up to `nanoseconds` for the task to run
  /// and claim the writer. `true` if it did; `false` if the offer expired first, and the
  /// task will compete for the writer later.
  @usableFromInline func awaitClaim(upTo nanoseconds: Int64) -> Bool {
    let deadline = sw_monotonic_ns() &+ UInt64(nanoseconds)
    while true {
      if sw_load_acquire(state) == TaskWaiter.claimed { return true }
      let now = sw_monotonic_ns()
      if now >= deadline {
        return !transition(from: TaskWaiter.granted, to: TaskWaiter.expired)
      }
      _ = sw_wait_for(state, TaskWaiter.granted, Int64(deadline &- now))
    }
  }

  /// The woken task: claims the writer, and blocks the few instructions it takes the
  /// server, which is waiting for this, to hand it over. `false` if the offer expired.
  @usableFromInline func claim() -> Bool {
    if sw_load_acquire(state) == TaskWaiter.handed { return true }  // see handOverUnclaimed
    guard transition(from: TaskWaiter.granted, to: TaskWaiter.claimed) else { return false }
    sw_wake_all(state)
    while sw_load_acquire(state) != TaskWaiter.handed { sw_wait(state, TaskWaiter.claimed) }
    return true
  }

  /// The task's own enqueue took the free checkout for it: it is the task's before the
  /// task suspends, with no claim (the thread running that enqueue is the task's own).
  /// `false` if the task was cancelled first: the checkout is then the caller's to end.
  @usableFromInline func handOverUnclaimed() -> Bool {
    guard transition(from: TaskWaiter.waiting, to: TaskWaiter.handed) else { return false }
    continuation.take().unsafelyUnwrapped.resume(returning: true)
    return true
  }

  /// The server hands the checkout to a task that claimed it.
  @usableFromInline func handOver() {
    sw_store_release(state, TaskWaiter.handed)
    sw_wake_all(state)
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
  /// now the caller's. While a thread serving the queue holds `lock`'s gate, sleeps on the
  /// gate, so that the OS boosts that thread; the server releases the gate before it grants
  /// anything, and this looks at the gate again every millisecond, since servers change.
  /// If `suspect` still holds after a second, warns once on standard error: the wait may be
  /// on a proxy this same thread holds, which no lock could tell from a slow writer.
  @usableFromInline @discardableResult
  func wait(sleepingOnGateOf lock: WriterLock, warningIf suspect: () -> Bool) -> Bool {
    let me = sw_current_thread()
    var warned = false
    var since = sw_monotonic_ns()
    while true {
      let granted = sw_load_acquire(flag)
      if granted != 0 { return granted == Waiter.checkout }
      if lock.sleepOnGate(me) || sw_wait_for(flag, 0, 1_000_000) { continue }
      let now = sw_monotonic_ns()
      guard now &- since >= 1_000_000_000 else { continue }
      since = now
      if !warned, suspect() {
        warned = true
        sw_print_error(
          """
          SingleWriter: withWriter has waited 1 s for a checkout taken through a proxy on \
          this same thread or by this task (from `writer`, `checkout()`, or a `writeNext` \
          closure that kept it). If this thread or task still holds that proxy, this is a \
          deadlock: release it before calling withWriter.
          """)
      }
    }
  }

  @usableFromInline static var checkout: UInt32 { 1 }
  @usableFromInline static var dismissed: UInt32 { 2 }
  @usableFromInline static var withdrawn: UInt32 { 3 }

  /// A successor's wait: at most `nanoseconds`, then it withdraws, unless the server's
  /// offer came first. Returns what happened: `checkout`, `dismissed` or `withdrawn`.
  @usableFromInline func waitOrWithdraw(after nanoseconds: Int64) -> UInt32 {
    let deadline = sw_monotonic_ns() &+ UInt64(nanoseconds)
    while true {
      let outcome = sw_load_acquire(flag)
      if outcome != 0 { return outcome }
      let now = sw_monotonic_ns()
      if now >= deadline {
        var expected: UInt32 = 0
        return sw_cas(flag, &expected, Waiter.withdrawn) ? Waiter.withdrawn : expected
      }
      _ = sw_wait_for(flag, 0, Int64(deadline &- now))
    }
  }

  /// Hands the checkout over, or (`checkout: false`) says it is not coming: someone else
  /// will serve. `false` if the waiter withdrew first (only a successor does). The caller
  /// keeps the waiter alive until this returns.
  @usableFromInline @discardableResult
  func grant(checkout: Bool = true) -> Bool {
    var expected: UInt32 = 0
    guard sw_cas(flag, &expected, checkout ? Waiter.checkout : Waiter.dismissed) else {
      return false
    }
    sw_wake_all(flag)
    return true
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

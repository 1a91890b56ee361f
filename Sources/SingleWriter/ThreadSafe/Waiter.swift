import SingleWriterAtomics

/// A thread blocked in `withWriter`, or chosen to take over serving, until the serving
/// thread hands it the checkout.
@usableFromInline
final class Waiter: @unchecked Sendable {
  // Sendable: `flag` is only touched through atomics, and the pointer never changes.
  /// A ``WaiterState``, changed only by `apply`.
  @usableFromInline let flag: UnsafeMutablePointer<sw_atomic_u32>

  @usableFromInline init() {
    flag = .allocate(capacity: 1)
    flag.initialize(to: sw_atomic_u32())
  }

  deinit {
    flag.deallocate()
  }

  /// The state now.
  @inlinable var current: WaiterState { flag.state() }

  /// Blocks until the server decides, and returns what it decided: `true` if the
  /// checkout is now the caller's. While a thread serving the queue holds `lock`'s gate,
  /// sleeps on the gate, so that the OS boosts that thread; the server releases the gate
  /// before it grants anything, and this looks at the gate again now and then, since
  /// servers change. Each time that look finds no server, it tries `takingBack`, which
  /// takes the checkout from a `checkout()` offered it long ago whose task has still not
  /// run (`true`: the checkout is the caller's). After a second, warns once on standard
  /// error if `suspect` holds (the wait may be on a proxy this same thread holds, which no
  /// lock could tell from a slow writer), or if the wait may starve a task that holds the
  /// checkout of the pool's threads (`blockedWaitMayStarveHolder`).
  @usableFromInline @discardableResult
  func wait(
    sleepingOnGateOf lock: WriterLock, takingBack takeBack: () -> Bool,
    warningIf suspect: () -> Bool
  ) -> Bool {
    let me = sw_current_thread()
    var wait = LongWait()
    _ = wait.isDue()  // starts the clock
    while true {
      let state = current
      if state != .waiting { return state == .handedTheCheckout }
      if lock.sleepOnGate(me)
        || sw_wait_for(flag, WaiterState.waiting.rawValue, Int64(HandOffPolicy.gateRecheck))
      {
        continue
      }
      if takeBack() { return true }
      guard wait.isDue() else { continue }
      if suspect() {
        wait.warn(
          """
          SingleWriter: withWriter has waited 1 s for a checkout taken through a proxy on \
          this same thread or by this task (from `writer`, `checkout()`, or a `writeNext` \
          closure that kept it). If this thread or task still holds that proxy, this is a \
          deadlock: release it before calling withWriter.
          """)
      } else if lock.blockedWaitMayStarveHolder() {
        wait.warn(
          """
          SingleWriter: withWriter (or a sync transaction) in a task has waited 1 s, blocking \
          its thread, for a checkout held elsewhere (a proxy, or an async transaction). If \
          a task holds it across an `await`, needing the cooperative pool to go on, and \
          every thread of the pool waits like this one, the holder never goes on to release \
          it. In async code, use `await write` or `await transaction`.
          """)
      }
    }
  }

  /// A successor's wait: at most `nanoseconds`, then it withdraws, unless the server's
  /// decision came first. Returns how it ended: never `waiting`.
  @usableFromInline func waitOrWithdraw(after nanoseconds: UInt64) -> WaiterState {
    let deadline = sw_monotonic_ns() &+ nanoseconds
    while true {
      let state = current
      if state != .waiting { return state }
      let now = sw_monotonic_ns()
      if now >= deadline {
        return flag.apply(.withdraw, as: WaiterState.self) == nil ? current : .withdrawn
      }
      _ = sw_wait_for(flag, WaiterState.waiting.rawValue, Int64(deadline &- now))
    }
  }

  /// Hands the checkout over, or (`checkout: false`) says it is not coming: someone else
  /// will serve. `false` if the waiter withdrew first (only a successor does). The caller
  /// keeps the waiter alive until this returns.
  @usableFromInline @discardableResult
  func grant(checkout: Bool = true) -> Bool {
    guard flag.apply(checkout ? .grant : .dismiss, as: WaiterState.self) != nil else {
      return false
    }
    sw_wake_all(flag)
    return true
  }
}

import SingleWriterAtomics

/// Bits of a ``ThreadSafeSingleWriter``'s 32-bit state word.
///
/// One word holds both the long-lived checkout (`writer`) and the short-lived lock on
/// the value (`writing` or a reader count), so a closure write takes and drops both
/// with one compare-and-exchange each, as cheap as a mutex.
@usableFromInline
enum WriterState {
  /// Someone holds the checkout: a proxy, a closure write or the queue drain.
  @inlinable static var writer: UInt32 { 1 }
  /// The pending queue is not empty. Changed only under the queue lock; implies `writer`.
  @inlinable static var queued: UInt32 { 2 }
  /// A write access holds the value exclusively.
  @inlinable static var writing: UInt32 { 4 }
  /// A thread sleeps in `sw_wait` for `writing` or the readers to clear.
  @inlinable static var waiters: UInt32 { 8 }
  /// Someone listens to `changes()`: ending a checkout publishes the value.
  @inlinable static var observed: UInt32 { 16 }
  /// Written since the last publication; set only while `observed` (`observed << 1`).
  @inlinable static var dirty: UInt32 { 32 }
  /// One reader; the bits from here up count the readers copying the value.
  @inlinable static var reader: UInt32 { 64 }
  @inlinable static var readerShift: UInt32 { 6 }
  /// Bits that do not stop a write access from starting.
  @inlinable static var compatibleWithWriting: UInt32 {
    writer | queued | waiters | observed | dirty
  }
  /// `dirty` if `s` is observed, else 0: a write marks itself without a branch.
  @inlinable static func dirtyIfObserved(_ s: UInt32) -> UInt32 { (s & observed) << 1 }
}

/// A task suspended in `write` or `checkout` until the queue reaches it.
@usableFromInline
final class TaskWaiter: @unchecked Sendable {
  // Sendable: both fields are touched only under the container's queue lock, or by
  // the drain after it has popped this waiter from the queue under that lock.
  @usableFromInline var continuation: CheckedContinuation<Void, any Error>?
  @usableFromInline var isCancelled = false
  @usableFromInline init() {}
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

  /// Blocks until `grant` is called. The checkout is then the caller's. If `suspect`
  /// still holds after a second, warns once on standard error: the wait may be on a
  /// proxy this same thread holds, which no lock could tell from a slow writer.
  @usableFromInline func wait(warningIf suspect: () -> Bool) {
    var warned = false
    while sw_load_acquire(flag) == 0 {
      if !sw_wait_for(flag, 0, 1_000_000_000), !warned, suspect() {
        warned = true
        sw_print_error(
          """
          SingleWriter: withWriter has waited 1 s for a writer that was checked out on this \
          same thread. If this thread still holds that proxy, this is a deadlock: release it \
          before calling withWriter.
          """)
      }
    }
  }

  /// Hands the checkout over. The caller keeps the waiter alive until this returns.
  @usableFromInline func grant() {
    sw_store_release(flag, 1)
    sw_wake_all(flag)
  }
}

/// Marks a thread id as held for the length of a closure on that thread. In
/// `checkoutThread`: `tryWrite`, `withWriter` or a `writeNext` body, so waiting on it
/// from that thread can never end. In `writingThread`: a `writeNext` body, which holds
/// the value for its whole run, so its own proxy writes and reads need no lock. Thread
/// ids are pointers, so the low bit is free.
@inlinable
func scoped(_ thread: UInt) -> UInt { thread | 1 }

/// Stops a `withWriter` that would wait for a checkout its own thread holds.
@usableFromInline @inline(never)
func selfDeadlockFailure(_ what: StaticString) -> Never {
  fatalError(
    """
    \(what) on the thread that holds this ThreadSafeSingleWriter's writer: it would wait \
    forever. Release the proxy first, use tryWrite or writeNext, or work on the inout value \
    you already have.
    """
  )
}

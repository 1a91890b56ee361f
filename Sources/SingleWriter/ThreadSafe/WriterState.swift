import SingleWriterAtomics

/// Bits of a ``ThreadSafeSingleWriter``'s 32-bit state word.
///
/// One word holds both the long-lived checkout (`writer`) and the short-lived lock on
/// the value (`writing` or a reader count), so a closure write takes and drops both
/// with one compare-and-exchange each, as cheap as a mutex.
@usableFromInline
enum WriterState {
  /// Someone holds the checkout: a proxy, a closure write or the queue's runner.
  @inlinable static var writer: UInt32 { 1 }
  /// Writes wait in the queue: the checkout cannot be taken by a newcomer, and ending it
  /// runs the queue. Cleared only by the release that leaves the queue empty.
  @inlinable static var queued: UInt32 { 2 }
  /// A write access holds the value exclusively.
  @inlinable static var writing: UInt32 { 4 }
  /// A thread sleeps in `sw_wait` for `writing` or the readers to clear.
  @inlinable static var waiters: UInt32 { 8 }
  /// Someone listens to `changes()`: ending a checkout publishes the value.
  @inlinable static var observed: UInt32 { 16 }
  /// Written since the last publication; set only while `observed` (`observed << 1`).
  @inlinable static var dirty: UInt32 { 32 }
  /// A `withWriter` is parked until the checkout ends; the release wakes one.
  @inlinable static var parked: UInt32 { 64 }
  /// One reader; the bits from here up count the readers copying the value.
  @inlinable static var reader: UInt32 { 128 }
  @inlinable static var readerShift: UInt32 { 7 }
  /// Bits that do not stop a write access from starting.
  @inlinable static var compatibleWithWriting: UInt32 {
    writer | queued | waiters | observed | dirty | parked
  }
  /// Bits that a free checkout may carry and a closure write may start over.
  @inlinable static var idle: UInt32 { waiters | observed | dirty | parked }
  /// `dirty` if `s` is observed, else 0: a write marks itself without a branch.
  @inlinable static func dirtyIfObserved(_ s: UInt32) -> UInt32 { (s & observed) << 1 }
}

/// A task suspended in `write` or `checkout` until the queue reaches it.
@usableFromInline
final class TaskWaiter: @unchecked Sendable {
  // Sendable: `state` is only touched through atomics. `continuation` is written once,
  // before the `waiting` transition publishes it, and read only by the one party that
  // wins the transition out of `waiting`.
  @usableFromInline let state: UnsafeMutablePointer<sw_atomic_u32>
  @usableFromInline var continuation: CheckedContinuation<Void, any Error>?

  /// Not queued yet, queued with its continuation, handed the checkout, or cancelled.
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
          SingleWriter: withWriter has waited 1 s for a checkout that this same thread \
          holds through a proxy (from `writer`, `checkout()`, or a `writeNext` closure that \
          kept it). If this thread still holds that proxy, this is a deadlock: release it \
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

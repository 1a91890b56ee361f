/// Marks a thread id in `checkoutThread` as held for the length of a closure on that
/// thread (`tryWrite`, `withWriter`, `await write` or a `writeNext` body), so waiting
/// for the checkout from that thread can never end. Thread ids keep the low bit clear.
@inlinable
func scoped(_ thread: UInt) -> UInt { thread | 1 }

/// Whether a `checkoutThread` value marks a closure running on its thread now: a holder
/// that is running, as opposed to a proxy's holder, who may be anywhere, or nobody.
@inlinable
func isScoped(_ checkoutThread: UInt) -> Bool { checkoutThread & 1 != 0 }

/// Stops a wait that could never end because this thread holds what it waits for.
@usableFromInline @inline(never)
func selfDeadlockFailure(_ message: StaticString) -> Never {
  fatalError("\(message)")
}

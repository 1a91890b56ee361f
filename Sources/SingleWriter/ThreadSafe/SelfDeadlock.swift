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

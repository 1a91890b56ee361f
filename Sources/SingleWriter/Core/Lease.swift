/// Where a writer proxy stands with its container.
@usableFromInline
enum Lease: UInt8 {
  /// Parked as the container's spare: not checked out, writes trap.
  case idle
  /// Handed to a closure for one write; the container takes it back afterwards.
  case lent
  /// Checked out until ARC frees the proxy, whose `deinit` ends the checkout.
  case owning
}

/// Stops on a write through a proxy whose checkout has ended, naming the proxy's type.
/// `fatalError`, not `precondition`, so the message survives release builds; out of line
/// to keep the accessors small.
@usableFromInline @inline(never)
func staleProxyFailure(_ proxy: StaticString = "WriterProxy") -> Never {
  fatalError(
    """
    write through a \(proxy) whose checkout has ended: a proxy passed to writeNext \
    is only valid inside the closure, unless the closure keeps a strong reference to it
    """
  )
}

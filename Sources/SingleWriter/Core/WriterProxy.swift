/// The one handle that may write a ``SingleWriter``'s value.
///
/// Only one proxy per container is alive at a time. Writes go straight to the
/// container's storage, in place, so `read` sees them at once and
/// `proxy.write.items.append(x)` does not copy the array. The proxy keeps its
/// container alive; the checkout ends when ARC releases the proxy.
///
/// ```swift
/// if let proxy = currentUser.writer {
///   proxy.write.name = "Joe"
///   proxy.write.id += 1
/// }  // released here
/// ```
public final class WriterProxy<Value> {
  // Unretained so the container can park an idle proxy as its spare without a
  // reference cycle; an owning proxy holds a manual +1 on it (see `keep`).
  @usableFromInline unowned(unsafe) let owner: SingleWriter<Value>
  // The container's storage, so writes never touch, or retain, the container.
  @usableFromInline let value: UnsafeMutablePointer<Value>
  // Only the thread that uses the container touches this.
  @usableFromInline @exclusivity(unchecked) var lease: Lease

  @inlinable
  init(owner: SingleWriter<Value>, lease: Lease) {
    self.owner = owner
    value = owner.storage
    self.lease = .lent
    if lease == .owning { keep() }
  }

  /// The container's value, read and mutated in place.
  @inlinable
  public var write: Value {
    // `_fixLifetime(self)` after each access: the access goes through `value`, not
    // `self`, so without it an optimizer may free the proxy, and so end the checkout and
    // run the queue, as soon as `value` is loaded, before the caller's mutation is
    // stored. Release builds did: `held?.write.append(0); held = nil` lost a queued write.
    _read {
      if lease == .idle { staleProxyFailure() }
      #if DEBUG
        owner.accessLog.check(.read)
      #endif
      defer { _fixLifetime(self) }
      yield value.pointee
    }
    _modify {
      if lease == .idle { staleProxyFailure() }
      owner.isDirty = true
      #if DEBUG
        // A section for the access, not only a check: two tasks that may each use the
        // proxy (its holder, gone off its actor, and another task of that actor) must not
        // use it at once, and only their own sections can show it.
        owner.accessLog.enter(.write)
        defer { owner.accessLog.leave(.write) }
      #endif
      defer { _fixLifetime(self) }
      yield &value.pointee
    }
  }

  /// Makes this proxy own the checkout: it retains the container, and its
  /// `deinit` ends the checkout.
  @inlinable
  func keep() {
    lease = .owning
    _ = Unmanaged.passUnretained(owner).retain()
  }

  deinit {
    guard lease == .owning else { return }
    let owner = Unmanaged.passUnretained(self.owner)
    owner._withUnsafeGuaranteedRef { $0.endCheckout() }
    owner.release()
  }
}

@available(*, unavailable, message: "SingleWriter is not thread-safe; use ThreadSafeSingleWriter")
extension WriterProxy: Sendable {}

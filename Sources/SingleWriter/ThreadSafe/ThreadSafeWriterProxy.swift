import SingleWriterAtomics

/// The one handle that may write a ``ThreadSafeSingleWriter``'s value, from any thread.
///
/// Writes mutate the container's storage in place, under a lock held only for the
/// access, so readers on other threads see each write whole and at once. The proxy
/// keeps its container alive; the checkout ends when ARC releases the proxy, on
/// whichever thread that happens, and the queued writes then run on that thread.
///
/// ```swift
/// if let writer = session.writer {
///   Task.detached {
///     writer.write.token = await refreshToken()
///   }  // released when the task ends
/// }
/// ```
public final class ThreadSafeWriterProxy<Value> {
  // The container is unretained so it can keep an idle proxy as its spare without a
  // cycle; a proxy that owns a checkout holds a manual +1 on it (`becomeOwner`). Writes
  // go through `lock` and `value` alone, so they never retain the container.
  @usableFromInline unowned(unsafe) let owner: ThreadSafeSingleWriter<Value>
  @usableFromInline let lock: WriterLock
  @usableFromInline let value: UnsafeMutablePointer<Value>
  /// Whether this proxy ends a checkout when freed. Set once, by the checkout holder,
  /// before any other thread could drop the last reference, so `deinit` sees it.
  @usableFromInline @exclusivity(unchecked) var isOwner = false

  /// A proxy for lending to `writeNext` bodies; it does not retain `owner`.
  @inlinable
  init(lentBy owner: ThreadSafeSingleWriter<Value>) {
    self.owner = owner
    lock = owner.lock
    value = owner.storage
  }

  /// A proxy that owns the checkout until ARC releases it.
  @inlinable
  convenience init(owning owner: ThreadSafeSingleWriter<Value>) {
    self.init(lentBy: owner)
    becomeOwner()
  }

  /// The container's value, read and mutated in place.
  @inlinable
  public var write: Value {
    _read {
      lock.beginRead()
      defer { lock.endRead() }
      yield value.pointee
    }
    _modify {
      lock.beginWriting()
      defer { lock.endWriting() }
      yield &value.pointee
    }
  }

  /// Makes this proxy own the checkout: it retains the container, and its `deinit`
  /// ends the checkout.
  @inlinable
  func becomeOwner() {
    isOwner = true
    _ = Unmanaged.passUnretained(owner).retain()
  }

  deinit {
    // A lent or retired proxy never touches its container here: it may be gone.
    guard isOwner else { return }
    if !lock.tryEndCheckout() { owner.finishCheckout(owner) }
    Unmanaged.passUnretained(owner).release()
  }
}

// Sendable: `owner`, `lock` and `value` never change, `isOwner` is written once before
// the proxy can be shared, and every access to the value goes through the container's
// lock.
extension ThreadSafeWriterProxy: @unchecked Sendable where Value: Sendable {}

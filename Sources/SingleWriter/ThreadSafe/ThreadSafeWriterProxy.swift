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
  // Nothing here changes after `init`, so a proxy needs no synchronization of its own
  // when it is reused or sent. Whether it ends a checkout follows from how it was
  // handed out. The container is unretained so it can keep an idle proxy as its spare
  // without a cycle; a proxy out in the world holds a manual +1 on it (`retainOwner`).
  // Writes go through `lock` and `value` alone, so they never retain the container.
  @usableFromInline unowned(unsafe) let owner: ThreadSafeSingleWriter<Value>
  @usableFromInline let lock: WriterLock
  @usableFromInline let value: UnsafeMutablePointer<Value>

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
    retainOwner()
  }

  /// The container's value, read and mutated in place.
  @inlinable
  public var write: Value {
    _read {
      let slot = lock.beginRead()
      defer { if slot { lock.endRead() } }
      yield value.pointee
    }
    _modify {
      let took = lock.beginWriting()
      defer { if took { lock.endWriting() } }
      yield &value.pointee
    }
  }

  @inlinable
  func retainOwner() {
    _ = Unmanaged.passUnretained(owner).retain()
  }

  deinit {
    guard !owner.isTearingDown else { return }
    if !lock.tryEndCheckout() { owner.finishCheckout(owner) }
    Unmanaged.passUnretained(owner).release()
  }
}

// Sendable: every stored property is immutable, and every access to the value goes
// through the container's lock.
extension ThreadSafeWriterProxy: @unchecked Sendable where Value: Sendable {}

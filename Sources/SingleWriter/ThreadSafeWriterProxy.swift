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
  // No mutable state: whether this proxy ends a checkout follows from how it was
  // handed out, so nothing here needs synchronizing when it is reused or sent.
  // Unretained so the container can keep an idle proxy as its spare without a cycle;
  // a proxy out in the world holds a manual +1 on it (`retainOwner`).
  @usableFromInline unowned(unsafe) let owner: ThreadSafeSingleWriter<Value>

  @inlinable
  init(owner: ThreadSafeSingleWriter<Value>) {
    self.owner = owner
  }

  /// The container's value, read and mutated in place.
  @inlinable
  public var write: Value {
    _read {
      owner.beginRead()
      defer { owner.endRead() }
      yield owner.value
    }
    _modify {
      owner.beginWriting()
      defer { owner.endWriting() }
      yield &owner.value
    }
  }

  @inlinable
  func retainOwner() {
    _ = Unmanaged.passUnretained(owner).retain()
  }

  deinit {
    guard !owner.isTearingDown else { return }
    owner.endCheckout()
    Unmanaged.passUnretained(owner).release()
  }
}

// Sendable: the only stored property is immutable, and every access to the value
// goes through the container's synchronized paths.
extension ThreadSafeWriterProxy: @unchecked Sendable where Value: Sendable {}

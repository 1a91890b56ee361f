import SingleWriterAtomics

/// The one handle that may write a ``ThreadSafeSingleWriter``'s value, from any thread.
///
/// Writes mutate the container's storage in place, under a lock held only for the
/// access, so readers on other threads see each write whole and at once. The proxy
/// keeps its container alive; the checkout ends when ARC releases the proxy, on
/// whichever thread that happens, and the writes queued behind it then run on that
/// thread.
///
/// ```swift
/// if let writer = session.writer {
///   Task.detached {
///     writer.write.token = await refreshToken()
///   }  // released when the task ends
/// }
/// ```
public final class ThreadSafeWriterProxy<Value: ~Copyable> {
  // The container is unretained so it can keep an idle proxy as its spare without a
  // cycle; a proxy that owns a checkout holds a manual +1 on it (`becomeOwner`). Writes
  // go through `lock` and `value` alone, so they never retain the container.
  @usableFromInline unowned(unsafe) let owner: ThreadSafeSingleWriter<Value>
  @usableFromInline let lock: WriterLock
  @usableFromInline let value: UnsafeMutablePointer<Value>
  /// What this proxy does when freed: nothing (lent, or the container's spare), end its
  /// checkout and release the container (owner), or only release it (retired). Set by
  /// the checkout holder just before `endLend` publishes it; `deinit` reads that first.
  @usableFromInline @exclusivity(unchecked) var role = Role.lent
  /// The `writeNext` lend this proxy was last lent for; 0 for a proxy that owns its
  /// checkout from the start. Accesses check it against the container's current lend.
  /// Written only while nothing but the container can reach the proxy.
  @usableFromInline @exclusivity(unchecked) var generation: UInt32 = 0

  @usableFromInline
  enum Role: UInt8 { case lent, owner, retired }

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

  /// Makes this proxy own the checkout: it retains the container, and its `deinit`
  /// ends the checkout.
  @inlinable
  func becomeOwner() {
    role = .owner
    _ = Unmanaged.passUnretained(owner).retain()
  }

  /// Makes this proxy a dead end that keeps its container alive: every access stops the
  /// program (its lend generation is over) without ever touching freed memory.
  @inlinable
  func retire() {
    role = .retired
    _ = Unmanaged.passUnretained(owner).retain()
  }

  deinit {
    // The container, or an owner's or a retired proxy's hold on it, keeps `lock` alive.
    _ = sw_load_acquire(lock.lendWord)
    // The last access, maybe on another thread, ended with a release on `proxy_access`:
    // acquired, so that it is ordered before the checkout's end even for tools that do
    // not see ARC's atomics.
    _ = sw_load_acquire(lock.proxyAccess)
    guard role != .lent else { return }
    #if DEBUG
      if role == .owner { LockOrderCheck.checkoutEnded(ObjectIdentifier(owner)) }
    #endif
    if role == .owner, !lock.tryEndCheckout() { owner.finishCheckout(owner) }
    Unmanaged.passUnretained(owner).release()
  }
}

// Proxies exist for any value, since the container keeps a spare one, but only a
// `Sendable` (so copyable) value can be checked out; the accessor is specialized and
// inlined as a copyable one.
extension ThreadSafeWriterProxy {
  /// The container's value, read and mutated in place.
  ///
  /// Each access holds the value for as long as it lasts, and every `read` waits for it
  /// meanwhile. An `async` mutating method called through it,
  /// `await proxy.write.refresh()`, holds the access across every `await` inside it: keep
  /// such calls out of shared code (await first, then assign), since with as many readers
  /// blocked as the cooperative pool has threads, the task inside the access never resumes
  /// (a read in another task that waits a second for it warns on standard error).
  ///
  /// ```swift
  /// let token = await fetchToken()  // not `await proxy.write.fetchToken()`
  /// proxy.write.token = token
  /// ```
  @inlinable
  public var write: Value {
    // `_fixLifetime(self)`: the proxy lives until its access has ended (see WriterProxy).
    _read {
      lock.beginRead()
      defer {
        lock.endRead()
        _fixLifetime(self)
      }
      lock.checkLend(generation)
      yield value.pointee
    }
    _modify {
      lock.beginProxyWriting()
      defer {
        lock.endProxyWriting()
        _fixLifetime(self)
      }
      lock.checkLend(generation)
      yield &value.pointee
    }
  }
}

// Sendable: `owner`, `lock` and `value` never change; `role` and `generation` are
// written only while the container alone can reach the proxy, or, for `role`, just before
// the lend word publishes it; every access to the value goes through the container's
// lock and checks the lend it was made for.
extension ThreadSafeWriterProxy: @unchecked Sendable where Value: Sendable {}

import SingleWriterAtomics

/// A writer-preferring reader-writer lock, at an address that never moves.
///
/// The lock is `sw_rwlock` from SingleWriterAtomics: while a writer waits, no new reader
/// gets in, so a steady stream of readers cannot starve a write (glibc's default
/// `pthread_rwlock_t` would), and the same code runs on every platform. The uncontended
/// paths are one or two inlined atomic instructions. It lives in its own allocation
/// because threads wait on its address.
@usableFromInline
struct ReadWriteLock {
  @usableFromInline let lock: UnsafeMutablePointer<sw_rwlock>

  init() {
    lock = .allocate(capacity: 1)
    lock.initialize(to: sw_rwlock())
  }

  /// Frees the lock. Call once, when no thread holds or waits for it.
  func destroy() {
    lock.deinitialize(count: 1)
    lock.deallocate()
  }

  @inlinable
  func lockShared() {
    if sw_rwlock_lock_shared(lock) != SW_RWLOCK_OK { reentrantStoreFailure() }
  }

  @inlinable
  func unlockShared() {
    sw_rwlock_unlock_shared(lock)
  }

  @inlinable
  func lockExclusive() {
    if sw_rwlock_lock_exclusive(lock) != SW_RWLOCK_OK { reentrantStoreFailure() }
  }

  @inlinable
  func unlockExclusive() {
    sw_rwlock_unlock_exclusive(lock)
  }
}

/// Stops on a call into a ``BarrierStore`` from inside one of its own operations,
/// which would otherwise wait for itself forever. The lock refuses only a thread that
/// already holds it exclusively: a key's `hash(into:)` or `==` that called back into the
/// store during a write.
@usableFromInline @inline(never)
func reentrantStoreFailure() -> Never {
  fatalError(
    """
    BarrierStore used from inside one of its own operations (a key's hash(into:) or ==, \
    or code they call); this call would wait for itself forever
    """
  )
}

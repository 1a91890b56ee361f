#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Android)
  import Android
#elseif canImport(Darwin)
  import Darwin
#elseif os(Windows)
  import WinSDK
#endif

/// The platform's reader-writer lock, at an address that never moves.
///
/// A `pthread_rwlock_t` must not be copied or moved once initialized, so it lives in
/// its own allocation rather than in a stored property. Windows has no pthreads; an
/// `SRWLOCK` is its equivalent.
@usableFromInline
struct ReadWriteLock {
  #if os(Windows)
    @usableFromInline let lock: UnsafeMutablePointer<SRWLOCK>
  #else
    @usableFromInline let lock: UnsafeMutablePointer<pthread_rwlock_t>
  #endif

  init() {
    lock = .allocate(capacity: 1)
    #if os(Windows)
      InitializeSRWLock(lock)
    #else
      lock.initialize(to: pthread_rwlock_t())
      let result = pthread_rwlock_init(lock, nil)
      if result != 0 { readWriteLockFailure("pthread_rwlock_init", result) }
    #endif
  }

  /// Frees the lock. Call once, when no thread holds or waits for it.
  func destroy() {
    #if !os(Windows)
      pthread_rwlock_destroy(lock)
      lock.deinitialize(count: 1)
    #endif
    lock.deallocate()
  }

  @inlinable
  func lockShared() {
    #if os(Windows)
      AcquireSRWLockShared(lock)
    #else
      let result = pthread_rwlock_rdlock(lock)
      if result != 0 { readWriteLockFailure("pthread_rwlock_rdlock", result) }
    #endif
  }

  @inlinable
  func unlockShared() {
    #if os(Windows)
      ReleaseSRWLockShared(lock)
    #else
      pthread_rwlock_unlock(lock)
    #endif
  }

  @inlinable
  func lockExclusive() {
    #if os(Windows)
      AcquireSRWLockExclusive(lock)
    #else
      let result = pthread_rwlock_wrlock(lock)
      if result != 0 { readWriteLockFailure("pthread_rwlock_wrlock", result) }
    #endif
  }

  @inlinable
  func unlockExclusive() {
    #if os(Windows)
      ReleaseSRWLockExclusive(lock)
    #else
      pthread_rwlock_unlock(lock)
    #endif
  }
}

#if !os(Windows)
  /// Stops on a failed lock call. The one failure a correct program can reach is
  /// `EDEADLK`: the calling thread already holds the write lock, which for a
  /// ``BarrierStore`` means a key's `hash(into:)` or `==` called back into the store.
  @usableFromInline @inline(never)
  func readWriteLockFailure(_ call: StaticString, _ result: Int32) -> Never {
    if result == EDEADLK { reentrantStoreFailure() }
    fatalError("\(call) failed with error \(result)")
  }
#endif

/// Stops on a call into a ``BarrierStore`` from inside one of its own operations,
/// which would otherwise wait for itself forever.
@usableFromInline @inline(never)
func reentrantStoreFailure() -> Never {
  fatalError(
    """
    BarrierStore used from inside one of its own operations (a key's hash(into:) or ==, \
    or code they call); this call would wait for itself forever
    """
  )
}

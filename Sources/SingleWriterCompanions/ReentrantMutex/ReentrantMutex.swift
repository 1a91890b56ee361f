import SingleWriter
import SingleWriterAtomics

/// A lock that the thread holding it can take again without deadlocking.
///
/// ``with(fileID:function:line:_:)`` runs its closure while holding the lock. A `with`
/// nested inside another on the same thread, directly or through any number of calls, just
/// runs its closure: the lock is already held. Other threads wait until the outermost
/// `with` returns or throws.
///
/// ```swift
/// struct User { var age: Int }
/// nonisolated(unsafe) var user = User(age: 24)
/// let userLock = ReentrantMutex()
///
/// func incrementAge() {
///   userLock.with { user.age += 1 }
/// }
///
/// func updateUser() {
///   userLock.with {
///     // ... other work on `user` ...
///     incrementAge()  // nested on the same thread: runs, no deadlock
///   }
/// }
/// ```
///
/// `ReentrantMutex` guards *code*, not a value: it has no `inout` value like the standard
/// library's `Mutex`, and cannot have one. A nested `with` would hand out a second
/// `inout` access to a value whose outer access is still open, which Swift's exclusivity
/// rule forbids. Keep the state it guards next to it, and touch that state only inside
/// `with`. When no code path nests, prefer a plain mutex: it is simpler to reason about.
///
/// The lock belongs to a thread. `body` is synchronous, so it cannot suspend while
/// holding it; handing work that takes the lock to another thread and waiting for it
/// deadlocks, as with any lock.
public final class ReentrantMutex: @unchecked Sendable {
  // Sendable because all state lives behind these two pointers, allocated once and
  // never reassigned, and is only touched through atomics: `mutex` is the lock, and
  // `owner` is an atomic word holding the id of the thread inside the outermost `with`,
  // or 0. A thread can find its own id there only if it stored it itself, while holding
  // `mutex`, and has not cleared it yet, because only the owner writes its id and clears
  // it before unlocking; what other threads see there never matches their own id. So
  // the relaxed load in `with` decides "nested or not" exactly.
  //
  // There is no depth counter: `with` is closure-scoped, so the nesting lives on the
  // call stack, and only the outermost call, the one that locked, unlocks.
  @usableFromInline let mutex: UnsafeMutablePointer<sw_mutex>
  @usableFromInline let owner: UnsafeMutablePointer<sw_atomic_uptr>

  /// Creates an unlocked mutex.
  public init() {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: sw_mutex())
    owner = .allocate(capacity: 1)
    owner.initialize(to: sw_atomic_uptr())
  }

  deinit {
    #if DEBUG
      LockOrderCheck.forget(ObjectIdentifier(self))
    #endif
    mutex.deinitialize(count: 1)
    mutex.deallocate()
    owner.deinitialize(count: 1)
    owner.deallocate()
  }

  /// Runs `body` while holding the lock, and returns its result.
  ///
  /// If this thread already holds the lock, `body` runs at once. Otherwise the call
  /// waits until no other thread holds it. The lock is released when the outermost
  /// `with` returns or throws.
  ///
  /// ```swift
  /// let snapshot = lock.with { cache }
  /// try lock.with { try save(cache) }
  /// ```
  ///
  /// In debug builds the outermost `with` takes part in lock-order checking (see
  /// `RaceDetector.checksLockOrder` in SingleWriter); the defaulted `fileID`, `function`
  /// and `line` name the caller in its reports. A nested `with` is no new order.
  @inlinable
  public func with<R: ~Copyable, E: Error>(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: () throws(E) -> R
  ) throws(E) -> R {
    let me = sw_current_thread()
    if sw_uptr_load(owner) == me {
      #if DEBUG
        LockOrderCheck.reentered(ObjectIdentifier(self), fileID, function, line)
      #endif
      return try body()
    }
    #if DEBUG
      LockOrderCheck.willTake(ObjectIdentifier(self), fileID, function, line)
    #endif
    sw_mutex_lock(mutex)
    sw_uptr_store(owner, me)
    defer {
      #if DEBUG
        LockOrderCheck.released(ObjectIdentifier(self))
      #endif
      sw_uptr_store(owner, 0)
      sw_mutex_unlock(mutex)
    }
    return try body()
  }
}

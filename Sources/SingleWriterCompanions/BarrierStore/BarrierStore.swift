import Dispatch
import SingleWriter

/// A dictionary that many threads can read at once and write one at a time.
///
/// Each operation comes in three forms, all with the same effect:
///
/// - **Sync:** ``value(forKey:)``, ``setValue(_:forKey:fileID:function:line:)`` and
///   ``removeValue(forKey:fileID:function:line:)`` return when the operation is done.
/// - **Callback:** the same names with a `completion` parameter return at once and call
///   `completion` later on ``completionQueue``, never on the caller's thread.
/// - **Async:** ``valueAsync(forKey:)``, ``setValueAsync(_:forKey:fileID:function:line:)``
///   and ``removeValueAsync(forKey:fileID:function:line:)`` are for `await`. They carry an
///   `Async` suffix because an `async` overload with the same name as a synchronous method
///   is easy to call by mistake: outside an async context the compiler silently picks the
///   blocking one.
///
/// ```swift
/// let cache = BarrierStore<String, Int>()
///
/// cache.setValue(42, forKey: "answer")
/// cache.value(forKey: "answer")                    // 42
///
/// cache.value(forKey: "answer") { key, value in    // later, on the completion queue
///   print(key, value ?? 0)
/// }
///
/// await cache.setValueAsync(7, forKey: "lucky")
/// await cache.removeValueAsync(forKey: "answer")   // 42
/// ```
///
/// Operations called from one thread take effect in the order they were called, whatever
/// their form: a read sees every write the same thread started before it, even one whose
/// completion has not run yet. Reads run side by side; a write waits for the reads and
/// writes before it and holds back those after it. ``BarrierStoreBacking`` chooses how:
/// a reader-writer lock (the default, and much the cheaper) or the concurrent queue with
/// barrier writes of the classic Grand Central Dispatch design.
///
/// No code of yours runs while the store is locked or on its queue, except a key's
/// `hash(into:)` and `==`; completions run on ``completionQueue``, and a value displaced by
/// a write is released after the write, so its `deinit` may use the store. The sync forms
/// therefore never wait for the store's own queue, which is how the classic design's
/// semaphore-based sync calls deadlock. A key's `hash(into:)` or `==` must not use the
/// store: with the barrier queue, a sync form there, or anything inside a write with the
/// lock, stops the program with a message (a callback or `async` form there only queues
/// another block); inside a read with the lock, a write would wait forever, and so would a
/// read as soon as another thread's write is waiting (the lock lets waiting writers go
/// before new readers).
public final class BarrierStore<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
  // Sendable because `storage` is read only with shared access and written only with
  // exclusive access: under `lock` taken shared or exclusive, or, with no lock, inside a
  // plain or a `.barrier` block on `queue`, which is concurrent. Keys and values are
  // Sendable, so handing them across threads is safe. Everything else is `let`.
  @usableFromInline @exclusivity(unchecked) var storage: [Key: Value] = [:]
  /// The lock, or `nil` when the store uses `queue`.
  @usableFromInline let lock: ReadWriteLock?
  /// The concurrent queue, or `nil` when the store uses `lock`.
  @usableFromInline let queue: DispatchQueue?
  /// Set on `queue`, so a sync call can tell that it is already running there.
  @usableFromInline let onQueue = DispatchSpecificKey<Void>()

  /// How this store keeps readers and writers apart.
  public let backing: BarrierStoreBacking

  /// The queue that completions of the callback forms run on.
  public let completionQueue: DispatchQueue

  /// Creates an empty store.
  ///
  /// - Parameters:
  ///   - backing: How readers and writers are kept apart; a reader-writer lock unless
  ///     you ask for the barrier queue.
  ///   - completionQueue: Where the callback forms call their completions. The default,
  ///     a global concurrent queue, may run them in any order and at the same time; pass
  ///     a serial queue to get them one at a time, in the order the operations took
  ///     effect.
  public init(
    backing: BarrierStoreBacking = .readWriteLock,
    completionQueue: DispatchQueue = .global()
  ) {
    self.backing = backing
    self.completionQueue = completionQueue
    switch backing {
    case .readWriteLock:
      lock = ReadWriteLock()
      queue = nil
    case .barrierQueue:
      lock = nil
      let queue = DispatchQueue(label: "singlewriter.barrierstore", attributes: .concurrent)
      queue.setSpecific(key: onQueue, value: ())
      self.queue = queue
    }
  }

  deinit {
    #if DEBUG
      LockOrderCheck.forget(ObjectIdentifier(self))
    #endif
    // Pending queue blocks and completions retain the store, so nothing uses it now.
    lock?.destroy()
  }

  // MARK: Sync

  /// The value stored for `key`, or `nil`.
  ///
  /// ```swift
  /// if let user = users.value(forKey: id) { greet(user) }
  /// ```
  @inlinable
  public func value(forKey key: Key) -> Value? {
    withSharedAccess { storage[key] }
  }

  /// Stores `value` for `key`, replacing any value already there.
  ///
  /// ```swift
  /// users.setValue(user, forKey: user.id)
  /// ```
  @inlinable
  public func setValue(
    _ value: Value, forKey key: Key,
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) {
    let displaced = withExclusiveAccess(fileID, function, line) {
      storage.updateValue(value, forKey: key)
    }
    withExtendedLifetime(displaced) {}  // released here, outside the store
  }

  /// Removes the value stored for `key`, and returns it, or `nil` if there was none.
  ///
  /// ```swift
  /// users.removeValue(forKey: id)
  /// ```
  @inlinable
  @discardableResult
  public func removeValue(
    forKey key: Key,
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) -> Value? {
    let removed = withExclusiveAccess(fileID, function, line) { removeEntry(forKey: key) }
    return removed?.value
  }

  // MARK: Callback

  /// Reads the value stored for `key`, and passes `key` and the value to `completion`
  /// on ``completionQueue``.
  ///
  /// ```swift
  /// users.value(forKey: id) { id, user in
  ///   print(id, user?.name ?? "none")
  /// }
  /// ```
  @inlinable
  public func value(
    forKey key: Key, completion: @escaping @Sendable (Key, Value?) -> Void
  ) {
    accessLater(exclusive: false) {
      self.storage[key]
    } then: { value in
      completion(key, value)
    }
  }

  /// Stores `value` for `key`, replacing any value already there, and passes `key` and
  /// `value` to `completion` on ``completionQueue``.
  ///
  /// A read started after this call returns sees `value`, even before `completion` runs.
  ///
  /// ```swift
  /// users.setValue(user, forKey: user.id) { id, _ in print("saved", id) }
  /// ```
  @inlinable
  public func setValue(
    _ value: Value, forKey key: Key,
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    completion: @escaping @Sendable (Key, Value) -> Void
  ) {
    accessLater(exclusive: true, fileID, function, line) {
      self.storage.updateValue(value, forKey: key)
    } then: { displaced in
      completion(key, value)
      withExtendedLifetime(displaced) {}  // released here, outside the store
    }
  }

  /// Removes the value stored for `key`, and passes `key` and the removed value, or
  /// `nil` if there was none, to `completion` on ``completionQueue``.
  ///
  /// ```swift
  /// users.removeValue(forKey: id) { id, removed in print("removed", removed != nil) }
  /// ```
  @inlinable
  public func removeValue(
    forKey key: Key,
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    completion: @escaping @Sendable (Key, Value?) -> Void
  ) {
    accessLater(exclusive: true, fileID, function, line) {
      self.removeEntry(forKey: key)
    } then: { removed in
      completion(key, removed?.value)
    }
  }

  // MARK: Async

  /// The value stored for `key`, or `nil`; the `await` form of ``value(forKey:)``.
  ///
  /// ```swift
  /// let user = await users.valueAsync(forKey: id)
  /// ```
  @inlinable
  public func valueAsync(forKey key: Key) async -> Value? {
    await access(exclusive: false) { self.storage[key] }
  }

  /// Stores `value` for `key`; the `await` form of ``setValue(_:forKey:fileID:function:line:)``.
  ///
  /// ```swift
  /// await users.setValueAsync(user, forKey: user.id)
  /// ```
  @inlinable
  public func setValueAsync(
    _ value: Value, forKey key: Key,
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) async {
    let displaced = await access(exclusive: true, fileID, function, line) {
      self.storage.updateValue(value, forKey: key)
    }
    withExtendedLifetime(displaced) {}  // released here, outside the store
  }

  /// Removes and returns the value stored for `key`; the `await` form of
  /// ``removeValue(forKey:fileID:function:line:)``.
  ///
  /// ```swift
  /// await users.removeValueAsync(forKey: id)
  /// ```
  @inlinable
  @discardableResult
  public func removeValueAsync(
    forKey key: Key,
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) async -> Value? {
    let removed = await access(exclusive: true, fileID, function, line) {
      self.removeEntry(forKey: key)
    }
    return removed?.value
  }

  // MARK: Access

  /// Removes the entry for `key` and returns it whole, so that the caller releases the
  /// key and the value after leaving the store.
  @inlinable
  func removeEntry(forKey key: Key) -> (key: Key, value: Value)? {
    guard let index = storage.index(forKey: key) else { return nil }
    return storage.remove(at: index)
  }

  /// Runs `body` now, with shared access, and returns its result.
  @inlinable
  func withSharedAccess<R>(_ body: () -> R) -> R {
    if let lock {
      lock.lockShared()
      defer { lock.unlockShared() }
      return body()
    }
    return syncQueue().sync(execute: body)
  }

  /// Runs `body` now, with exclusive access, and returns its result. A write: in debug
  /// builds it takes part in lock-order checking, named by the caller's site.
  @inlinable
  func withExclusiveAccess<R>(
    _ fileID: StaticString, _ function: StaticString, _ line: UInt, _ body: () -> R
  ) -> R {
    #if DEBUG
      LockOrderCheck.willTake(ObjectIdentifier(self), fileID, function, line)
      defer { LockOrderCheck.released(ObjectIdentifier(self)) }
    #endif
    if let lock {
      lock.lockExclusive()
      defer { lock.unlockExclusive() }
      return body()
    }
    return syncQueue().sync(flags: .barrier, execute: body)
  }

  /// The queue, after checking that this thread is not already running on it: a sync
  /// call from there would wait for itself.
  @inlinable
  func syncQueue() -> DispatchQueue {
    if DispatchQueue.getSpecific(key: onQueue) != nil { reentrantStoreFailure() }
    return queue.unsafelyUnwrapped
  }

  /// Runs `body` with shared or exclusive access, now with the lock or later on the
  /// queue, then passes its result to `then` on ``completionQueue``.
  @inlinable
  func accessLater<R: Sendable>(
    exclusive: Bool,
    _ fileID: StaticString = #fileID, _ function: StaticString = #function, _ line: UInt = #line,
    _ body: @escaping @Sendable () -> R,
    then: @escaping @Sendable (R) -> Void
  ) {
    guard let queue else {
      // The completion is queued before the lock is dropped, so that completions on a
      // serial queue come in the order the operations took effect; through a box, so that
      // a displaced value is freed by the completion, not here.
      let run = {
        let result = ResultHandoff(body())
        self.completionQueue.async { then(result.take()) }
      }
      if exclusive {
        withExclusiveAccess(fileID, function, line, run)
      } else {
        withSharedAccess(run)
      }
      return
    }
    queue.async(flags: exclusive ? .barrier : []) {
      // Through a box, so that this block never holds the result itself: had it kept a
      // copy, the completion could run and finish first, and a displaced value would then
      // be freed here, on the store's own queue, where its deinit may not use the store.
      let result = ResultHandoff(body())
      self.completionQueue.async { then(result.take()) }
    }
  }

  /// Runs `body` with shared or exclusive access and returns its result: now with the
  /// lock, or by suspending until a block on the queue has run it.
  @inlinable
  func access<R: Sendable>(
    exclusive: Bool,
    _ fileID: StaticString = #fileID, _ function: StaticString = #function, _ line: UInt = #line,
    _ body: @escaping @Sendable () -> R
  ) async -> R {
    guard let queue else {
      return exclusive
        ? withExclusiveAccess(fileID, function, line, body) : withSharedAccess(body)
    }
    return await withCheckedContinuation { continuation in
      queue.async(flags: exclusive ? .barrier : []) {
        continuation.resume(returning: body())
      }
    }
  }
}

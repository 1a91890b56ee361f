import SingleWriterAtomics

/// A ``SingleWriter`` that any thread, queue or task can use.
///
/// The same rules hold: any code can ``read``, only one ``ThreadSafeWriterProxy`` is
/// alive at a time, and ``writeNext(_:)`` queues writes FIFO, never losing one. On
/// top, ``withWriter(_:)`` waits its turn in that queue, and ``tryWrite(_:)`` writes
/// only if the writer is free; neither allocates.
///
/// ```swift
/// let hits = ThreadSafeSingleWriter(value: 0)
/// DispatchQueue.concurrentPerform(iterations: 1_000) { _ in
///   if hits.tryWrite({ $0 += 1 }) == nil {  // writer busy?
///     hits.writeNext { $0.write += 1 }      // then queue it
///   }
/// }
/// // hits.read == 1_000
/// ```
///
/// A checkout is a flag, taken with one compare-and-exchange, and held as long as the
/// proxy lives. The value itself has a short lock of its own, in the same atomic word,
/// held only for the duration of each read or write access, so ``read`` never waits
/// for a checkout to end, always sees whole writes, and sees writes through a held
/// proxy at once.
///
/// Misuse that would hang stops the program with a message instead: ``withWriter(_:)``
/// from inside a write's closure on the same thread, or ``read`` from inside
/// ``tryWrite(_:)``'s closure.
public final class ThreadSafeSingleWriter<Value> {
  /// The checkout flag, the value lock, the queue lock and the owner ids.
  @usableFromInline let lock: WriterLock
  /// The value, at a stable address so proxies reach it without touching `self`. Read
  /// only with a reader slot, written only with `writing`.
  @usableFromInline let storage: UnsafeMutablePointer<Value>
  /// Ends a checkout that has queued writes or observers to serve. Built in the
  /// inlinable `init`, so it is specialized for `Value` in the caller's module instead
  /// of running as unspecialized generic code from a proxy's `deinit`.
  @usableFromInline let finishCheckout: (ThreadSafeSingleWriter<Value>) -> Void
  /// Set only by `deinit`, so the spare proxy it frees knows not to end a checkout.
  @usableFromInline @exclusivity(unchecked) var isTearingDown = false
  /// Touched only by the checkout holder; acquire/release on the state word, or a
  /// `Waiter`, orders it from one holder to the next.
  @usableFromInline @exclusivity(unchecked) var spare: ThreadSafeWriterProxy<Value>?
  /// Touched only under the queue lock.
  @usableFromInline @exclusivity(unchecked) var pending = FIFO<Pending>()
  /// The `changes()` streams, and the next id to give one; only under the queue lock.
  @usableFromInline @exclusivity(unchecked) var subscribers: [UInt64: Subscriber] = [:]
  @usableFromInline @exclusivity(unchecked) var nextSubscriberID: UInt64 = 0

  /// A write waiting for the checkout.
  @usableFromInline
  enum Pending {
    case write(@Sendable (ThreadSafeWriterProxy<Value>) -> Void)
    case waiter(Waiter)
    case task(TaskWaiter)
  }

  /// A `changes()` stream, seen through closures so that code without
  /// `Value: Sendable` can feed and finish it.
  @usableFromInline
  struct Subscriber {
    @usableFromInline let yield: (Value) -> Void
    @usableFromInline let finish: () -> Void
  }

  /// Wraps `value` so that only one place at a time, on any thread, can write it.
  @inlinable
  public init(value: Value) {
    lock = WriterLock()
    storage = .allocate(capacity: 1)
    storage.initialize(to: value)
    finishCheckout = { $0.finishCheckoutNow() }
  }

  deinit {
    isTearingDown = true
    spare = nil
    // Their `onTermination` holds this container weakly, so it does nothing now.
    for subscriber in subscribers.values { subscriber.finish() }
    storage.deinitialize(count: 1)
    storage.deallocate()
    lock.deallocate()
  }

  // MARK: Public API

  /// The current value, including writes made through a proxy that is still held.
  ///
  /// Never waits for a checkout, only for a write access in progress, so it never
  /// sees half a write.
  @inlinable
  public var read: Value {
    let slot = lock.beginRead()
    defer { if slot { lock.endRead() } }
    return storage.pointee
  }

  /// A proxy for writing, or `nil` while the writer is out or writes are queued.
  ///
  /// The proxy can be sent to, used on and released on any thread. Releasing it runs
  /// the queued writes on the releasing thread.
  ///
  /// ```swift
  /// if let writer = session.writer {
  ///   writer.write.token = newToken
  /// }
  /// ```
  @inlinable
  public var writer: ThreadSafeWriterProxy<Value>? {
    guard lock.tryCheckout() else { return nil }
    return ThreadSafeWriterProxy(owning: self)
  }

  /// Runs `body` with the writer now if it is free; otherwise queues it to run, in FIFO
  /// order, on whichever thread ends the checkout ahead of it.
  ///
  /// `body` may keep the proxy, and the checkout then lasts until that proxy is
  /// released. A `writeNext` from inside `body` goes to the back of the queue.
  ///
  /// ```swift
  /// state.writeNext { $0.write.count += 1 }
  /// ```
  @inlinable
  public func writeNext(_ body: @escaping @Sendable (ThreadSafeWriterProxy<Value>) -> Void) {
    if !lock.tryBeginClosureWrite(lent: true) {
      guard !enqueue(.write(body)) else { return }
      lock.beginClosureWrite(lent: true)
    }
    if let kept = lend(body) {
      lock.endWriting()
      withExtendedLifetime(kept) {}  // its release may end the checkout: after `writing`
    } else if !lock.tryEndClosureWrite() {
      finishClosureWrite()
    }
  }

  /// Mutates the value in place if the writer is free, and returns `nil` if it is not.
  ///
  /// ```swift
  /// state.tryWrite { $0.count += 1 }
  /// ```
  ///
  /// Reading this container from inside `body` on the same thread stops the program:
  /// use the `inout` value instead.
  @inlinable
  @discardableResult
  public func tryWrite<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R? {
    guard lock.tryBeginClosureWrite(lent: false) else { return nil }
    defer { if !lock.tryEndClosureWrite() { finishClosureWrite() } }
    return try body(&storage.pointee)
  }

  /// Waits its turn for the writer, in FIFO order with the queued writes, then mutates
  /// the value in place.
  ///
  /// ```swift
  /// let total = state.withWriter { value -> Int in
  ///   value.count += 1
  ///   return value.count
  /// }
  /// ```
  ///
  /// Blocks the calling thread while it waits. Called from inside a write's closure on
  /// the same thread, it could never return, so it stops the program with a message.
  /// Called while this thread holds a proxy from ``writer``, it waits for that proxy's
  /// release, which is right if the proxy went to another thread; if it did not, a
  /// warning on standard error after a second names the deadlock.
  @inlinable
  public func withWriter<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
    if !lock.tryBeginClosureWrite(lent: false) { waitForClosureWrite() }
    defer { if !lock.tryEndClosureWrite() { finishClosureWrite() } }
    return try body(&storage.pointee)
  }

  // MARK: Checkout

  /// How many writes wait in the queue; for tests and diagnostics.
  var pendingCount: Int {
    sw_mutex_lock(lock.queueLock)
    defer { sw_mutex_unlock(lock.queueLock) }
    return pending.count
  }

  /// Queues `entry`, or takes the checkout if it turned out to be free. Returns `true`
  /// if queued. Under the queue lock, so a release racing with it either sees the new
  /// `queued` bit and drains, or has already freed the writer for us to take.
  @inlinable
  func enqueue(_ entry: Pending) -> Bool {
    sw_mutex_lock(lock.queueLock)
    defer { sw_mutex_unlock(lock.queueLock) }
    return enqueueHoldingQueueLock(entry)
  }

  /// `enqueue`, for callers that already hold the queue lock.
  @inlinable
  func enqueueHoldingQueueLock(_ entry: Pending) -> Bool {
    var s = sw_load_relaxed(lock.state)
    while true {
      if s & WriterState.writer == 0 {
        if sw_cas(lock.state, &s, s | WriterState.writer) {
          sw_uptr_store(lock.checkoutThread, sw_current_thread())
          return false
        }
      } else if s & WriterState.queued != 0 || sw_cas(lock.state, &s, s | WriterState.queued) {
        pending.append(entry)
        return true
      }
    }
  }

  /// Ends a closure write that `tryEndClosureWrite` could not end on its own.
  @inlinable
  func finishClosureWrite() {
    lock.endWriting()
    finishCheckoutNow()
  }

  /// Publishes to observers if needed, then frees the writer or drains the queue.
  @inlinable
  func finishCheckoutNow() {
    sw_uptr_store(lock.checkoutThread, 0)
    var s = sw_load_relaxed(lock.state)
    if s & WriterState.observed != 0 {
      publishIfDirty()
      s = sw_load_relaxed(lock.state)
    }
    while s & WriterState.queued == 0 {
      if sw_cas(lock.state, &s, s & ~WriterState.writer) { return }
    }
    drainPending()
  }

  /// Runs queued writes in order while holding the checkout, until the queue is empty,
  /// a write keeps its proxy, or a waiting `withWriter` or task is handed the checkout.
  /// A loop, not recursion through `deinit`: a deep queue uses no stack.
  @inlinable
  func drainPending() {
    while true {
      sw_mutex_lock(lock.queueLock)
      guard let next = pending.popFirst() else {
        lock.clearWriter()
        sw_mutex_unlock(lock.queueLock)
        return
      }
      if pending.isEmpty { sw_fetch_and(lock.state, ~WriterState.queued) }
      sw_mutex_unlock(lock.queueLock)
      switch next {
      case .write(let body):
        lock.beginClosureWrite(lent: true)
        if let kept = lend(body) {
          lock.endWriting()
          withExtendedLifetime(kept) {}
          return
        }
        lock.endWriting()
        sw_uptr_store(lock.checkoutThread, 0)
        if sw_load_relaxed(lock.state) & WriterState.observed != 0 { publishIfDirty() }
      case .waiter(let waiter):
        waiter.grant()
        return
      case .task(let waiter):
        waiter.continuation.take()!.resume()
        return
      }
    }
  }

  /// Lends the spare proxy to `body`, which runs holding `writing`. Returns `nil` once
  /// the proxy is back, or the proxy if `body` kept it; that proxy now owns the
  /// checkout, and the caller must drop `writing` before releasing it.
  @inlinable
  func lend(_ body: (ThreadSafeWriterProxy<Value>) -> Void) -> ThreadSafeWriterProxy<Value>? {
    if spare == nil { spare = ThreadSafeWriterProxy(lentBy: self) }
    // Guaranteed, not retained: only the checkout holder, this thread, replaces `spare`.
    Unmanaged.passUnretained(spare.unsafelyUnwrapped)._withUnsafeGuaranteedRef { body($0) }
    if isKnownUniquelyReferenced(&spare) { return nil }
    // Kept, maybe for another thread: no thread in particular holds the checkout now.
    sw_uptr_store(lock.checkoutThread, 0)
    let kept = spare.take().unsafelyUnwrapped
    kept.retainOwner()
    return kept
  }

  /// The slow half of `withWriter`: wait in the queue for the checkout, then for `writing`.
  @usableFromInline
  func waitForClosureWrite() {
    let me = sw_current_thread()
    if sw_uptr_load(lock.checkoutThread) == scoped(me) { selfDeadlockFailure("withWriter") }
    let waiter = Waiter()
    if enqueue(.waiter(waiter)) {
      waiter.wait { sw_uptr_load(lock.checkoutThread) == me }
    }
    lock.beginClosureWrite(lent: false)
  }
}

// Sendable, proved by the protocol in `WriterLock`: the value is read only while
// holding a reader slot and written only while holding `writing`, both taken with
// acquire/release atomics on the state word; `pending` and `subscribers` are touched
// only under the queue lock; `spare` only by the checkout holder, which passes it on
// through the same atomics.
extension ThreadSafeSingleWriter: @unchecked Sendable where Value: Sendable {}

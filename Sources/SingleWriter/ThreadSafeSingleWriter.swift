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
/// proxy lives. The value itself has a short lock of its own, held only for the
/// duration of each read or write access, so ``read`` never waits for a checkout to
/// end, always sees whole writes, and sees writes through a held proxy at once.
///
/// Misuse that would hang stops the program with a message instead: ``withWriter(_:)``
/// on the thread that holds the writer, or ``read`` from inside a write's closure.
public final class ThreadSafeSingleWriter<Value> {
  /// The state word, the queue lock and the owner ids, at a stable address.
  @usableFromInline let sync: UnsafeMutablePointer<sw_writer_sync>
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
  /// A write access happened since the last publication; set under `writing`,
  /// read and cleared with a reader slot.
  @usableFromInline @exclusivity(unchecked) var isDirty = false
  /// Read only with a reader slot and written only with `writing`, both taken on the
  /// state word. Last, so the fields above sit at fixed offsets for generic code.
  @usableFromInline @exclusivity(unchecked) var value: Value

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
    let yield: (Value) -> Void
    let finish: () -> Void
  }

  /// Wraps `value` so that only one place at a time, on any thread, can write it.
  @inlinable
  public init(value: Value) {
    self.value = value
    sync = .allocate(capacity: 1)
    sync.initialize(to: sw_writer_sync())
  }

  deinit {
    isTearingDown = true
    spare = nil
    // Their `onTermination` holds this container weakly, so it does nothing now.
    for subscriber in subscribers.values { subscriber.finish() }
    sync.deinitialize(count: 1)
    sync.deallocate()
  }

  // MARK: Public API

  /// The current value, including writes made through a proxy that is still held.
  ///
  /// Never waits for a checkout, only for a write access in progress, so it never
  /// sees half a write.
  @inlinable
  public var read: Value {
    beginRead()
    defer { endRead() }
    return value
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
    guard tryCheckout() else { return nil }
    let proxy = ThreadSafeWriterProxy(owner: self)
    proxy.retainOwner()
    return proxy
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
    guard tryCheckout() || !enqueue(.write(body)) else { return }
    if lend(body) { endCheckout() }
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
    guard tryBeginClosureWrite() else { return nil }
    defer { endClosureWrite() }
    return try body(&value)
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
    if !tryBeginClosureWrite() { waitForClosureWrite() }
    defer { endClosureWrite() }
    return try body(&value)
  }

  // MARK: Checkout

  /// How many writes wait in the queue; for tests and diagnostics.
  var pendingCount: Int {
    let lock = sw_writer_queue_lock(sync)
    sw_mutex_lock(lock)
    defer { sw_mutex_unlock(lock) }
    return pending.count
  }

  @inlinable
  var state: UnsafeMutablePointer<sw_atomic_u32> { sw_writer_state(sync) }

  @inlinable
  var checkoutThread: UnsafeMutablePointer<sw_atomic_uptr> { sw_writer_checkout_thread(sync) }

  @inlinable
  var writingThread: UnsafeMutablePointer<sw_atomic_uptr> { sw_writer_writing_thread(sync) }

  /// Takes the checkout if nobody holds it and nothing is queued.
  @inlinable
  func tryCheckout() -> Bool {
    var s = sw_load_relaxed(state)
    while s & (WriterState.writer | WriterState.queued) == 0 {
      if sw_cas(state, &s, s | WriterState.writer) {
        sw_uptr_store(checkoutThread, sw_current_thread())
        return true
      }
    }
    return false
  }

  /// Ends the checkout, or passes it to the queued writes.
  @inlinable
  func endCheckout() {
    sw_uptr_store(checkoutThread, 0)
    var s = sw_load_relaxed(state)
    if s & WriterState.observed != 0 {
      publishIfDirty()
      s = sw_load_relaxed(state)
    }
    while s & WriterState.queued == 0 {
      if sw_cas(state, &s, s & ~WriterState.writer) { return }
    }
    drainPending()
  }

  /// Queues `entry`, or takes the checkout if it turned out to be free. Returns `true`
  /// if queued. Under the queue lock, so a release racing with it either sees the new
  /// `queued` bit and drains, or has already freed the writer for us to take.
  @usableFromInline
  func enqueue(_ entry: Pending) -> Bool {
    let lock = sw_writer_queue_lock(sync)
    sw_mutex_lock(lock)
    defer { sw_mutex_unlock(lock) }
    var s = sw_load_relaxed(state)
    while true {
      if s & WriterState.writer == 0 {
        if sw_cas(state, &s, s | WriterState.writer) {
          sw_uptr_store(checkoutThread, sw_current_thread())
          return false
        }
      } else if s & WriterState.queued != 0 || sw_cas(state, &s, s | WriterState.queued) {
        pending.append(entry)
        return true
      }
    }
  }

  /// Runs queued writes in order while holding the checkout, until the queue is empty,
  /// a write keeps its proxy, or a blocked `withWriter` is handed the checkout. A loop,
  /// not recursion through `deinit`: a deep queue uses no stack.
  @usableFromInline
  func drainPending() {
    let lock = sw_writer_queue_lock(sync)
    while true {
      sw_mutex_lock(lock)
      guard let next = pending.popFirst() else {
        var s = sw_load_relaxed(state)
        while !sw_cas(state, &s, s & ~WriterState.writer) {}
        sw_mutex_unlock(lock)
        return
      }
      if pending.isEmpty { sw_fetch_and(state, ~WriterState.queued) }
      sw_mutex_unlock(lock)
      switch next {
      case .write(let body):
        guard lend(body) else { return }
        sw_uptr_store(checkoutThread, 0)
        if sw_load_relaxed(state) & WriterState.observed != 0 { publishIfDirty() }
      case .waiter(let waiter):
        waiter.grant()
        return
      case .task(let waiter):
        waiter.continuation.take()!.resume()
        return
      }
    }
  }

  /// Lends a proxy to `body` and takes it back afterwards, so the next write reuses it.
  /// Returns `false` if `body` kept it: its `deinit` then ends the checkout.
  @inlinable
  func lend(_ body: (ThreadSafeWriterProxy<Value>) -> Void) -> Bool {
    sw_uptr_store(checkoutThread, closureScoped(sw_current_thread()))
    var proxy = spare.take() ?? ThreadSafeWriterProxy(owner: self)
    body(proxy)
    guard isKnownUniquelyReferenced(&proxy) else {
      // Kept, maybe for another thread: nobody in particular holds the checkout now.
      sw_uptr_store(checkoutThread, 0)
      proxy.retainOwner()
      return false
    }
    spare = proxy
    return true
  }

  // MARK: Access to the value

  @inlinable
  func beginRead() {
    var s = sw_load_relaxed(state)
    if s & WriterState.writing == 0, sw_cas(state, &s, s &+ WriterState.reader) { return }
    beginReadSlow()
  }

  @inlinable
  func endRead() {
    let old = sw_fetch_sub(state, WriterState.reader)
    if old & WriterState.waiters != 0, old >> WriterState.readerShift == 1 { wakeWaiters() }
  }

  @usableFromInline
  func beginReadSlow() {
    let me = sw_current_thread()
    var s = sw_load_acquire(state)
    while true {
      if s & WriterState.writing == 0 {
        if sw_cas(state, &s, s &+ WriterState.reader) { return }
        continue
      }
      if sw_uptr_load(writingThread) == me { selfDeadlockFailure("read inside a write") }
      sleep(expecting: &s)
    }
  }

  /// Takes `writing` for one access through a proxy.
  @inlinable
  func beginWriting() {
    var s = sw_load_relaxed(state)
    if s & WriterState.writer == 0 { staleProxyFailure() }
    if !(s & ~WriterState.compatibleWithWriting == 0
      && sw_cas(state, &s, s | WriterState.writing))
    {
      beginWritingSlow()
    }
    sw_uptr_store(writingThread, sw_current_thread())
    isDirty = true
  }

  @usableFromInline
  func beginWritingSlow() {
    let me = sw_current_thread()
    var s = sw_load_acquire(state)
    while true {
      if s & WriterState.writer == 0 { staleProxyFailure() }
      if s & ~WriterState.compatibleWithWriting == 0 {
        if sw_cas(state, &s, s | WriterState.writing) { return }
        continue
      }
      if s & WriterState.writing != 0, sw_uptr_load(writingThread) == me {
        selfDeadlockFailure("a write access inside another write access")
      }
      sleep(expecting: &s)
    }
  }

  @inlinable
  func endWriting() {
    sw_uptr_store(writingThread, 0)
    let old = sw_fetch_sub(state, WriterState.writing)
    if old & WriterState.waiters != 0 { wakeWaiters() }
  }

  /// Takes the checkout and `writing` together for a closure write; `false` if the
  /// writer is out.
  @inlinable
  func tryBeginClosureWrite() -> Bool {
    var s = sw_load_relaxed(state)
    if s & ~(WriterState.waiters | WriterState.observed) == 0,
      sw_cas(state, &s, s | WriterState.writer | WriterState.writing)
    {
      let me = sw_current_thread()
      sw_uptr_store(writingThread, me)
      sw_uptr_store(checkoutThread, closureScoped(me))
      return true
    }
    guard tryCheckout() else { return false }
    sw_uptr_store(checkoutThread, closureScoped(sw_current_thread()))
    beginWriting()
    return true
  }

  @inlinable
  func endClosureWrite() {
    sw_uptr_store(writingThread, 0)
    sw_uptr_store(checkoutThread, 0)
    var s = WriterState.writer | WriterState.writing
    if sw_cas(state, &s, 0) { return }
    isDirty = true
    endWriting()
    endCheckout()
  }

  /// The slow half of `withWriter`: wait in the queue for the checkout, then for `writing`.
  @usableFromInline
  func waitForClosureWrite() {
    let me = sw_current_thread()
    if sw_uptr_load(checkoutThread) == closureScoped(me) { selfDeadlockFailure("withWriter") }
    let waiter = Waiter()
    if enqueue(.waiter(waiter)) {
      waiter.wait { sw_uptr_load(checkoutThread) == me }
    }
    sw_uptr_store(checkoutThread, closureScoped(me))
    beginWriting()
  }

  /// Marks `waiters` in `s`, sleeps until the state word changes, and reloads `s`.
  @usableFromInline
  func sleep(expecting s: inout UInt32) {
    if s & WriterState.waiters == 0 {
      guard sw_cas(state, &s, s | WriterState.waiters) else { return }
      s |= WriterState.waiters
    }
    sw_wait(state, s)
    s = sw_load_acquire(state)
  }

  @usableFromInline
  func wakeWaiters() {
    sw_fetch_and(state, ~WriterState.waiters)
    sw_wake_all(state)
  }
}

// Sendable, proved by the protocol above: `value` is read only while holding a reader
// slot and written only while holding `writing`, both taken with acquire/release
// atomics on the state word; `pending` is touched only under the queue lock; `spare`
// only by the checkout holder, which passes it on through the same atomics.
extension ThreadSafeSingleWriter: @unchecked Sendable where Value: Sendable {}

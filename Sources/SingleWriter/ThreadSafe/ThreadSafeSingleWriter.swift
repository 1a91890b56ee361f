import SingleWriterAtomics

/// A ``SingleWriter`` that any thread, queue or task can use.
///
/// The same rules hold: any code can ``read``, only one ``ThreadSafeWriterProxy`` is
/// alive at a time, and ``writeNext(fileID:function:line:_:)`` queues writes FIFO, never
/// losing one. On top, ``withWriter(fileID:function:line:_:)`` waits for the writer, and
/// `tryWrite` writes only if the writer is free. Neither
/// allocates, unless `withWriter` has waited long enough to queue for its turn.
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
/// A checkout is a flag, taken with one compare-and-exchange, and held until ARC
/// releases the proxy (in an optimized build, possibly right after its last use; pin it
/// with `withExtendedLifetime` to hold it up to a point). The value itself has a short lock of its own, in the same atomic word,
/// held only for the duration of each read or write access, so ``read`` never waits
/// for a checkout to end, always sees whole writes, and sees writes through a held
/// proxy at once. That holds inside a `writeNext` body too: the body holds the
/// checkout, and each access through its proxy holds the value only for that access.
///
/// Misuse that would hang stops the program with a message instead:
/// ``withWriter(fileID:function:line:_:)`` from inside a write's closure on the same
/// thread, or ``read`` from inside `tryWrite`'s closure. Debug
/// builds also report locks taken in both orders (see ``RaceDetector``).
public final class ThreadSafeSingleWriter<Value: ~Copyable> {
  /// The state word, the hand-off's lock and the owner ids.
  @usableFromInline let lock: WriterLock
  /// The value, at a stable address so proxies reach it without touching `self`. Read
  /// only with a reader slot, written only with `writing`.
  @usableFromInline let storage: UnsafeMutablePointer<Value>
  /// Ends a checkout that has queued writes, observers or parked threads to serve. Built
  /// in the inlinable `init`, so it is specialized for `Value` in the caller's module
  /// instead of running as unspecialized generic code from a proxy's `deinit`.
  @usableFromInline let finishCheckout: (ThreadSafeSingleWriter<Value>) -> Void
  /// Touched only by the checkout holder; acquire/release on the state word, or a
  /// waiter's grant, orders it from one holder to the next.
  @usableFromInline @exclusivity(unchecked) var spare: ThreadSafeWriterProxy<Value>?
  /// `refCountWordIsReadable`, copied: a lazy global costs a call per read.
  @usableFromInline let refCountWordIsCached = refCountWordIsReadable
  /// Writes taken from the hand-off's inbox and not run yet, oldest first. Only the checkout
  /// holder touches it, ordered like `spare`.
  /// Behind a pointer, as in ``SingleWriter``: queued bodies may enqueue while the loop
  /// that runs them is on the stack, so the optimizer must reload it after every call.
  @usableFromInline let pending: UnsafeMutablePointer<FIFO<Pending>>
  /// Entries popped from the queue to run, by every server: the position of the one
  /// running, against what a server owes (`HandOff.owedThrough`). Touched only by the
  /// checkout's holder, ordered like `spare`, on the server's cache line (sw_writer.h).
  @inlinable var ran: UInt64 {
    get { lock.ranEntries.pointee }
    set { lock.ranEntries.pointee = newValue }
  }
  /// Where observers learn of changes; see Observation/ChangeHub.swift.
  @usableFromInline let hub = ChangeHub()
  /// The most `writeNext` writes that may wait at once; `Int.max` when unbounded.
  @usableFromInline let maxQueuedWrites: Int

  /// A write waiting for the checkout.
  @usableFromInline
  enum Pending {
    /// A `writeNext` body, lent the spare proxy when its turn comes.
    case write(@Sendable (ThreadSafeWriterProxy<Value>) -> Void)
    /// A `withWriter` that has waited long: handed the checkout, and it serves after.
    case waiter(Waiter)
    /// An `await write`: the server runs its body for it, then resumes the task. The task
    /// never owns the checkout, so no thread ever waits for a suspended task's turn.
    case asyncWrite(TaskWaiter, (ThreadSafeSingleWriter<Value>) -> Void)
    /// A `checkout()`: woken when its turn comes, to take the writer if it can.
    case checkout(TaskWaiter)
    /// A `drained()`: resumed when its turn comes, every write ahead of it having run.
    /// Not a write: it takes nothing and is not counted in `queuedWrites`.
    case drain(TaskWaiter)
  }

  /// The writes that found the checkout busy and the thread serving them, behind the
  /// hand-off's lock (see HandOff.swift).
  @usableFromInline let handOff: UnsafeMutablePointer<HandOff<Pending>>

  /// Wraps `value` so that only one place at a time, on any thread, can write it.
  ///
  /// The container is `Sendable` whatever `Value` is, as a `Mutex` is: `value` is sent
  /// into it, and closure writes hand it to their body as `inout sending`. What reads
  /// or writes it from several threads at once (``read``, proxies,
  /// ``writeNext(fileID:function:line:_:)``, `changes()`) needs `Value: Sendable`.
  @inlinable
  public convenience init(value: consuming sending Value) {
    self.init(value: value, bound: .max)
  }

  @inlinable
  init(value: consuming sending Value, bound: Int) {
    maxQueuedWrites = bound
    lock = WriterLock()
    handOff = .allocateOnOwnCacheLines(HandOff())
    storage = .allocateOnOwnCacheLines(value)
    pending = .allocateOnOwnCacheLines(FIFO())
    finishCheckout = { $0.finishCheckoutNow() }
  }

  deinit {
    #if DEBUG
      LockOrderCheck.forget(ObjectIdentifier(self))
    #endif
    // Nothing can be queued now: a queued write or waiter would hold the checkout's
    // holder back, and every holder keeps this container alive.
    handOff.deinitialize(count: 1)
    handOff.deallocate()
    pending.deinitialize(count: 1)
    pending.deallocate()
    spare = nil
    hub.close()  // ends every `changes()` consumer, after this value (see `subscribe`)
    storage.deinitialize(count: 1)
    storage.deallocate()
    lock.deallocate()
  }

  // MARK: Closure writes

  /// Mutates the value in place if the writer is free, and returns whether it did: if not,
  /// nothing was written. The result warns when unused, since a busy writer drops the
  /// write; use ``writeNext(fileID:function:line:_:)`` or `await write` for a write that
  /// must not be lost.
  ///
  /// ```swift
  /// if !state.tryWrite({ $0.count += 1 }) {
  ///   state.writeNext { $0.write.count += 1 }  // busy: queue it instead
  /// }
  /// ```
  ///
  /// As the overload whose body returns a value, whose result is `nil` when the writer
  /// was busy.
  @inlinable
  public func tryWrite<E: Error>(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: (inout sending Value) throws(E) -> Void
  ) throws(E) -> Bool {
    // An overload of its own: an unused `Void?` result would not warn.
    try tryWrite(fileID: fileID, function: function, line: line) {
      (value: inout sending Value) throws(E) -> Void? in try body(&value)
    } != nil
  }

  /// Mutates the value in place if the writer is free, and returns what `body` returns, or
  /// `nil` if the writer was busy: then nothing was written.
  ///
  /// ```swift
  /// if let count = state.tryWrite({ value -> Int in value.count += 1; return value.count }) {
  ///   print(count)
  /// }
  /// ```
  ///
  /// Reading this container from inside `body` on the same thread stops the program:
  /// use the `inout` value instead.
  ///
  /// It never waits, so debug builds' lock-order checking (see ``RaceDetector``) orders it
  /// after no lock held; locks that `body` waits for are ordered after it. The defaulted
  /// `fileID`, `function` and `line` name the caller in its reports.
  @inlinable
  public func tryWrite<R: ~Copyable, E: Error>(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: (inout sending Value) throws(E) -> sending R
  ) throws(E) -> sending R? {
    guard lock.tryBeginClosureWrite() else {
      // Refused, but inside this container's `read { }` it would have waited forever had
      // the writer been free: stop either way, so the misuse never depends on timing.
      lock.stopIfReading()
      return nil
    }
    #if DEBUG
      LockOrderCheck.took(ObjectIdentifier(self), fileID, function, line)
    #endif
    return try runClosureWrite(body)
  }

  /// Waits for the writer, then mutates the value in place.
  ///
  /// ```swift
  /// let total = state.withWriter { value -> Int in
  ///   value.count += 1
  ///   return value.count
  /// }
  /// ```
  ///
  /// Blocks the calling thread while it waits: first it spins, for at most a few
  /// microseconds and less when spinning has not been paying off, since most checkouts
  /// last nanoseconds, then it sleeps until a checkout ends. A running thread
  /// may take a free writer ahead of a sleeping one, which keeps the writer busy instead
  /// of waiting for a thread to wake; a caller that has waited more than about a
  /// millisecond joins the queue and is handed the writer in turn, so none starves.
  /// On Apple platforms, while it sleeps behind a closure write (this one, `tryWrite`,
  /// `await write` or a queued body) running on another thread, it boosts that thread to
  /// its own priority, as `Mutex` does. A proxy's holder is not boosted, since a proxy
  /// can move between threads.
  ///
  /// Called from inside a write's closure on the same thread, from inside a write access
  /// through a proxy (a mutating method called through `proxy.write`), or from inside
  /// this container's `read { }`, it could never return, so it stops the program with a
  /// message. Called while this thread or task holds a proxy it took, it waits for that
  /// proxy's release, which is right if the proxy went elsewhere; if it did not, a
  /// warning on standard error after a second names the deadlock. A proxy received from
  /// another thread or task is not known as this one's: a wait behind it is not warned of,
  /// except from a task: that wait blocks its thread, and a task holding the proxy across
  /// an `await` may need that thread to go on, so after a second it warns. In async code,
  /// use `await write`.
  ///
  /// Debug builds' lock-order checking (see ``RaceDetector``) orders it after every lock
  /// this thread holds, and reports the first pair also taken in the opposite order. The
  /// defaulted `fileID`, `function` and `line` name the caller in its reports.
  @inlinable
  public func withWriter<R: ~Copyable, E: Error>(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: (inout sending Value) throws(E) -> sending R
  ) throws(E) -> sending R {
    #if DEBUG
      LockOrderCheck.willTake(ObjectIdentifier(self), fileID, function, line)
    #endif
    if !lock.tryBeginClosureWrite() { waitForClosureWrite() }
    return try runClosureWrite(body)
  }

  /// Runs a closure write's `body` on the value, with the checkout and `writing` already
  /// taken, then ends both: the one place every closure write (`tryWrite`, `withWriter`,
  /// the async writes when free) ends.
  @inlinable @inline(__always)
  func runClosureWrite<R: ~Copyable, E: Error>(
    _ body: (inout sending Value) throws(E) -> sending R
  ) throws(E) -> sending R {
    defer {
      #if DEBUG
        LockOrderCheck.released(ObjectIdentifier(self))
      #endif
      switch lock.tryEndClosureWrite() {
      case .ended: break
      // Published after the release, as `finishClosureWrite` explains.
      case .endedDirty: hub.publish()
      case .slow: finishClosureWrite()
      }
      _fixLifetime(self)  // `body` writes through `storage`, which the container frees
    }
    return try body(&storage.pointee)
  }
}

extension ThreadSafeSingleWriter where Value: Sendable {
  /// The current value, including writes made through a proxy that is still held.
  ///
  /// Never waits for a checkout, only for a write access in progress, so it never
  /// sees half a write.
  @inlinable
  public var read: Value {
    defer { _fixLifetime(self) }  // alive until the copy is made; see SingleWriter.read
    // A value with no references to count is copied optimistically and checked against
    // the write sequence: no read-modify-write at all. Others take a reader slot.
    if _isPOD(Value.self) {
      let copy = withUnsafeTemporaryAllocation(of: Value.self, capacity: 1) { buffer in
        let done = sw_seq_try_copy(
          lock.sequence, buffer.baseAddress!, storage, MemoryLayout<Value>.size)
        return done ? buffer.baseAddress!.move() : nil
      }
      if let copy { return copy }
    }
    lock.beginRead()
    defer { lock.endRead() }
    return storage.pointee
  }

  /// A proxy for writing, or `nil` while the writer is out or writes are queued.
  ///
  /// The proxy can be sent to, used on and released on any thread. Releasing it runs
  /// the queued writes on the releasing thread (see ``writeNext(fileID:function:line:_:)``
  /// for the one exception). Since it can move, a thread waiting for it in `withWriter`
  /// does not boost its holder's priority; where priority inversion matters, write in a
  /// closure.
  ///
  /// ```swift
  /// if let writer = session.writer {
  ///   writer.write.token = newToken
  /// }
  /// ```
  @inlinable
  public var writer: ThreadSafeWriterProxy<Value>? {
    // Always inlined: a proxy made in the caller's own code and released there is
    // allocated on the stack; one returned from a call is not.
    @inline(__always) get { writer() }
  }

  /// ``writer``, naming the caller's file and line in debug builds' lock-order reports
  /// (see ``RaceDetector``), which a property cannot do. Until the proxy is released, the
  /// checkout counts as held by this task, or this thread outside any task.
  ///
  /// ```swift
  /// if let proxy = session.writer() { proxy.write.token = newToken }
  /// ```
  @inlinable @inline(__always)
  public func writer(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) -> ThreadSafeWriterProxy<Value>? {
    guard lock.tryCheckout(as: 0) else { return nil }
    // Whose it is, for the bounded backlog and the deadlock warnings: a task's proxy is
    // the task's wherever it resumes. Out of line: this path allocates a proxy anyway.
    lock.recordHolder()
    #if DEBUG
      LockOrderCheck.checkedOut(
        ObjectIdentifier(self), holder: lock.holder, fileID, function, line)
    #endif
    return ThreadSafeWriterProxy(owning: self)
  }

  /// Runs `body` with the writer now if it is free; otherwise queues it to run, in FIFO
  /// order, on whichever thread ends the checkout ahead of it. That thread runs what it
  /// queued while it held the checkout before it returns (unless a waiting `withWriter`
  /// or `checkout()` queued ahead takes the writer first); when other threads keep
  /// queueing for more than about a millisecond, the next of them to call this takes
  /// over serving before it returns, waiting about a millisecond at most for the batch in
  /// progress (past that it returns and the serving thread serves on). So when every call
  /// has returned, every write has run. Tasks in `await write` never take over, so while
  /// they keep queueing, the serving thread keeps running their bodies.
  /// It never waits for the writer; with more than 4,096 writes waiting while a thread
  /// runs them, it gives up the rest of its time slice first, so that writers outpacing
  /// that thread leave it the CPU. In a container made with
  /// ``init(value:maxQueuedWrites:)``, it waits for room while that many writes wait.
  /// Since the caller may be chosen to run other threads'
  /// queued bodies, do not call it while holding a lock that a queued body takes: debug
  /// builds report a body that takes a `ReentrantMutex`, container or `BarrierStore` that
  /// the thread running it held before (see ``RaceDetector``). Run in place, `body` holds
  /// the writer without having waited for it: no lock-order edge leads to it, and the
  /// defaulted `fileID`, `function` and `line` name the caller where one leads from it.
  ///
  /// `body` may keep the proxy, and the checkout then lasts until that proxy is
  /// released. A `writeNext` from inside `body` goes to the back of the queue. Each
  /// access through the proxy holds the value only for that access, so other threads
  /// can read while `body` runs, and `body` may hand the proxy to another thread.
  ///
  /// ```swift
  /// state.writeNext { $0.write.count += 1 }
  /// ```
  @inlinable
  public func writeNext(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: @escaping @Sendable (ThreadSafeWriterProxy<Value>) -> Void
  ) {
    // Writes already wait: go behind them without touching the state word, which the
    // holder is busy with.
    guard sw_load_relaxed(lock.queuedHint) == 0,
      lock.tryCheckout(as: scoped(sw_current_thread()))
    else {
      #if DEBUG
        // A bounded backlog may make it wait for room: ordered like a wait.
        if maxQueuedWrites != .max {
          LockOrderCheck.willWait(for: ObjectIdentifier(self), fileID, function, line)
        }
      #endif
      return enqueue(.write(body), fileID: fileID, function: function, line: line)
    }
    runInPlace(body, fileID, function, line)
  }

}

extension ThreadSafeSingleWriter where Value: Sendable & ~Copyable {
  /// Reads the value in place: `body` borrows it, so nothing is copied out but what it
  /// returns. For one field of a large value, and the only read of a `~Copyable` one.
  ///
  /// ```swift
  /// let price = catalog.read { $0.prices[sku] }
  /// ```
  ///
  /// Like ``read``, it never waits for a checkout, only for a write access in progress,
  /// so it sees whole writes; writes wait for `body` to return, so keep it short. Reading
  /// from inside a closure write on the same thread stops the program, as ``read`` does,
  /// and so does writing this container from inside `body` on the same thread, which
  /// would wait for `body` to return: `withWriter`, `tryWrite`, a proxy's write, or a
  /// `writeNext` that would run at once. That holds inside reads of other containers
  /// nested in `body`, and whoever holds the writer. Write after `body` has returned.
  @inlinable
  public func read<R: ~Copyable, E: Error>(
    _ body: (borrowing Value) throws(E) -> R
  ) throws(E) -> R {
    lock.beginRead()
    sw_reading_push(lock.sync)
    defer {
      sw_reading_pop()
      lock.endRead()
      _fixLifetime(self)  // `body` reads through `storage`, which the container frees
    }
    return try body(storage.pointee)
  }
}

// Sendable whatever `Value` is, as `Mutex` is. Proved by the protocol in `WriterWord` and
// `HandOff`: the value is read only while holding a reader slot and written only while
// holding `writing`, both taken with acquire/release atomics on the state word; queued
// writes pass through the hand-off, under its lock; `spare` and `pending` are touched
// only by the checkout holder, which passes them on through the same atomics, the lock,
// or a waiter's grant. A value that is not `Sendable` is reachable only through closure
// writes, which take it `inout sending` (its region is disconnected from the caller's,
// so it moves between threads whole) and return `sending` results: every member that
// could share it between threads (`read`, proxies, `writeNext`, `changes()`) requires
// `Value: Sendable`.
extension ThreadSafeSingleWriter: @unchecked Sendable where Value: ~Copyable {}

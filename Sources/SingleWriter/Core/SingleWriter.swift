/// A value that any code can read at any time, but only one place can write at a time.
///
/// Writing needs a ``WriterProxy``. ``writer`` hands one out only while no other proxy
/// is alive, and the checkout ends when ARC releases the proxy. Writes that find the
/// writer busy can wait their turn with ``writeNext(fileID:function:line:_:)``; they run in FIFO order as
/// checkouts end, and none is lost.
///
/// ```swift
/// struct User { var name: String; var id: Int }
/// let currentUser = SingleWriter(value: User(name: "Default", id: 0))
///
/// if let held = currentUser.writer {  // checked out until ARC releases it
///   held.write.name = "Joe"
///   withExtendedLifetime(held) {  // still checked out here
///     currentUser.writer?.write.name = "Sally"  // nil: no effect
///     currentUser.writeNext { $0.write.name = "Bobo" }  // queued
///   }
/// }  // released after its last use: "Bobo" has run
/// ```
///
/// `SingleWriter` is for one thread or one actor: it does no synchronization, so reads
/// and writes cost a load and a store. Use ``ThreadSafeSingleWriter`` to share state
/// between threads. Debug builds check this: using one container from two threads at
/// once is reported through ``RaceDetector``.
public final class SingleWriter<Value> {
  // The checkout's bookkeeping lives behind a pointer, not in stored properties. Callers
  // inline `writeNext` and `tryWrite`, and the proxy that ends a checkout reaches this
  // container only through an unowned(unsafe) reference and a manual retain, which the
  // optimizer does not follow: release builds were seen to move a stored property's
  // update past the release of a proxy whose `deinit` reads it, losing queued writes.
  // Memory behind a pointer may be touched by any call, so every access stays in place.
  // This is a separate hazard from the one `_fixLifetime` guards against in the proxy's
  // accessors: with that fix in and these as stored properties, release tests still lose
  // queued writes.
  // Exclusivity is proved by the design rather than checked: the type is confined to one
  // thread, and each access is a short load or store.
  @usableFromInline let book: UnsafeMutablePointer<Bookkeeping>

  /// What `book` holds. An owning proxy's `deinit` runs unspecialized generic code, so
  /// what it touches is kept free of generic layout: flags, a count and a closure built
  /// in `init`.
  @usableFromInline
  struct Bookkeeping {
    @usableFromInline var isCheckedOut = false
    @usableFromInline var pendingCount = 0
    /// A drain loop is on the stack: a checkout that ends inside it, say in the `deinit`
    /// of a proxy that a queued write kept, leaves the next write to that loop.
    @usableFromInline var isDraining = false
    /// Someone observes changes; set by the observation code.
    @usableFromInline var isObserved = false
    /// Written since the last publication. Every write sets it, a store as cheap as the
    /// branch that would skip it; only `publishIfDirty` reads and clears it.
    @usableFromInline var isDirty = false
    /// The queue; a queued write's body appends to it while the drain loop that popped
    /// that write is on the stack.
    @usableFromInline var pending = FIFO<PendingWrite>()
    @inlinable init() {}
  }

  @inlinable var isCheckedOut: Bool {
    get { book.pointee.isCheckedOut }
    set { book.pointee.isCheckedOut = newValue }
  }
  @inlinable var pendingCount: Int {
    get { book.pointee.pendingCount }
    set { book.pointee.pendingCount = newValue }
  }
  @inlinable var isDraining: Bool {
    get { book.pointee.isDraining }
    set { book.pointee.isDraining = newValue }
  }
  @inlinable var isObserved: Bool {
    get { book.pointee.isObserved }
    set { book.pointee.isObserved = newValue }
  }
  @inlinable var isDirty: Bool {
    get { book.pointee.isDirty }
    set { book.pointee.isDirty = newValue }
  }

  /// Runs the queue; built in the inlinable `init`, so it is specialized for `Value`
  /// in the caller's module even when a `deinit` calls it.
  @usableFromInline let drain: (SingleWriter<Value>) -> Void
  @usableFromInline @exclusivity(unchecked) var spare: WriterProxy<Value>?
  /// `refCountWordIsReadable`, copied: a lazy global costs a call per read.
  @usableFromInline let refCountWordIsCached = refCountWordIsReadable
  /// Where observers learn of changes, made by the first; see Observation/ChangeHub.swift.
  @usableFromInline @exclusivity(unchecked) var hub: ChangeHub?
  #if DEBUG
    // Debug builds log each read and write for RaceDetector, so that breaking the
    // one-thread premise above is reported, not silent. Every hook below is under
    // `#if DEBUG`, so release builds are untouched.
    @usableFromInline let accessLog = AccessLog()
  #endif
  /// The value, at a stable address, so a proxy writes it without touching `self`.
  @usableFromInline let storage: UnsafeMutablePointer<Value>

  /// A queued `writeNext` closure, wrapped so the queue stores it unboxed.
  @usableFromInline
  struct PendingWrite {
    @usableFromInline let body: (WriterProxy<Value>) -> Void
    @inlinable init(_ body: @escaping (WriterProxy<Value>) -> Void) { self.body = body }
  }

  /// Wraps `value` so that only one place at a time can write it.
  @inlinable
  public init(value: Value) {
    storage = .allocate(capacity: 1)
    storage.initialize(to: value)
    book = .allocate(capacity: 1)
    book.initialize(to: Bookkeeping())
    drain = { $0.drainPending() }
    #if DEBUG
      accessLog.container = self
    #endif
  }

  /// The current value, including writes made through a proxy that is still held.
  @inlinable
  public var read: Value { read() }

  /// ``read``, naming the caller's file and line in debug builds' race reports, which a
  /// property cannot do.
  ///
  /// ```swift
  /// let user = currentUser.read()  // a race report names this line
  /// ```
  @inlinable
  public func read(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) -> Value {
    #if DEBUG
      accessLog.enter(.read, file: fileID, function: function, line: line)
      defer { accessLog.leave(.read) }
    #endif
    // The copy goes through `storage`: keep the container, which frees it, alive until
    // the copy is made (a temporary's lifetime could end once `storage` is loaded).
    defer { _fixLifetime(self) }
    return storage.pointee
  }

  /// How many ``writeNext(fileID:function:line:_:)`` writes wait behind the checkout now.
  ///
  /// ```swift
  /// assert(settings.queuedWrites == 0, "a proxy is still out")
  /// ```
  @inlinable
  public var queuedWrites: Int { pendingCount }

  /// A proxy for writing, or `nil` while another proxy is alive or writes are queued.
  ///
  /// The checkout lasts until ARC releases the proxy: hold it to keep every other
  /// writer out, drop it to let the next queued write run. In an optimized build ARC may
  /// release it right after its last use, earlier than its variable's scope ends; pin it
  /// with `withExtendedLifetime` to hold the checkout up to a point.
  ///
  /// ```swift
  /// if let writer = settings.writer {
  ///   writer.write.theme = .dark
  /// } else {
  ///   // Someone else is writing; try later or use writeNext.
  /// }
  /// ```
  @inlinable
  public var writer: WriterProxy<Value>? { writer() }

  /// ``writer``, naming the caller's file and line in debug builds' race reports.
  ///
  /// ```swift
  /// if let proxy = settings.writer() { proxy.write.theme = .dark }
  /// ```
  @inlinable
  public func writer(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) -> WriterProxy<Value>? {
    guard tryCheckout(file: fileID, function: function, line: line) else { return nil }
    return WriterProxy(owner: self, lease: .owning)
  }

  /// Runs `body` with the writer now if it is free; otherwise queues it to run,
  /// in FIFO order, when the current checkout ends.
  ///
  /// `body` may keep the proxy it is given, and the checkout then lasts until that
  /// proxy is released; later queued writes wait for it. A `writeNext` from inside
  /// `body` goes to the back of the queue.
  ///
  /// ```swift
  /// currentUser.writeNext { $0.write.name = "Bobo" }
  /// ```
  ///
  /// The defaulted `fileID`, `function` and `line` name the caller in debug builds'
  /// race reports.
  @inlinable
  public func writeNext(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: @escaping (WriterProxy<Value>) -> Void
  ) {
    guard tryCheckout(file: fileID, function: function, line: line) else {
      book.pointee.pending.append(PendingWrite(body))
      pendingCount += 1
      return
    }
    if lend(body), pendingCount != 0 { drainPending() }
  }

  /// Mutates the value in place if the writer is free and no write is queued, and returns
  /// whether it did: if not, nothing was written. The result warns when unused, since a
  /// busy writer drops the write; use ``writeNext(fileID:function:line:_:)`` for a write
  /// that must not be lost.
  ///
  /// No proxy is created, so this is the cheapest way to write.
  ///
  /// ```swift
  /// if !counter.tryWrite({ $0 += 1 }) {
  ///   counter.writeNext { $0.write += 1 }  // busy: queue it instead
  /// }
  /// ```
  ///
  /// A body that returns a value gets it back, or `nil` when the writer was busy. The
  /// defaulted `fileID`, `function` and `line` name the caller in debug builds' race
  /// reports.
  @inlinable
  public func tryWrite<E: Error>(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: (inout Value) throws(E) -> Void
  ) throws(E) -> Bool {
    // An overload of its own: an unused `Void?` result would not warn.
    try tryWrite(fileID: fileID, function: function, line: line) { (value) throws(E) -> Void? in
      try body(&value)
    } != nil
  }

  /// Mutates the value in place if the writer is free and no write is queued, and returns
  /// what `body` returns, or `nil` if the writer was busy: then nothing was written.
  ///
  /// ```swift
  /// if let total = counter.tryWrite({ value -> Int in value += 1; return value }) {
  ///   print(total)
  /// }
  /// ```
  @inlinable
  public func tryWrite<R, E: Error>(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: (inout Value) throws(E) -> R
  ) throws(E) -> R? {
    guard tryCheckout(file: fileID, function: function, line: line) else { return nil }
    defer {
      endCheckout()
      _fixLifetime(self)  // `body` writes through `storage`, which the container frees
    }
    isDirty = true
    return try body(&storage.pointee)
  }

  /// Takes the checkout if it is free and no write is queued. Debug builds also check
  /// the attempt, granted or refused, against other threads' use of this container.
  ///
  /// Writes wait in the queue with the checkout free only while a drain loop on the
  /// stack is between two of them, when a `deinit` run by that loop may write: such a
  /// write goes behind them, and the loop runs it.
  @inlinable
  func tryCheckout(file: StaticString, function: StaticString, line: UInt) -> Bool {
    guard !isCheckedOut, pendingCount == 0 else {
      #if DEBUG
        accessLog.check(.write, file: file, function: function, line: line)
      #endif
      return false
    }
    #if DEBUG
      accessLog.beginCheckout(file: file, function: function, line: line)
    #endif
    isCheckedOut = true
    return true
  }

  /// Lends a proxy to `body` for one write and takes it back afterwards, so the
  /// next write reuses it instead of allocating. Returns `false` when `body` kept
  /// the proxy: the checkout then lasts until ARC releases it.
  ///
  /// A proxy that anything else still references, even weakly, is never lent again:
  /// a reference kept from this closure must not become the live proxy of a later one.
  @inlinable @inline(__always)
  func lend(_ body: (WriterProxy<Value>) -> Void) -> Bool {
    if spare == nil { spare = WriterProxy(owner: self, lease: .idle) }
    // Guaranteed, not retained: nothing replaces `spare` while `body` runs.
    let proxy = Unmanaged.passUnretained(spare.unsafelyUnwrapped)
    proxy._withUnsafeGuaranteedRef {
      $0.lease = .lent
      body($0)
    }
    if !isSoleReference(&spare, wordIsReadable: refCountWordIsCached) {
      guard isKnownUniquelyReferenced(&spare) else {
        spare.take().unsafelyUnwrapped.keep()
        return false
      }
      // Only weak or unowned references remain: retire it. Freeing it now turns weak
      // references into `nil`; an unowned one traps in the runtime if used.
      spare.take().unsafelyUnwrapped.lease = .idle
    } else {
      proxy._withUnsafeGuaranteedRef { $0.lease = .idle }
    }
    releaseCheckout()
    return true
  }

  /// Runs queued writes one after another until the queue is empty or one of them
  /// keeps its proxy. A loop, not recursion: a deep queue uses no stack, and a checkout
  /// that ends inside a queued write's cleanup, such as a kept proxy freed with its
  /// closure, hands the next write back to this loop.
  @inlinable
  func drainPending() {
    guard !isDraining else { return }
    isDraining = true
    defer { isDraining = false }
    while !isCheckedOut, let next = book.pointee.pending.popFirst() {
      pendingCount -= 1
      #if DEBUG
        accessLog.beginCheckout()
      #endif
      isCheckedOut = true
      _ = lend(next.body)
    }
  }

  /// Ends the checkout: publishes to observers, then runs the queue. Called by an owning
  /// proxy's `deinit`, `tryWrite` and `lend`.
  @inlinable
  func endCheckout() {
    releaseCheckout()
    if pendingCount != 0 { drain(self) }
  }

  /// Publishes to observers, then frees the checkout, leaving the queue to the caller.
  ///
  /// Observers run while the checkout is still held, as in ``ThreadSafeSingleWriter``:
  /// a `writeNext` from one goes behind the writes already queued, and its `tryWrite`
  /// or `writer` finds the writer busy instead of jumping the queue.
  @inlinable @inline(__always)
  func releaseCheckout() {
    if isObserved { publishIfDirty() }
    #if DEBUG
      accessLog.endCheckout()
    #endif
    isCheckedOut = false
  }

  deinit {
    hub?.close(keeping: storage.pointee)  // ends every `changes()` consumer, after this value
    book.deinitialize(count: 1)
    book.deallocate()
    storage.deinitialize(count: 1)
    storage.deallocate()
  }
}

@available(*, unavailable, message: "SingleWriter is not thread-safe; use ThreadSafeSingleWriter")
extension SingleWriter: Sendable {}

/// A value that any code can read at any time, but only one place can write at a time.
///
/// Writing needs a ``WriterProxy``. ``writer`` hands one out only while no other proxy
/// is alive, and the checkout ends when ARC releases the proxy. Writes that find the
/// writer busy can wait their turn with ``writeNext(_:)``; they run in FIFO order as
/// checkouts end, and none is lost.
///
/// ```swift
/// struct User { var name: String; var id: Int }
/// let currentUser = SingleWriter(value: User(name: "Default", id: 0))
///
/// var held = currentUser.writer        // checked out
/// held?.write.name = "Joe"
/// currentUser.writer?.write.name = "Sally"  // nil: no effect
/// currentUser.writeNext { $0.write.name = "Bobo" }  // queued
/// held = nil                           // released: "Bobo" runs now
/// ```
///
/// `SingleWriter` is for one thread or one actor: it does no synchronization, so reads
/// and writes cost a load and a store. Use ``ThreadSafeSingleWriter`` to share state
/// between threads. Debug builds check this: using one container from two threads at
/// once is reported through ``RaceDetector``.
public final class SingleWriter<Value> {
  // Exclusivity here is proved by the design rather than checked at run time:
  // the type is confined to one thread, and each access below is a short
  // load or store. Bookkeeping comes before `value` so that the unspecialized
  // proxy `deinit` reaches it at fixed offsets, with no metadata lookup.
  @usableFromInline @exclusivity(unchecked) var isCheckedOut = false
  @usableFromInline @exclusivity(unchecked) var spare: WriterProxy<Value>?
  @usableFromInline @exclusivity(unchecked) var pending = FIFO<PendingWrite>()
  #if DEBUG
    // Debug builds log each read and write for RaceDetector, so that breaking the
    // one-thread premise above is reported, not silent. A `let` before `value`, like
    // the bookkeeping; every hook below is under `#if DEBUG`, so release builds are
    // untouched.
    @usableFromInline let accessLog = AccessLog()
    // Debug builds keep the run-time check on the value, so reading the container
    // from inside a mutation of the same value traps with "Simultaneous accesses".
    @usableFromInline var value: Value
  #else
    @usableFromInline @exclusivity(unchecked) var value: Value
  #endif

  /// A queued `writeNext` closure, wrapped so the queue stores it unboxed.
  @usableFromInline
  struct PendingWrite {
    @usableFromInline let body: (WriterProxy<Value>) -> Void
    @inlinable init(_ body: @escaping (WriterProxy<Value>) -> Void) { self.body = body }
  }

  /// Wraps `value` so that only one place at a time can write it.
  @inlinable
  public init(value: Value) {
    self.value = value
    #if DEBUG
      accessLog.container = self
    #endif
  }

  /// The current value, including writes made through a proxy that is still held.
  @inlinable
  public var read: Value {
    #if DEBUG
      accessLog.enter(.read)
      defer { accessLog.leave(.read) }
    #endif
    return value
  }

  /// A proxy for writing, or `nil` while another proxy is alive.
  ///
  /// The checkout lasts as long as the proxy does: hold it to keep every other
  /// writer out, drop it to let the next queued write run.
  ///
  /// ```swift
  /// if let writer = settings.writer {
  ///   writer.write.theme = .dark
  /// } else {
  ///   // Someone else is writing; try later or use writeNext.
  /// }
  /// ```
  @inlinable
  public var writer: WriterProxy<Value>? {
    guard !isCheckedOut else {
      #if DEBUG
        accessLog.check(.write)
      #endif
      return nil
    }
    #if DEBUG
      accessLog.beginCheckout()
    #endif
    isCheckedOut = true
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
  @inlinable
  public func writeNext(_ body: @escaping (WriterProxy<Value>) -> Void) {
    guard !isCheckedOut else {
      #if DEBUG
        accessLog.check(.write)
      #endif
      pending.append(PendingWrite(body))
      return
    }
    #if DEBUG
      accessLog.beginCheckout()
    #endif
    isCheckedOut = true
    if lend(body), !pending.isEmpty { drainPending() }
  }

  /// Mutates the value in place if the writer is free, and returns `nil` if it is not.
  ///
  /// No proxy is created, so this is the cheapest way to write.
  ///
  /// ```swift
  /// counter.tryWrite { $0 += 1 }
  /// ```
  @inlinable
  @discardableResult
  public func tryWrite<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R? {
    guard !isCheckedOut else {
      #if DEBUG
        accessLog.check(.write)
      #endif
      return nil
    }
    #if DEBUG
      accessLog.beginCheckout()
    #endif
    isCheckedOut = true
    defer {
      #if DEBUG
        accessLog.endCheckout()
      #endif
      isCheckedOut = false
      if !pending.isEmpty { drainPending() }
    }
    return try body(&value)
  }

  /// Lends a proxy to `body` for one write and takes it back afterwards, so the
  /// next write reuses it instead of allocating. Returns `false` when `body` kept
  /// the proxy: the checkout then lasts until ARC releases it.
  @inlinable
  func lend(_ body: (WriterProxy<Value>) -> Void) -> Bool {
    var proxy = spare.take() ?? WriterProxy(owner: self, lease: .lent)
    proxy.lease = .lent
    body(proxy)
    guard isKnownUniquelyReferenced(&proxy) else {
      proxy.keep()
      return false
    }
    proxy.lease = .idle
    spare = proxy
    #if DEBUG
      accessLog.endCheckout()
    #endif
    isCheckedOut = false
    return true
  }

  /// Runs queued writes one after another until the queue is empty or one of them
  /// keeps its proxy. A loop, not recursion: a deep queue uses no stack.
  @usableFromInline
  func drainPending() {
    while !isCheckedOut, let next = pending.popFirst() {
      #if DEBUG
        accessLog.beginCheckout()
      #endif
      isCheckedOut = true
      _ = lend(next.body)
    }
  }

  /// Called by an owning proxy's `deinit`.
  @usableFromInline
  func endCheckout() {
    #if DEBUG
      accessLog.endCheckout()
    #endif
    isCheckedOut = false
    if !pending.isEmpty { drainPending() }
  }
}

@available(*, unavailable, message: "SingleWriter is not thread-safe; use ThreadSafeSingleWriter")
extension SingleWriter: Sendable {}

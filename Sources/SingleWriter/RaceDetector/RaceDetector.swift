/// A debug-build check that code on different threads does not use one resource at
/// the same time in ways that conflict.
///
/// Mark where code reads or writes a resource, by name. Any number of threads may be
/// inside `.read` sections of one resource at once; a `.write` section overlaps no
/// section of another thread. When a thread enters a section that conflicts with one
/// another thread is still inside, the detector reports it at once, with both sites
/// and both threads, before the data has a chance to go bad. A thread never conflicts
/// with itself, and neither does a task that resumes on another thread.
///
/// A section begun in a task belongs to that task, not to its thread: while the task is
/// suspended inside it, say across an `await`, a section of another task conflicts with
/// it even on the same thread.
///
/// ```swift
/// func save(_ order: Order) {
///   RaceDetector.withAccess(.write, "orders") {
///     orders.append(order)
///   }
/// }
/// ```
///
/// ``SingleWriter`` marks its own accesses this way, so a plain container used from two
/// threads at once is reported too.
///
/// Release builds (without `DEBUG`) compile every call to nothing: `withAccess` is just
/// its body, and the resource name is never even built.
///
/// ## Lock order
///
/// Debug builds also check the order in which threads take the package's own locks: a
/// ``ThreadSafeSingleWriter``'s closure write (`withWriter`, `tryWrite`, `await write` and
/// a `writeNext` body run in place) or a checkout held through its proxy, and, from the
/// SingleWriterCompanions module, a `ReentrantMutex` and a `BarrierStore` write. The first time two of them are taken in both
/// orders, each while the other was held, ``onRace`` gets a report
/// (``RaceReport/Kind/lockOrderInversion``) that names both locks and where each order took
/// them, even if the two orders ran on different threads at different times and nothing
/// deadlocked yet:
///
/// ```swift
/// let accounts = ReentrantMutex()  // from SingleWriterCompanions
/// let ledger = ThreadSafeSingleWriter(value: [String]())
///
/// accounts.with { ledger.withWriter { $0.append("transfer") } }  // accounts, then ledger
/// ledger.withWriter { entries in
///   accounts.with { entries.append("audit") }  // ledger, then accounts: reported here
/// }
/// ```
///
/// Only a call that can wait for a lock orders it after the locks held: `withWriter`,
/// `await write`, `checkout()`, a `ReentrantMutex`'s outermost `with`, a `BarrierStore`
/// write; and a `writeNext` that queues on a container made with `maxQueuedWrites`, which
/// may wait for room. Reads are not checked, though a read waits for a write access in
/// progress: two containers read inside each other's writes or reads, in both orders, can
/// deadlock unreported. `tryWrite`, `writer` and any other `writeNext` never wait, so taking
/// them inside another lock is no order; but what they hold keeps others waiting, so a lock taken inside
/// them is ordered after them. A nested `with` of a `ReentrantMutex` is no new order. The
/// writes that a thread runs from a container's queue run inside the locks it holds: one
/// that takes such a lock is reported too (``RaceReport/Kind/servedWriteTakesHeldLock``),
/// the deadlock that `writeNext`'s documentation warns of.
///
/// Locks are told apart by identity and named by type and address; the calls that take
/// them name their caller's file and line (`writer()` does, the `writer` property cannot).
/// A proxy counts as held by the task that took it, or by its thread outside any task,
/// until it is released, wherever it has gone since (a proxy kept from the caller's own
/// `writeNext` body included), known by the identity the container records for its
/// holder, which no later task or thread is given. An `await write`, `checkout()` or
/// `drained()` that suspends is ordered after the checkouts its task holds, not after the
/// locks of the synchronous code a `Task.immediate` started it from, which go on and are
/// let go while it waits. Each pair is reported once.
///
/// Release builds compile all of it to nothing. In debug builds it costs about 40 ns per
/// acquisition, and 60 ns more for one taken inside another, with no allocation once a
/// pair of locks has been seen (x86_64 Linux; a debug `withWriter` itself costs about
/// 450 ns). ``checksLockOrder`` turns it off.
public enum RaceDetector {
  /// Marks the start of a section that `mode`s `resource`, until the matching
  /// ``end(_:_:file:function:line:)`` in the same task, or on the same thread outside
  /// any task.
  ///
  /// ```swift
  /// RaceDetector.begin(.read, "cache \(key)")
  /// let hit = cache[key]
  /// RaceDetector.end(.read, "cache \(key)")
  /// ```
  ///
  /// If another thread is inside a conflicting section of `resource`, ``onRace`` gets a
  /// report before this returns.
  @inlinable @inline(__always)
  public static func begin(
    _ mode: AccessMode, _ resource: @autoclosure () -> String,
    file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) {
    #if DEBUG
      NamedSections.shared.begin(mode, resource(), file, function, line)
    #endif
  }

  /// Marks the end of the section that ``begin(_:_:file:function:line:)`` started
  /// in this task, or on this thread outside any task.
  ///
  /// ```swift
  /// RaceDetector.begin(.write, "log")
  /// log.append(line)
  /// RaceDetector.end(.write, "log")
  /// ```
  ///
  /// Ending a section that was never begun stops the program with a message.
  @inlinable @inline(__always)
  public static func end(
    _ mode: AccessMode, _ resource: @autoclosure () -> String,
    file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
  ) {
    #if DEBUG
      NamedSections.shared.end(mode, resource(), file, function, line)
    #endif
  }

  /// Runs `body` inside a section that `mode`s `resource`, and returns its result.
  ///
  /// ```swift
  /// let count = RaceDetector.withAccess(.read, "orders") { orders.count }
  /// ```
  @inlinable @inline(__always)
  @discardableResult
  public static func withAccess<R, E: Error>(
    _ mode: AccessMode, _ resource: @autoclosure () -> String,
    file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: () throws(E) -> R
  ) throws(E) -> R {
    #if DEBUG
      let name = resource()
      NamedSections.shared.begin(mode, name, file, function, line)
      defer { NamedSections.shared.end(mode, name, file, function, line) }
    #endif
    return try body()
  }

  /// Whether debug builds check the order in which threads take the package's locks;
  /// `true` by default, and always `false` in release builds, which check nothing.
  ///
  /// ```swift
  /// RaceDetector.checksLockOrder = false  // for the whole process, from now on
  /// ```
  ///
  /// See "Lock order" above for what is checked. Turning it off stops new acquisitions
  /// from being recorded; those held already are forgotten as they are released. Turn it
  /// off for code that takes locks in both orders on purpose, or where a proxy that went
  /// to another thread makes this thread look like its holder.
  public static var checksLockOrder: Bool {
    get {
      #if DEBUG
        lockOrderWords.isOn
      #else
        false
      #endif
    }
    set {
      #if DEBUG
        lockOrderWords.turn(on: newValue)
      #endif
    }
  }

  /// Receives every report, on the thread whose entry was the race, or that took the
  /// lock completing a lock-order inversion.
  ///
  /// The default prints the report and the call stack to standard error, then stops
  /// with `assertionFailure`, for a race and a potential deadlock alike. Replace it to log,
  /// count or collect reports instead:
  ///
  /// ```swift
  /// RaceDetector.onRace = { report in logger.error("\(report)") }
  /// ```
  ///
  /// Reading and setting it is thread-safe. The handler runs with no lock held.
  public static var onRace: @Sendable (RaceReport) -> Void {
    get { RaceHandlerStore.shared.handler }
    set { RaceHandlerStore.shared.handler = newValue }
  }
}

// A SingleWriter's record of who is reading and writing it, kept in debug builds
// so that use from two threads at once is reported instead of corrupting the value.
#if DEBUG
  /// The open sections on one `SingleWriter`: its checkout, a write section from
  /// checkout to release, and the `read`s in progress.
  ///
  /// The container calls in at each access, with its own sites: the reports' stacks
  /// show the caller.
  @usableFromInline
  final class AccessLog {
    // `table` is only touched with `mutex` held, so no run-time exclusivity check.
    private let mutex = RaceMutex()
    // Thread or task: a SingleWriter is confined to one thread or actor (see RaceContext).
    @exclusivity(unchecked) private var table = SectionTable(tasksOwnSections: false)
    /// The container, for naming it in reports. Unowned: it owns this log.
    @usableFromInline unowned(unsafe) var container: AnyObject?

    @usableFromInline init() {}

    deinit {
      table.destroy()
      mutex.destroy()
    }

    /// Opens a section that lasts until `leave`.
    @usableFromInline
    func enter(
      _ mode: AccessMode, file: StaticString = #fileID, function: StaticString = #function,
      line: UInt = #line
    ) {
      var context = RaceContext.current
      mutex.lock()
      let conflict = table.conflict(mode, &context)
      table.enter(mode, &context, isCheckout: false, file, function, line)
      guard let conflict else { return mutex.unlock() }
      unlockAndReport(conflict, mode, file, function, line)
    }

    @usableFromInline
    func leave(_ mode: AccessMode) {
      var context = RaceContext.current
      mutex.lock()
      _ = table.leave(mode, &context)
      mutex.unlock()
    }

    /// An access too short to hold a section: checked, not recorded.
    @usableFromInline
    func check(
      _ mode: AccessMode, file: StaticString = #fileID, function: StaticString = #function,
      line: UInt = #line
    ) {
      var context = RaceContext.current
      mutex.lock()
      guard let conflict = table.conflict(mode, &context) else { return mutex.unlock() }
      unlockAndReport(conflict, mode, file, function, line)
    }

    /// Opens the checkout's write section, which `endCheckout` closes from any thread.
    @usableFromInline
    func beginCheckout(
      file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
    ) {
      var context = RaceContext.current
      mutex.lock()
      let conflict = table.conflict(.write, &context)
      table.enter(.write, &context, isCheckout: true, file, function, line)
      guard let conflict else { return mutex.unlock() }
      unlockAndReport(conflict, .write, file, function, line)
    }

    @usableFromInline
    func endCheckout() {
      var context = RaceContext.current
      mutex.lock()
      table.endCheckout(&context)
      mutex.unlock()
    }

    /// The slow path, out of line so the checks above stay small: reads the section at
    /// `index` while still locked, then reports with the lock released.
    @inline(never)
    private func unlockAndReport(
      _ index: Int, _ mode: AccessMode,
      _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      let inside = table[index].access()
      mutex.unlock()
      let name =
        container.map { "\(type(of: $0)) \(Unmanaged.passUnretained($0).toOpaque())" }
        ?? "a SingleWriter"
      RaceHandlerStore.shared.handler(
        makeRaceReport(
          resource: name, inside: inside, entering: mode, file, function, line,
          advice: """
            SingleWriter does no locking: confine it to one thread or actor, or share \
            a ThreadSafeSingleWriter instead.
            """))
    }
  }
#endif

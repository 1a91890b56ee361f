// The bookkeeping behind RaceDetector: who is inside which resource. Debug only.
#if DEBUG
  extension AccessMode {
    /// `self == .write` without `==`, which a debug build calls through a witness.
    var isWrite: Bool {
      if case .write = self { return true }
      return false
    }
  }

  /// One thread's (or task's) open section on a resource.
  ///
  /// Trivially copyable, so the table below moves sections with plain loads and stores:
  /// it runs on every access in debug builds, where generic code is slow. The table
  /// owns a +1 on `label`.
  struct RaceSection {
    let context: RaceContext
    let label: Unmanaged<ThreadLabel>
    let mode: AccessMode
    let file: StaticString
    let function: StaticString
    let line: UInt
    /// A SingleWriter checkout: ended by whoever ends the checkout, not matched by context.
    let isCheckout: Bool
    /// Re-entries by the same context, which never conflict with each other.
    var depth: Int

    func access() -> RaceReport.Access {
      var context = context
      return RaceReport.Access(
        mode: mode, file: "\(file)", function: "\(function)", line: line,
        thread: context.describe(label.takeUnretainedValue()))
    }
  }

  /// The open sections on one resource, in a buffer of their own. Callers hold the
  /// resource's lock, and call `destroy` before dropping a table.
  ///
  /// Written with indices and an unsafe buffer rather than Array and closures: in a
  /// debug build every generic collection call looks up metadata at run time.
  struct SectionTable {
    private var base: UnsafeMutablePointer<RaceSection>?
    private var capacity = 0
    private(set) var count = 0
    /// Which rule tells a context's own sections: `RaceContext.isOwner(of:)` if set,
    /// else `RaceContext.sharesThreadOrTask(with:)`.
    private let tasksOwnSections: Bool

    init(tasksOwnSections: Bool) { self.tasksOwnSections = tasksOwnSections }

    /// Whether the section at `index` is `context`'s own.
    private func owns(_ context: inout RaceContext, _ index: Int) -> Bool {
      tasksOwnSections
        ? context.isOwner(of: base![index].context)
        : context.sharesThreadOrTask(with: base![index].context)
    }

    subscript(index: Int) -> RaceSection { base![index] }

    /// The index of the first section of another context that `mode` may not
    /// overlap, or nil.
    func conflict(_ mode: AccessMode, _ context: inout RaceContext) -> Int? {
      var index = 0
      while index < count {
        // Fields are read in place: copying a whole section costs a memcpy here.
        if (mode.isWrite || base![index].mode.isWrite)
          && !owns(&context, index)
        {
          return index
        }
        index += 1
      }
      return nil
    }

    mutating func enter(
      _ mode: AccessMode, _ context: inout RaceContext, isCheckout: Bool,
      _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      if !isCheckout, let index = find(mode, &context, fromEnd: false) {
        base![index].depth += 1
        return
      }
      if count == capacity { grow() }
      // A plain store: sections are trivial, so uninitialized memory may be assigned.
      base![count] = RaceSection(
        context: context.resolved(), label: .passRetained(.current), mode: mode,
        file: file, function: function, line: line, isCheckout: isCheckout, depth: 1)
      count += 1
    }

    /// Leaves the innermost matching section; `false` if there is none.
    mutating func leave(_ mode: AccessMode, _ context: inout RaceContext) -> Bool {
      guard let index = find(mode, &context, fromEnd: true) else { return false }
      base![index].depth -= 1
      if base![index].depth == 0 { remove(at: index) }
      return true
    }

    /// Ends a checkout: this context's if it has one, else the oldest.
    mutating func endCheckout(_ context: inout RaceContext) {
      var found: Int?
      var index = 0
      while index < count {
        if base![index].isCheckout && (found == nil || owns(&context, index)) {
          found = index
        }
        index += 1
      }
      if let found { remove(at: found) }
    }

    /// Frees the buffer and the labels it holds.
    mutating func destroy() {
      while count > 0 { remove(at: count - 1) }
      base?.deallocate()
      base = nil
      capacity = 0
    }

    private func find(_ mode: AccessMode, _ context: inout RaceContext, fromEnd: Bool) -> Int? {
      var step = 0
      while step < count {
        let index = fromEnd ? count - 1 - step : step
        if !base![index].isCheckout && base![index].mode.isWrite == mode.isWrite
          && owns(&context, index)
        {
          return index
        }
        step += 1
      }
      return nil
    }

    private mutating func remove(at index: Int) {
      base![index].label.release()
      var next = index + 1
      while next < count {
        base![next - 1] = base![next]
        next += 1
      }
      count -= 1
    }

    private mutating func grow() {
      let newCapacity = max(4, capacity * 2)
      let newBase = UnsafeMutablePointer<RaceSection>.allocate(capacity: newCapacity)
      if let base {
        newBase.initialize(from: base, count: count)
        base.deallocate()
      }
      base = newBase
      capacity = newCapacity
    }
  }

  /// Builds the report for `context` entering a `mode` section that overlaps `inside`.
  /// Runs on the entering thread, so its stack is the one captured.
  func makeRaceReport(
    resource: String, inside: RaceReport.Access, entering mode: AccessMode,
    _ file: StaticString, _ function: StaticString, _ line: UInt, advice: String? = nil
  ) -> RaceReport {
    var context = RaceContext.current
    return RaceReport(
      resource: resource,
      inside: inside,
      entering: RaceReport.Access(
        mode: mode, file: "\(file)", function: "\(function)", line: line,
        thread: context.describe(.current)),
      callStack: currentCallStack(),
      advice: advice)
  }

  /// The sections of resources named by strings, for `RaceDetector.begin` and `end`.
  @usableFromInline
  final class NamedSections: @unchecked Sendable {
    // Sendable: `tables` is only touched with `mutex` held.
    @usableFromInline static let shared = NamedSections()

    private let mutex = RaceMutex()
    // Empty tables stay, so a hot resource costs no allocation per section; they are
    // swept when there are many, for names built from keys or ids.
    private var tables: [String: SectionTable] = [:]
    private var sweepAt = 1024

    @usableFromInline
    func begin(
      _ mode: AccessMode, _ resource: String,
      _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      var context = RaceContext.current
      mutex.lock()
      if tables.count >= sweepAt { sweep() }
      // One hash lookup: the table is found or made, checked and entered in place.
      let inside = Self.enter(
        &tables[resource, default: SectionTable(tasksOwnSections: true)], mode, &context, file,
        function, line)
      guard let inside else { return mutex.unlock() }
      unlockAndReport(inside, resource, mode, file, function, line)
    }

    /// Enters a section in `table`, and returns the section it conflicts with, if any.
    private static func enter(
      _ table: inout SectionTable, _ mode: AccessMode, _ context: inout RaceContext,
      _ file: StaticString, _ function: StaticString, _ line: UInt
    ) -> RaceSection? {
      let conflict = table.conflict(mode, &context)
      table.enter(mode, &context, isCheckout: false, file, function, line)
      guard let conflict else { return nil }
      return table[conflict]
    }

    /// The slow path, out of line so `begin` stays small. The handler runs unlocked:
    /// it may stop the program, or take its own locks.
    @inline(never)
    private func unlockAndReport(
      _ inside: RaceSection, _ resource: String, _ mode: AccessMode,
      _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      let inside = inside.access()
      mutex.unlock()
      RaceHandlerStore.shared.handler(
        makeRaceReport(
          resource: "\"\(resource)\"", inside: inside, entering: mode, file, function, line))
    }

    @usableFromInline
    func end(
      _ mode: AccessMode, _ resource: String,
      _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      var context = RaceContext.current
      mutex.lock()
      let found = tables[resource]?.leave(mode, &context) ?? false
      mutex.unlock()
      if !found { unmatchedEndFailure(mode, resource, file, line) }
    }

    private func sweep() {
      for (resource, table) in tables where table.count == 0 {
        tables[resource]!.destroy()
        tables[resource] = nil
      }
      sweepAt = max(1024, tables.count * 2)
    }
  }

  @inline(never)
  func unmatchedEndFailure(
    _ mode: AccessMode, _ resource: String, _ file: StaticString, _ line: UInt
  ) -> Never {
    fatalError(
      """
      RaceDetector.end(.\(mode), "\(resource)") at \(file):\(line) has no matching \
      begin in this task (or on this thread, outside any task)
      """)
  }
#endif

/// Where reports go: `RaceDetector.onRace`.
final class RaceHandlerStore: @unchecked Sendable {
  // Sendable: `stored` is only touched with `mutex` held.
  static let shared = RaceHandlerStore()

  private let mutex = RaceMutex()
  private var stored: @Sendable (RaceReport) -> Void = RaceHandlerStore.standardHandler

  var handler: @Sendable (RaceReport) -> Void {
    get {
      mutex.lock()
      defer { mutex.unlock() }
      return stored
    }
    set {
      mutex.lock()
      stored = newValue
      mutex.unlock()
    }
  }

  /// Prints the report and its stack to standard error, then stops a debug build: a race
  /// and a lock-order report alike.
  static let standardHandler: @Sendable (RaceReport) -> Void = { report in
    #if DEBUG
      var text = "RaceDetector: \(report)\n"
      for frame in report.callStack { text += "    \(frame)\n" }
      writeToStandardError(text)
    #endif
    switch report.kind {
    case .race:
      assertionFailure("data race on \(report.resource); the report is on standard error")
    case .lockOrderInversion, .servedWriteTakesHeldLock:
      assertionFailure(
        "potential deadlock on \(report.resource); the report is on standard error")
    }
  }
}

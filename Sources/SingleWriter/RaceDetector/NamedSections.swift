// The bookkeeping behind RaceDetector: who is inside which resource. Debug only.
#if DEBUG
  extension AccessMode {
    /// `self == .write` without `==`, which a debug build calls through a witness.
    var isWrite: Bool {
      if case .write = self { return true }
      return false
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

#if DEBUG
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
#endif

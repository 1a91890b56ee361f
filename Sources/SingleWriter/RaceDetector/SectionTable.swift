#if DEBUG
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
    /// else `RaceContext.sharesThreadOrTask(with:)` for a checkout, which an actor's tasks
    /// share as they take turns. Any other section (an access, a read) is its task's alone
    /// either way: an access held across an `await` may go on off the actor, while the
    /// actor's other tasks run, and two accesses at once are a race wherever they run.
    private let tasksOwnSections: Bool

    init(tasksOwnSections: Bool) { self.tasksOwnSections = tasksOwnSections }

    /// Whether the section at `index` is `context`'s own.
    private func owns(_ context: inout RaceContext, _ index: Int) -> Bool {
      tasksOwnSections || !base![index].isCheckout
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
#endif

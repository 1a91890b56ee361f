import SingleWriterAtomics

#if DEBUG
  /// One thread's held locks, innermost last, and the edges it has already seen recorded.
  /// Behind a pointer in a thread slot, freed when the thread exits; only its thread
  /// touches it, so nothing here is atomic.
  ///
  /// Written with an unsafe buffer and index loops: in a debug build every generic
  /// collection call looks up metadata at run time, and this runs on every acquisition.
  struct LockStack {
    private var base: UnsafeMutablePointer<HeldLock>
    private var capacity = 8
    private(set) var count = 0
    /// How many entries are serving markers.
    private(set) var serving = 0
    /// Edges known to be in the graph, direct-mapped: `from` and `to` of each slot. An
    /// edge seen once costs no lock and no lookup in the graph again.
    private let known: UnsafeMutablePointer<UInt>
    /// The graph's generation when `known` was filled: a lock freed since may have left
    /// edges here that the graph no longer has.
    private var knownGeneration: UInt32 = 0
    private static let knownSlots = 64

    init() {
      base = .allocate(capacity: capacity)
      known = .allocate(capacity: 2 * Self.knownSlots)
      known.initialize(repeating: 0, count: 2 * Self.knownSlots)
    }

    func destroy() {
      base.deallocate()
      known.deallocate()
    }

    subscript(index: Int) -> HeldLock { base[index] }

    mutating func push(
      _ id: UInt, _ file: StaticString, _ function: StaticString, _ line: UInt,
      isServing: Bool
    ) {
      if count == capacity { grow() }
      // Trivial: uninitialized memory may be assigned.
      base[count] = HeldLock(
        id: id, site: LockSite(file: file, function: function, line: line),
        isServing: isServing)
      count += 1
      if isServing { serving += 1 }
    }

    /// Drops the innermost entry for `id`, if any: a lock taken while checking was off
    /// was never pushed.
    mutating func pop(_ id: UInt) {
      var index = count - 1
      while index >= 0 {
        if base[index].id == id {
          if base[index].isServing { serving -= 1 }
          while index + 1 < count {
            base[index] = base[index + 1]
            index += 1
          }
          count -= 1
          return
        }
        index -= 1
      }
    }

    /// The index of the innermost serving marker; only while `serving` is not 0.
    func innermostServing() -> Int {
      var index = count - 1
      while !base[index].isServing { index -= 1 }
      return index
    }

    /// Forgets the known edges if the graph dropped any since they were seen.
    mutating func refreshKnown(_ generation: UInt32) {
      guard generation != knownGeneration else { return }
      known.update(repeating: 0, count: 2 * Self.knownSlots)
      knownGeneration = generation
    }

    private static func slot(_ from: UInt, _ to: UInt) -> Int {
      let mixed = (UInt64(from) ^ (UInt64(to) &<< 1)) &* 0x9E37_79B9_7F4A_7C15
      return 2 * Int(truncatingIfNeeded: mixed &>> 58)  // 64 slots
    }

    func knows(_ from: UInt, _ to: UInt) -> Bool {
      let slot = Self.slot(from, to)
      return known[slot] == from && known[slot + 1] == to
    }

    func remember(_ from: UInt, _ to: UInt) {
      let slot = Self.slot(from, to)
      known[slot] = from
      known[slot + 1] = to
    }

    private mutating func grow() {
      let newBase = UnsafeMutablePointer<HeldLock>.allocate(capacity: capacity * 2)
      newBase.initialize(from: base, count: count)
      base.deallocate()
      base = newBase
      capacity *= 2
    }
  }
#endif

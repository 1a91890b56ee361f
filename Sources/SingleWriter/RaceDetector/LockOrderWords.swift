import SingleWriterAtomics

#if DEBUG
  /// The atomic words every hook reads, outside `LockGraph` so that reading one costs no
  /// reference count in a debug build: on or off, the graph's generation (bumped when
  /// edges are dropped), how many checkouts are held, and a bit per hash of a lock that
  /// has had an edge.
  struct LockOrderWords: @unchecked Sendable {
    // Sendable: the pointee is atomic words, allocated once and never freed.
    let base: UnsafeMutablePointer<sw_atomic_u32>
    static let bitsWords = 64
    private static let firstBitsWord = 3

    init() {
      let count = Self.firstBitsWord + Self.bitsWords
      base = .allocate(capacity: count)
      base.initialize(repeating: sw_atomic_u32(), count: count)
      sw_store_release(base, 1)
    }

    var isOn: Bool { sw_load_relaxed(base) != 0 }
    func turn(on: Bool) { sw_store_release(base, on ? 1 : 0) }

    var generation: UInt32 { sw_load_acquire(base + 1) }
    func nextGeneration() { sw_fetch_add(base + 1, 1) }

    var hasCheckouts: Bool { sw_load_relaxed(base + 2) != 0 }
    func setCheckouts(_ count: Int) { sw_store_release(base + 2, UInt32(count)) }

    /// The word and mask of `id`'s bit.
    func bit(_ id: UInt) -> (word: UnsafeMutablePointer<sw_atomic_u32>, mask: UInt32) {
      let hash = Int(truncatingIfNeeded: (UInt64(id) &* 0x9E37_79B9_7F4A_7C15) &>> 53)  // 2048
      return (base + Self.firstBitsWord + hash / 32, 1 << UInt32(hash % 32))
    }

    func setBit(_ id: UInt) {
      let (word, mask) = bit(id)
      sw_fetch_or(word, mask)
    }

    /// Whether `id` may have edges: `false` means it has none.
    func mayHaveEdges(_ id: UInt) -> Bool {
      let (word, mask) = bit(id)
      return sw_load_relaxed(word) & mask != 0
    }
  }
#endif

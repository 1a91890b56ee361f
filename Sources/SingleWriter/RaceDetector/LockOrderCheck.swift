// Lock-order checking (lockdep) for the package's own locks, in debug builds: each thread
// keeps the locks it holds, innermost last, and every lock taken by a call that can wait
// records an edge from each of them to it. The edges live in `LockGraph`.
import SingleWriterAtomics

#if DEBUG
  /// Where a lock was taken: the site of the public call, passed down to the hooks.
  struct LockSite {
    let file: StaticString
    let function: StaticString
    let line: UInt
  }

  /// A lock a thread holds: a closure-scoped hold (a `ReentrantMutex`'s outermost `with`, a
  /// closure write, a `writeNext` body run in place, a `BarrierStore` write), or a
  /// container whose queue the thread serves. Trivial, so the stack moves it with plain
  /// loads and stores.
  struct HeldLock {
    let id: UInt
    let site: LockSite
    /// The thread serves this container's queue: the writes it runs are other code's,
    /// and the locks below this one in the stack are not theirs.
    let isServing: Bool
  }

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

  /// Frees a thread's stack when the thread exits; the thread-local pointer is the fast
  /// way to it (`sw_lock_order_stack`).
  let lockStackSlot: UInt = sw_thread_slot_create { raw in
    guard let raw else { return }
    sw_set_lock_order_stack(nil)
    let stack = raw.assumingMemoryBound(to: LockStack.self)
    stack.pointee.destroy()
    stack.deinitialize(count: 1)
    stack.deallocate()
  }

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

  let lockOrderWords = LockOrderWords()

  /// The hooks that the package's locks call, each from inside `#if DEBUG`, with the
  /// lock's identity and the public call's site.
  ///
  /// What creates an edge, from every lock the thread (or its task) holds to the one
  /// taken: a call that can wait for the lock (`willTake`, `willWait`): `withWriter`,
  /// `await write`, `checkout()`, a `ReentrantMutex`'s outermost `with`, a `BarrierStore`
  /// write. A call that never waits (`took`: `tryWrite`, `writeNext` run in place, `writer`)
  /// creates none to its lock, but holds it, so what is taken inside does get an edge from
  /// it. A reentrant `with` is no new order.
  @usableFromInline
  enum LockOrderCheck {
    /// The calling thread's stack, made on first use.
    static var stack: UnsafeMutablePointer<LockStack> {
      if let raw = sw_lock_order_stack() { return raw.assumingMemoryBound(to: LockStack.self) }
      let stack = UnsafeMutablePointer<LockStack>.allocate(capacity: 1)
      stack.initialize(to: LockStack())
      sw_thread_slot_set(lockStackSlot, stack)
      sw_set_lock_order_stack(stack)
      return stack
    }

    /// `lock` is about to be taken by a call that waits for it, and is held from then on
    /// until `released`.
    @usableFromInline
    static func willTake(
      _ lock: ObjectIdentifier, _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      guard lockOrderWords.isOn else { return }
      let stack = Self.stack
      if stack.pointee.count != 0 || lockOrderWords.hasCheckouts {
        check(UInt(bitPattern: lock), LockSite(file: file, function: function, line: line), stack)
      }
      stack.pointee.push(UInt(bitPattern: lock), file, function, line, isServing: false)
    }

    /// This thread or task is about to wait for `lock`, which, if it is then taken here,
    /// `took` records: an `await write` that may run its body on another thread, or a
    /// `checkout()`.
    @usableFromInline
    static func willWait(
      for lock: ObjectIdentifier, _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      guard lockOrderWords.isOn else { return }
      let stack = Self.stack
      guard stack.pointee.count != 0 || lockOrderWords.hasCheckouts else { return }
      check(UInt(bitPattern: lock), LockSite(file: file, function: function, line: line), stack)
    }

    /// `lock` was taken by a call that never waits, and is held until `released`.
    @usableFromInline
    static func took(
      _ lock: ObjectIdentifier, _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      guard lockOrderWords.isOn else { return }
      Self.stack.pointee.push(UInt(bitPattern: lock), file, function, line, isServing: false)
    }

    /// A hold from `willTake` or `took` ends. Runs whether or not checking is on, so that
    /// turning it off never strands an entry.
    @usableFromInline
    static func released(_ lock: ObjectIdentifier) {
      guard let raw = sw_lock_order_stack() else { return }
      raw.assumingMemoryBound(to: LockStack.self).pointee.pop(UInt(bitPattern: lock))
    }

    /// A `ReentrantMutex` this thread holds is taken again: no new order, unless a write
    /// this thread serves for others takes it.
    @usableFromInline
    static func reentered(
      _ lock: ObjectIdentifier, _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      guard let raw = sw_lock_order_stack() else { return }
      let stack = raw.assumingMemoryBound(to: LockStack.self)
      guard stack.pointee.serving != 0, lockOrderWords.isOn else { return }
      checkServed(
        UInt(bitPattern: lock), LockSite(file: file, function: function, line: line), stack)
    }

    /// This thread begins serving `container`'s queue: it holds the checkout, and the
    /// writes it runs are other code's.
    @usableFromInline
    static func beginServing(
      _ container: ObjectIdentifier, file: StaticString = #fileID,
      function: StaticString = #function, line: UInt = #line
    ) {
      guard lockOrderWords.isOn else { return }
      Self.stack.pointee.push(UInt(bitPattern: container), file, function, line, isServing: true)
    }

    /// The proxy that `container` just lent out for a checkout (`writer`, `checkout()`)
    /// is held by this task, or this thread outside any task, until `checkoutEnded`.
    @usableFromInline
    static func checkedOut(
      _ container: ObjectIdentifier, _ file: StaticString, _ function: StaticString,
      _ line: UInt
    ) {
      guard lockOrderWords.isOn else { return }
      LockGraph.shared.checkedOut(
        UInt(bitPattern: container), LockSite(file: file, function: function, line: line))
    }

    /// The proxy that owned `container`'s checkout was released, on any thread.
    @usableFromInline
    static func checkoutEnded(_ container: ObjectIdentifier) {
      guard lockOrderWords.hasCheckouts else { return }
      LockGraph.shared.checkoutEnded(UInt(bitPattern: container))
    }

    /// `lock` is being freed: its edges go, so that a lock made later at its address
    /// starts with none.
    @usableFromInline
    static func forget(_ lock: ObjectIdentifier) {
      let id = UInt(bitPattern: lock)
      guard lockOrderWords.mayHaveEdges(id) else { return }
      LockGraph.shared.forget(id)
    }

    /// Records an edge to `id` from every lock held, reporting the first inversion of
    /// each pair, and a served write taking a lock its thread took before serving.
    private static func check(
      _ id: UInt, _ site: LockSite, _ stack: UnsafeMutablePointer<LockStack>
    ) {
      let graph = LockGraph.shared
      let count = stack.pointee.count
      if count != 0 {
        stack.pointee.refreshKnown(lockOrderWords.generation)
        var index = 0
        while index < count {
          let held = stack.pointee[index]
          if held.id != id && !stack.pointee.knows(held.id, id) {
            graph.record(held.id, held.site, heldBy: nil, to: id, site)
            stack.pointee.remember(held.id, id)
          }
          index += 1
        }
        if stack.pointee.serving != 0 { checkServed(id, site, stack) }
      }
      if lockOrderWords.hasCheckouts {
        let serving = stack.pointee.serving
        graph.recordFromCheckouts(
          to: id, site,
          servingFor: serving == 0 ? nil : stack.pointee[stack.pointee.innermostServing()].id)
      }
    }

    /// Reports `id` taken inside a served write while this thread holds it from before
    /// it began serving (below the innermost serving marker).
    private static func checkServed(
      _ id: UInt, _ site: LockSite, _ stack: UnsafeMutablePointer<LockStack>
    ) {
      let marker = stack.pointee.innermostServing()
      var index = 0
      while index < marker {
        let held = stack.pointee[index]
        if held.id == id {
          LockGraph.shared.servedWriteTakes(
            id, heldAt: held.site, heldBy: nil, at: site, serving: stack.pointee[marker].id)
          return
        }
        index += 1
      }
    }
  }
#endif

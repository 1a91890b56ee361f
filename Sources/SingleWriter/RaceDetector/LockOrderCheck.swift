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

    mutating func push(_ lock: HeldLock) {
      if count == capacity { grow() }
      base[count] = lock  // trivial: uninitialized memory may be assigned
      count += 1
      if lock.isServing { serving += 1 }
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

  let lockStackSlot: UInt = sw_thread_slot_create { raw in
    guard let raw else { return }
    let stack = raw.assumingMemoryBound(to: LockStack.self)
    stack.pointee.destroy()
    stack.deinitialize(count: 1)
    stack.deallocate()
  }

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
      if let raw = sw_thread_slot_get(lockStackSlot) {
        return raw.assumingMemoryBound(to: LockStack.self)
      }
      let stack = UnsafeMutablePointer<LockStack>.allocate(capacity: 1)
      stack.initialize(to: LockStack())
      sw_thread_slot_set(lockStackSlot, stack)
      return stack
    }

    /// `lock` is about to be taken by a call that waits for it, and is held from then on
    /// until `released`.
    @usableFromInline
    static func willTake(
      _ lock: ObjectIdentifier, _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      let graph = LockGraph.shared
      guard graph.isOn else { return }
      let id = UInt(bitPattern: lock)
      let site = LockSite(file: file, function: function, line: line)
      let stack = Self.stack
      check(id, site, stack, graph)
      stack.pointee.push(HeldLock(id: id, site: site, isServing: false))
    }

    /// This thread or task is about to wait for `lock`, which, if it is then taken here,
    /// `took` records: an `await write` that may run its body on another thread, or a
    /// `checkout()`.
    @usableFromInline
    static func willWait(
      for lock: ObjectIdentifier, _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      let graph = LockGraph.shared
      guard graph.isOn else { return }
      let site = LockSite(file: file, function: function, line: line)
      check(UInt(bitPattern: lock), site, Self.stack, graph)
    }

    /// `lock` was taken by a call that never waits, and is held until `released`.
    @usableFromInline
    static func took(
      _ lock: ObjectIdentifier, _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      guard LockGraph.shared.isOn else { return }
      Self.stack.pointee.push(
        HeldLock(
          id: UInt(bitPattern: lock), site: LockSite(file: file, function: function, line: line),
          isServing: false))
    }

    /// A hold from `willTake` or `took` ends. Runs whether or not checking is on, so that
    /// turning it off never strands an entry.
    @usableFromInline
    static func released(_ lock: ObjectIdentifier) {
      guard let raw = sw_thread_slot_get(lockStackSlot) else { return }
      raw.assumingMemoryBound(to: LockStack.self).pointee.pop(UInt(bitPattern: lock))
    }

    /// A `ReentrantMutex` this thread holds is taken again: no new order, unless a write
    /// this thread serves for others takes it.
    @usableFromInline
    static func reentered(
      _ lock: ObjectIdentifier, _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      guard let raw = sw_thread_slot_get(lockStackSlot) else { return }
      let stack = raw.assumingMemoryBound(to: LockStack.self)
      guard stack.pointee.serving != 0, LockGraph.shared.isOn else { return }
      checkServed(
        UInt(bitPattern: lock), LockSite(file: file, function: function, line: line), stack,
        LockGraph.shared)
    }

    /// This thread begins serving `container`'s queue: it holds the checkout, and the
    /// writes it runs are other code's.
    @usableFromInline
    static func beginServing(
      _ container: ObjectIdentifier, file: StaticString = #fileID,
      function: StaticString = #function, line: UInt = #line
    ) {
      guard LockGraph.shared.isOn else { return }
      Self.stack.pointee.push(
        HeldLock(
          id: UInt(bitPattern: container),
          site: LockSite(file: file, function: function, line: line), isServing: true))
    }

    /// The proxy that `container` just lent out for a checkout (`writer`, `checkout()`)
    /// is held by this task, or this thread outside any task, until `checkoutEnded`.
    @usableFromInline
    static func checkedOut(
      _ container: ObjectIdentifier, _ file: StaticString, _ function: StaticString,
      _ line: UInt
    ) {
      let graph = LockGraph.shared
      guard graph.isOn else { return }
      graph.checkedOut(
        UInt(bitPattern: container), LockSite(file: file, function: function, line: line))
    }

    /// The proxy that owned `container`'s checkout was released, on any thread.
    @usableFromInline
    static func checkoutEnded(_ container: ObjectIdentifier) {
      LockGraph.shared.checkoutEnded(UInt(bitPattern: container))
    }

    /// `lock` is being freed: its edges go, so that a lock made later at its address
    /// starts with none.
    @usableFromInline
    static func forget(_ lock: ObjectIdentifier) {
      LockGraph.shared.forget(UInt(bitPattern: lock))
    }

    /// Records an edge to `id` from every lock held, reporting the first inversion of
    /// each pair, and a served write taking a lock its thread took before serving.
    private static func check(
      _ id: UInt, _ site: LockSite, _ stack: UnsafeMutablePointer<LockStack>, _ graph: LockGraph
    ) {
      let count = stack.pointee.count
      if count != 0 {
        stack.pointee.refreshKnown(graph.generation)
        var index = 0
        while index < count {
          let held = stack.pointee[index]
          if held.id != id && !stack.pointee.knows(held.id, id) {
            graph.record(held.id, held.site, heldBy: nil, to: id, site)
            stack.pointee.remember(held.id, id)
          }
          index += 1
        }
        if stack.pointee.serving != 0 { checkServed(id, site, stack, graph) }
      }
      if graph.hasCheckouts {
        let serving = stack.pointee.serving
        graph.recordFromCheckouts(
          to: id, site,
          servingFor: serving == 0 ? nil : stack.pointee[stack.pointee.innermostServing()].id)
      }
    }

    /// Reports `id` taken inside a served write while this thread holds it from before
    /// it began serving (below the innermost serving marker).
    private static func checkServed(
      _ id: UInt, _ site: LockSite, _ stack: UnsafeMutablePointer<LockStack>, _ graph: LockGraph
    ) {
      let marker = stack.pointee.innermostServing()
      var index = 0
      while index < marker {
        let held = stack.pointee[index]
        if held.id == id {
          graph.servedWriteTakes(
            id, heldAt: held.site, heldBy: nil, at: site, serving: stack.pointee[marker].id)
          return
        }
        index += 1
      }
    }
  }
#endif

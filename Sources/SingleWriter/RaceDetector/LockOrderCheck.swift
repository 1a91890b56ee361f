// Lock-order checking (lockdep) for the package's own locks, in debug builds: each thread
// keeps the locks it holds, innermost last, and every lock taken by a call that can wait
// records an edge from each of them to it. The edges live in `LockGraph`.
import SingleWriterAtomics

#if DEBUG
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

  let lockOrderWords = LockOrderWords()

  /// The hooks that the package's locks call, each from inside `#if DEBUG`, with the
  /// lock's identity and the public call's site.
  ///
  /// What creates an edge, from every lock the thread (or its task) holds to the one
  /// taken: a call that can block its thread for the lock (`willTake`, `willWait`):
  /// `withWriter`, a `ReentrantMutex`'s outermost `with`, a `BarrierStore` write, a
  /// bounded `writeNext`. A call that suspends instead (`willSuspend`: `await write`,
  /// `checkout()`, `drained()`) is ordered after the checkouts its task holds only: the
  /// locks its thread holds are held by the synchronous code beneath it (a `Task.immediate`
  /// started inside a `with { }`), which goes on, and lets them go, while the task waits.
  /// A call that never waits (`took`: `tryWrite`, `writeNext` run in place, `writer`)
  /// creates none to its lock, but holds it, so what is taken inside does get an edge from
  /// it. A reentrant `with` is no new order.
  ///
  /// `package`, with the hooks the companions call, because ReentrantMutex and BarrierStore
  /// live in SingleWriterCompanions; `@usableFromInline` because their inlinable hot paths
  /// call them.
  @usableFromInline package enum LockOrderCheck {
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
    @usableFromInline package static func willTake(
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

    /// This task is about to suspend until it gets `lock` (or its turn in `lock`'s queue):
    /// ordered after the checkouts it holds across the wait, which may be all that keeps
    /// the queue from moving; not after the locks its thread holds (see above).
    @usableFromInline
    static func willSuspend(
      for lock: ObjectIdentifier, _ file: StaticString, _ function: StaticString, _ line: UInt
    ) {
      guard lockOrderWords.isOn, lockOrderWords.hasCheckouts else { return }
      LockGraph.shared.recordFromCheckouts(
        to: UInt(bitPattern: lock), LockSite(file: file, function: function, line: line),
        servingFor: nil)
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
    @usableFromInline package static func released(_ lock: ObjectIdentifier) {
      guard let raw = sw_lock_order_stack() else { return }
      raw.assumingMemoryBound(to: LockStack.self).pointee.pop(UInt(bitPattern: lock))
    }

    /// A `ReentrantMutex` this thread holds is taken again: no new order, unless a write
    /// this thread serves for others takes it.
    @usableFromInline package static func reentered(
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
    /// `holder` is the identity the container recorded for it (`WriterLock.recordHolder`).
    @usableFromInline
    static func checkedOut(
      _ container: ObjectIdentifier, holder: UInt, _ file: StaticString,
      _ function: StaticString, _ line: UInt
    ) {
      guard lockOrderWords.isOn else { return }
      LockGraph.shared.checkedOut(
        UInt(bitPattern: container), holder: holder,
        LockSite(file: file, function: function, line: line))
    }

    /// The caller's own `writeNext` body, run in place (`took`), kept its proxy: the
    /// checkout is held through it by `holder`, as one from `writer` is, from the site of
    /// that `writeNext`, until `checkoutEnded`.
    @usableFromInline
    static func keptInPlace(_ container: ObjectIdentifier, holder: UInt) {
      guard lockOrderWords.isOn, let raw = sw_lock_order_stack() else { return }
      let stack = raw.assumingMemoryBound(to: LockStack.self)
      let id = UInt(bitPattern: container)
      var index = stack.pointee.count - 1
      while index >= 0 {
        let held = stack.pointee[index]
        if held.id == id, !held.isServing {
          LockGraph.shared.checkedOut(id, holder: holder, held.site)
          return
        }
        index -= 1
      }
    }

    /// The proxy that owned `container`'s checkout was released, on any thread.
    @usableFromInline
    static func checkoutEnded(_ container: ObjectIdentifier) {
      guard lockOrderWords.hasCheckouts else { return }
      LockGraph.shared.checkoutEnded(UInt(bitPattern: container))
    }

    /// `lock` is being freed: its edges go, so that a lock made later at its address
    /// starts with none.
    @usableFromInline package static func forget(_ lock: ObjectIdentifier) {
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

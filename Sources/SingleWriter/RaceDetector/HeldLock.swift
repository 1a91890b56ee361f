import SingleWriterAtomics

#if DEBUG
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
#endif

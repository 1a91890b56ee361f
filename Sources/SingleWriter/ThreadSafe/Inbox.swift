import SingleWriterAtomics

/// Where writes that find the checkout busy are published (flat combining): enqueuers
/// append under a lock held for one append, and the checkout holder takes everything at
/// once, by swapping buffers, then runs the batch with no lock while its cache is hot.
/// The holder takes the lock once per batch, never per write, and in steady state
/// nothing is allocated: the two buffers trade places and keep their capacity.
@usableFromInline
struct Inbox<Element> {
  /// 1 while `entries` is not empty, so the holder checks without the lock.
  @usableFromInline let flag: UnsafeMutablePointer<sw_atomic_uptr>
  @usableFromInline let lock: UnsafeMutablePointer<sw_mutex>
  /// Touched only under `lock`.
  @usableFromInline let entries: UnsafeMutablePointer<FIFO<Element>>

  @inlinable init(flag: UnsafeMutablePointer<sw_atomic_uptr>, lock: UnsafeMutablePointer<sw_mutex>)
  {
    self.flag = flag
    self.lock = lock
    entries = .allocateOnOwnCacheLines(FIFO())
  }

  /// Frees the buffer and what is still in it; only when no thread can push any more.
  @inlinable func deallocate() {
    entries.deinitialize(count: 1)
    entries.deallocate()
  }

  /// Spins briefly before sleeping: the lock is held for an append or a swap.
  @inlinable func acquire() {
    if sw_mutex_trylock(lock) { return }
    for round in 0..<6 {
      for _ in 0..<(1 << round) { sw_yield_cpu() }
      if sw_mutex_trylock(lock) { return }
    }
    sw_mutex_lock(lock)
  }

  /// Publishes `element`; whoever takes the batch sees it whole. Returns `first`, `true`
  /// if the inbox was empty: only then must the caller make sure someone will take it (an
  /// entry pushed behind others is taken with them, by whoever takes them); and how many
  /// entries wait now.
  @inlinable func push(_ element: Element) -> (first: Bool, waiting: Int) {
    acquire()
    entries.pointee.append(element)
    let waiting = entries.pointee.count
    let first = sw_uptr_load(flag) == 0
    if first { sw_uptr_store(flag, 1) }
    sw_mutex_unlock(lock)
    return (first, waiting)
  }

  /// A hint, without the lock: an entry pushed just now may not be seen yet.
  @inlinable var isEmpty: Bool { sw_uptr_load_acquire(flag) == 0 }

  /// Exact, under the lock, and ordered with every push by it: if a push came first this
  /// sees it, and if not, that push's caller sees everything this thread did before.
  @inlinable var isEmptyLocked: Bool {
    acquire()
    defer { sw_mutex_unlock(lock) }
    return sw_uptr_load(flag) == 0
  }

  /// Moves every entry to the back of `queue`, in the order they were pushed.
  @inlinable func takeAll(into queue: inout FIFO<Element>) {
    guard !isEmpty else { return }
    acquire()
    if queue.isEmpty {
      swap(&queue, &entries.pointee)
    } else {
      while let entry = entries.pointee.popFirst() { queue.append(entry) }
    }
    sw_uptr_store(flag, 0)
    sw_mutex_unlock(lock)
  }

  /// Calls `body` on each entry under the lock; for counting in tests.
  @inlinable func forEach(_ body: (Element) -> Void) {
    acquire()
    defer { sw_mutex_unlock(lock) }
    entries.pointee.forEach(body)
  }
}

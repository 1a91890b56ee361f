import SingleWriterAtomics

/// A mutex at a stable address, for the detector's own bookkeeping.
struct RaceMutex: @unchecked Sendable {
  // Sendable: the pointee is a C11 atomic word, made to be shared between threads.
  let word: UnsafeMutablePointer<sw_mutex>

  init() {
    word = .allocate(capacity: 1)
    word.initialize(to: sw_mutex())
  }

  func lock() { sw_mutex_lock(word) }
  func unlock() { sw_mutex_unlock(word) }

  /// Frees the word; only for an owner that is itself being freed.
  func destroy() {
    word.deinitialize(count: 1)
    word.deallocate()
  }
}

/// How a ``BarrierStore`` keeps readers and writers apart.
///
/// Both backings give the same results: any number of reads at once, each write alone,
/// and operations from one thread taking effect in the order they were called. They
/// differ in cost and in where the work runs.
///
/// ```swift
/// let cache = BarrierStore<String, Int>()                          // .readWriteLock
/// let queued = BarrierStore<String, Int>(backing: .barrierQueue)   // the article's design
/// ```
public enum BarrierStoreBacking: Sendable, Hashable {
  /// A concurrent `DispatchQueue`: reads are ordinary blocks, so they run side by side,
  /// and writes are `.barrier` blocks, which wait for earlier blocks and hold back later
  /// ones.
  ///
  /// Every operation is a trip through the queue. The callback and `async` forms
  /// return or suspend at once and do their work on the queue.
  case barrierQueue

  /// A reader-writer lock (`pthread_rwlock_t`, or an `SRWLOCK` on Windows): reads take
  /// it shared, writes exclusive.
  ///
  /// Operations run on the calling thread, in every form; the callback forms only defer
  /// the completion, and the `async` forms complete without suspending. Much cheaper than
  /// a queue, so it is the default.
  case readWriteLock
}

// The containers the transactions case compares. Each one runs a transaction of `writes`
// increments with `work` between them, during which no other writer can get in, and
// reads `x` for the readers.

import BenchmarkSupport
import Foundation
import SingleWriter
import Synchronization

/// The shared value: `x` is what the transactions increment and the readers read.
struct State: Sendable {
  var x = 0
  var y = 0
}

enum Variant: String, CaseIterable, Sendable {
  case mutex = "Mutex"
  case nslock = "NSLock"
  case rwlock = "pthread_rwlock"
  case actor = "actor"
  case article = "article's algorithm"
  case twoLocks = "two locks"
  case singleWriter = "ThreadSafeSingleWriter"
  case snapshot = "snapshot by hand"
  case transaction = "transaction"

  var label: String {
    switch self {
    case .mutex: "`Mutex` (held for the transaction)"
    case .nslock: "`NSLock` (held for the transaction)"
    case .rwlock: "`pthread_rwlock` (write-locked for the transaction)"
    case .actor: "actor (one method per transaction)"
    case .article: "article's algorithm (held proxy, `NSLock` per access)"
    case .twoLocks:
      "two locks (writers' `Mutex` held for the transaction, the state's `Mutex` per write)"
    case .singleWriter: "`ThreadSafeSingleWriter` (held proxy)"
    case .snapshot:
      "snapshot by hand (writers' `Mutex` held, a copy swapped into the state's `Mutex` at the end)"
    case .transaction: "`ThreadSafeSingleWriter.transaction`"
    }
  }

  /// What readers see while a transaction runs: each write, or the value before or after.
  var readersSeeEachWrite: Bool {
    switch self {
    case .article, .twoLocks, .singleWriter: true
    case .mutex, .nslock, .rwlock, .actor, .snapshot, .transaction: false
    }
  }
}

/// A container shared by one writer thread and the reader threads.
protocol Shared: AnyObject, Sendable {
  init()
  /// One transaction; returns `x` at its start and at its end, read by the writer while it
  /// still has exclusive access, so `end - start == writes` proves nobody else wrote.
  func transaction(writes: Int, work: Work, sequence: TransactionSequence) -> (Int, Int)
  func read() -> Int
}

final class MutexShared: Shared {
  let mutex = Mutex(State())

  func transaction(writes: Int, work: Work, sequence: TransactionSequence) -> (Int, Int) {
    mutex.withLock { state in
      sequence.open()
      defer { sequence.close() }
      let start = state.x
      for _ in 0..<writes {
        state.x += 1
        work.run()
      }
      return (start, state.x)
    }
  }

  func read() -> Int { mutex.withLock { $0.x } }
}

final class NSLockShared: Shared, @unchecked Sendable {
  // Unchecked: `box` is touched only while `lock` is held.
  let lock = NSLock()
  let box = Box()

  final class Box { var state = State() }

  func transaction(writes: Int, work: Work, sequence: TransactionSequence) -> (Int, Int) {
    lock.lock()
    defer { lock.unlock() }
    sequence.open()
    defer { sequence.close() }
    let start = box.state.x
    for _ in 0..<writes {
      box.state.x += 1
      work.run()
    }
    return (start, box.state.x)
  }

  func read() -> Int {
    lock.lock()
    defer { lock.unlock() }
    return box.state.x
  }
}

final class RWLockShared: Shared, @unchecked Sendable {
  // Unchecked: `box` is written only under the write lock and read under a read lock.
  let lock: UnsafeMutablePointer<pthread_rwlock_t>
  let box = NSLockShared.Box()

  init() {
    lock = .allocate(capacity: 1)
    lock.initialize(to: pthread_rwlock_t())
    pthread_rwlock_init(lock, nil)
  }

  deinit {
    pthread_rwlock_destroy(lock)
    lock.deallocate()
  }

  func transaction(writes: Int, work: Work, sequence: TransactionSequence) -> (Int, Int) {
    pthread_rwlock_wrlock(lock)
    defer { pthread_rwlock_unlock(lock) }
    sequence.open()
    defer { sequence.close() }
    let start = box.state.x
    for _ in 0..<writes {
      box.state.x += 1
      work.run()
    }
    return (start, box.state.x)
  }

  func read() -> Int {
    pthread_rwlock_rdlock(lock)
    defer { pthread_rwlock_unlock(lock) }
    return box.state.x
  }
}

/// The article's container is single-threaded; the least it needs to be shared between
/// threads is a lock around each access. The proxy, and so the right to write, is held
/// for the whole transaction, as the article intends.
final class ArticleShared: Shared, @unchecked Sendable {
  // Unchecked: `container` and its proxies are touched only while `lock` is held.
  let lock = NSLock()
  let container = ArticleSingleWriter(value: State())

  func transaction(writes: Int, work: Work, sequence: TransactionSequence) -> (Int, Int) {
    lock.lock()
    var proxy = container.writer
    lock.unlock()
    guard let writer = proxy else { fatalError("a second writer in the article's container") }
    sequence.open()
    lock.lock()
    let start = writer.write.x
    lock.unlock()
    for _ in 0..<writes {
      lock.lock()
      writer.write.x += 1
      lock.unlock()
      work.run()
    }
    lock.lock()
    let end = writer.write.x
    lock.unlock()
    sequence.close()
    // Released under the lock: its deinit runs the article's queue and touches the
    // container.
    lock.lock()
    withExtendedLifetime(writer) { proxy = nil }
    lock.unlock()
    return (start, end)
  }

  func read() -> Int {
    lock.lock()
    defer { lock.unlock() }
    return container.read.x
  }
}

final class SingleWriterShared: Shared {
  let container = ThreadSafeSingleWriter(value: State())

  func transaction(writes: Int, work: Work, sequence: TransactionSequence) -> (Int, Int) {
    guard let writer = container.writer else { fatalError("the writer is out") }
    return withExtendedLifetime(writer) {
      sequence.open()
      defer { sequence.close() }
      let start = writer.write.x
      for _ in 0..<writes {
        writer.write.x += 1
        work.run()
      }
      return (start, writer.write.x)
    }
  }

  func read() -> Int { container.read.x }
}

/// The ten-line pattern with a held proxy's semantics: a writers' lock held for the
/// transaction keeps other writers out; the state's own lock, taken per write and per read,
/// lets readers in between writes, so they see each write.
final class TwoLocksShared: Shared {
  let writers = Mutex(())
  let state = Mutex(State())

  func transaction(writes: Int, work: Work, sequence: TransactionSequence) -> (Int, Int) {
    writers.withLock { _ in
      sequence.open()
      defer { sequence.close() }
      let start = state.withLock { $0.x }
      for _ in 0..<writes {
        state.withLock { $0.x += 1 }
        work.run()
      }
      return (start, state.withLock { $0.x })
    }
  }

  func read() -> Int { state.withLock { $0.x } }
}

/// The ten-line pattern with `transaction`'s semantics: the writers' lock held for the
/// transaction, the state built on a copy and swapped into its own lock at the end, so
/// readers see the value from before or after, and never wait for the transaction.
final class SnapshotShared: Shared {
  let writers = Mutex(())
  let state = Mutex(State())

  func transaction(writes: Int, work: Work, sequence: TransactionSequence) -> (Int, Int) {
    writers.withLock { _ in
      sequence.open()
      defer { sequence.close() }
      var draft = state.withLock { $0 }
      let start = draft.x
      for _ in 0..<writes {
        draft.x += 1
        work.run()
      }
      let end = draft.x
      state.withLock { swap(&$0, &draft) }
      return (start, end)
    }
  }

  func read() -> Int { state.withLock { $0.x } }
}

final class TransactionShared: Shared {
  let container = ThreadSafeSingleWriter(value: State())

  func transaction(writes: Int, work: Work, sequence: TransactionSequence) -> (Int, Int) {
    container.transaction { state in
      sequence.open()
      defer { sequence.close() }
      let start = state.x
      for _ in 0..<writes {
        state.x += 1
        work.run()
      }
      return (start, state.x)
    }
  }

  func read() -> Int { container.read.x }
}

/// Each transaction is one actor method with no `await` inside, so it runs whole; each
/// read is one hop onto the actor.
actor ActorShared {
  var state = State()

  func transaction(writes: Int, work: Work, sequence: TransactionSequence) -> (Int, Int) {
    sequence.open()
    defer { sequence.close() }
    let start = state.x
    for _ in 0..<writes {
      state.x += 1
      work.run()
    }
    return (start, state.x)
  }

  func read() -> Int { state.x }
}

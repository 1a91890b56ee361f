// The ways of incrementing one shared counter that the tool compares.

import BenchmarkSupport
import Foundation
import SingleWriter
import Synchronization

/// A way to make one increment of a shared `Counter`.
enum Kind: String, CaseIterable {
  case mutex = "Mutex.withLock"
  case nslock = "NSLock"
  case withWriter = "withWriter"
  case tryWrite = "tryWrite + retry"
  case writeNext = "writeNext"
  case serialQueue = "serial DispatchQueue.async"

  /// The rows measured in the request-handler shape too: the queued writes and what a user
  /// would write instead with the same semantics (never lost, in order, not waiting).
  static let plainKinds: [Kind] = [.writeNext, .nslock, .mutex, .serialQueue]
}

/// One sample's shared state, seen through closures.
struct Trial: Sendable {
  /// Increments until `stop` is set and returns how many it made; with `waits`, records
  /// for each call the ns from the call to entering the critical section.
  let body: @Sendable (_ stop: StopFlag, _ waits: LatencyHistogram?) -> Int
  /// The increments completed so far, read while the threads run (not waiting for queued
  /// writes).
  let count: @Sendable () -> Int
  /// The counter once every thread has returned (and every queued write has run).
  let total: @Sendable () -> Int
  /// The request-handler shape: `calls` increments in a plain loop, nothing else.
  let plain: @Sendable (_ calls: Int) -> Void
}

/// A `Mutex` that threads can share.
final class SharedMutex: Sendable {
  let mutex = Mutex(Counter())
}

/// An `NSLock` and the counter it guards.
final class LockedCounter: @unchecked Sendable {
  // Unchecked: `box` is touched only between `lock.lock()` and `lock.unlock()`.
  let lock = NSLock()
  let box = CounterBox()

  /// The count, under the lock.
  func read() -> Int {
    lock.lock()
    defer { lock.unlock() }
    return box.value.a
  }
}

/// A counter that only blocks on a serial queue touch: the pattern a user writes for queued,
/// ordered writes without this package.
final class QueuedCounter: @unchecked Sendable {
  // Unchecked: `box` is touched only by blocks on `queue`, which is serial; `done` is atomic.
  let queue = DispatchQueue(label: "counter")
  let box = CounterBox()
  /// The count so far, for the window shape's reads while threads queue (`queue.sync` would
  /// wait behind the backlog); the plain shape does not store it.
  let done = Atomic(0)

  /// The count once every block queued so far has run.
  func total() -> Int { queue.sync { box.value.a } }
}

/// Counts the calls of `body` until `stop` is set.
@inline(__always)
func loop(_ stop: StopFlag, _ body: () -> Void) -> Int {
  var ops = 0
  while !stop.isSet {
    body()
    ops += 1
  }
  return ops
}

// Each body keeps its untimed loop free of clock reads; the timed loop reads the clock
// before the call and first thing inside the critical section.
func makeTrial(_ kind: Kind) -> Trial {
  switch kind {
  case .mutex:
    let shared = SharedMutex()
    return Trial(
      body: { stop, waits in
        guard let waits else { return loop(stop) { shared.mutex.withLock { $0.a += 1 } } }
        return loop(stop) {
          let called = now()
          let entered = shared.mutex.withLock { value in
            let entered = now()
            value.a += 1
            return entered
          }
          waits.record(entered &- called)
        }
      },
      count: { shared.mutex.withLock { $0.a } },
      total: { shared.mutex.withLock { $0.a } },
      plain: { calls in for _ in 0..<calls { shared.mutex.withLock { $0.a += 1 } } })
  case .nslock:
    let shared = LockedCounter()
    return Trial(
      body: { stop, waits in
        guard let waits else {
          return loop(stop) {
            shared.lock.lock()
            shared.box.value.a += 1
            shared.lock.unlock()
          }
        }
        return loop(stop) {
          let called = now()
          shared.lock.lock()
          let entered = now()
          shared.box.value.a += 1
          shared.lock.unlock()
          waits.record(entered &- called)
        }
      },
      count: { shared.read() },
      total: { shared.read() },
      plain: { calls in
        for _ in 0..<calls {
          shared.lock.lock()
          shared.box.value.a += 1
          shared.lock.unlock()
        }
      })
  case .withWriter:
    let box = ThreadSafeSingleWriter(value: Counter())
    return Trial(
      body: { stop, waits in
        guard let waits else { return loop(stop) { box.withWriter { $0.a += 1 } } }
        return loop(stop) {
          let called = now()
          let entered = box.withWriter { value in
            let entered = now()
            value.a += 1
            return entered
          }
          waits.record(entered &- called)
        }
      },
      count: { box.read.a },
      total: { box.read.a },
      plain: { calls in for _ in 0..<calls { box.withWriter { $0.a += 1 } } })
  case .tryWrite:
    let box = ThreadSafeSingleWriter(value: Counter())
    return Trial(
      body: { stop, waits in
        guard let waits else {
          return loop(stop) { while !box.tryWrite({ $0.a += 1 }) {} }
        }
        return loop(stop) {
          let called = now()
          var entered: UInt64?
          while entered == nil {
            entered = box.tryWrite { value in
              let entered = now()
              value.a += 1
              return entered
            }
          }
          waits.record(entered! &- called)
        }
      },
      count: { box.read.a },
      total: { box.read.a },
      plain: { calls in for _ in 0..<calls { while !box.tryWrite({ $0.a += 1 }) {} } })
  case .writeNext:
    let box = ThreadSafeSingleWriter(value: Counter())
    return Trial(
      body: { stop, _ in
        // Not timed: a queued closure runs later, on whichever thread drains the queue.
        loop(stop) { box.writeNext { $0.write.a += 1 } }
      },
      count: { box.read.a },  // what the queued writes have done so far
      // withWriter waits its turn behind every write queued before it.
      total: { box.withWriter { $0.a } },
      plain: { calls in for _ in 0..<calls { box.writeNext { $0.write.a += 1 } } })
  case .serialQueue:
    let shared = QueuedCounter()
    return Trial(
      body: { stop, _ in
        // Not timed, as writeNext: the block runs later, on the queue's thread.
        loop(stop) {
          shared.queue.async {
            shared.box.value.a += 1
            shared.done.store(shared.box.value.a, ordering: .relaxed)
          }
        }
      },
      count: { shared.done.load(ordering: .relaxed) },
      total: { shared.total() },
      plain: { calls in for _ in 0..<calls { shared.queue.async { shared.box.value.a += 1 } } })
  }
}

import BenchmarkSupport
import Foundation
import SingleWriter
import Synchronization

/// Set only by hand; the optimizer cannot know it is false, so sunk values stay.
let printSunk = getenv("PROFILE_PRINT_SUNK") != nil

/// Keeps `value` alive and observable, so the loop that made it stays.
@inline(never)
func sink<T>(_ value: T) {
  if printSunk { print(value) }
}

@inline(never)
func opaque<T>(_ value: T) -> T { value }

// One call each, not inlined into the loop, as a user's function calls it: the optimizer
// can hoist nothing out of a loop it cannot see (issue 30 asked for figures "inside a
// function").
@inline(never)
func bumpWriteNext(_ box: SingleWriter<Counter>) { box.writeNext { $0.write.a += 1 } }
@inline(never)
func bumpMutex(_ mutex: borrowing Mutex<Counter>) { mutex.withLock { $0.a += 1 } }
@inline(never)
func bumpWithWriter(_ box: ThreadSafeSingleWriter<Counter>) { box.withWriter { $0.a += 1 } }

let cases: [String: @Sendable (Int) -> Void] = [
  "none": { _ in },
  "checkout": { n in
    let box = opaque(SingleWriter(value: Counter()))
    for _ in 0..<n { box.writer!.write.a += 1 }
    sink(box.read)
  },
  "writeNext": { n in
    let box = opaque(SingleWriter(value: Counter()))
    for _ in 0..<n { box.writeNext { $0.write.a += 1 } }
    sink(box.read)
  },
  "tryWrite": { n in
    let box = opaque(SingleWriter(value: Counter()))
    for _ in 0..<n { _ = box.tryWrite { $0.a += 1 } }
    sink(box.read)
  },
  "read": { n in
    let box = opaque(SingleWriter(value: Counter()))
    for _ in 0..<n { sink(box.read) }
  },
  "writeNextInFunction": { n in
    let box = opaque(SingleWriter(value: Counter()))
    for _ in 0..<n { bumpWriteNext(box) }
    sink(box.read)
  },
  "mutexInFunction": { n in
    let mutex = Mutex(Counter())
    for _ in 0..<n { bumpMutex(mutex) }
    sink(mutex.withLock { $0 })
  },
  "tsWithWriterInFunction": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    for _ in 0..<n { bumpWithWriter(box) }
    sink(box.read)
  },
  "mutex": { n in
    let mutex = Mutex(Counter())
    for _ in 0..<n { mutex.withLock { $0.a += 1 } }
    sink(mutex.withLock { $0 })
  },
  "mutexRead": { n in
    let mutex = Mutex(Counter())
    for _ in 0..<n { sink(mutex.withLock { $0 }) }
  },
  "alloc": { n in
    for _ in 0..<n { sink(makeSmall()) }
  },
  "append": { n in
    let box = opaque(SingleWriter(value: [Int]()))
    let proxy = box.writer!
    for i in 0..<n { proxy.write.append(i) }
    sink(box.read.count)
  },
  "tsAppend": { n in
    let box = opaque(ThreadSafeSingleWriter(value: [Int]()))
    let proxy = box.writer!
    for i in 0..<n { proxy.write.append(i) }
    sink(box.read.count)
  },
  // The held proxy's smallest write: what the access itself costs.
  "tsHeldWrite": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    let proxy = box.writer!
    for _ in 0..<n { proxy.write.a += 1 }
    sink(box.read)
  },
  // The same inside a task, as package-benchmark runs its suites (in its async main): the
  // access records the task that makes it.
  "tsHeldWriteInTask": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    let done = DispatchSemaphore(value: 0)
    Task {
      let proxy = box.writer!
      for _ in 0..<n { proxy.write.a += 1 }
      done.signal()
    }
    done.wait()
    sink(box.read)
  },
  // `await write` from one task, free each time.
  "tsAwaitWrite": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    let done = DispatchSemaphore(value: 0)
    Task {
      for _ in 0..<n { await box.write { $0.a += 1 } }
      done.signal()
    }
    done.wait()
    sink(box.read)
  },
  "mutexAppend": { n in
    let mutex = Mutex([Int]())
    for i in 0..<n { mutex.withLock { $0.append(i) } }
    sink(mutex.withLock { $0.count })
  },
  "queue": { n in
    let box = opaque(SingleWriter(value: Counter()))
    withExtendedLifetime(box.writer) {
      for _ in 0..<n { box.writeNext { $0.write.a += 1 } }
    }
    sink(box.read)
  },
  "tsCheckout": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    for _ in 0..<n { box.writer!.write.a += 1 }
    sink(box.read)
  },
  "tsWriteNext": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    for _ in 0..<n { box.writeNext { $0.write.a += 1 } }
    sink(box.read)
  },
  "tsTryWrite": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    for _ in 0..<n { _ = box.tryWrite { $0.a += 1 } }
    sink(box.read)
  },
  "tsWithWriter": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    for _ in 0..<n { box.withWriter { $0.a += 1 } }
    sink(box.read)
  },
  "tsWithWriterObserved": { n in
    // One idle `changes()` stream: made, never iterated, as the Observed suite has it.
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    let stream = box.changes()
    for _ in 0..<n { box.withWriter { $0.a += 1 } }
    sink(box.read)
    withExtendedLifetime(stream) {}
  },
  "transaction": { n in
    let box = opaque(SingleWriter(value: Counter()))
    for _ in 0..<n { _ = box.transaction { $0.a += 1 } }
    sink(box.read)
  },
  "tsTransaction": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    for _ in 0..<n { box.transaction { $0.a += 1 } }
    sink(box.read)
  },
  // writeNext and a proxy's checkout on an observed container: their ends, like the
  // closure write's above, publish to one idle stream.
  "tsWriteNextObserved": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    let stream = box.changes()
    for _ in 0..<n { box.writeNext { $0.write.a += 1 } }
    sink(box.read)
    withExtendedLifetime(stream) {}
  },
  "tsCheckoutObserved": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    let stream = box.changes()
    for _ in 0..<n { box.writer!.write.a += 1 }
    sink(box.read)
    withExtendedLifetime(stream) {}
  },
  "tsRead": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    for _ in 0..<n { sink(box.read) }
  },
  "tsReadArray": { n in
    // A value with references: a reader slot, not the optimistic copy.
    let box = opaque(ThreadSafeSingleWriter(value: [1, 2, 3]))
    for _ in 0..<n { sink(box.read.count) }
  },
  "tsQueue": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    withExtendedLifetime(box.writer) {
      for _ in 0..<n { box.writeNext { $0.write.a += 1 } }
    }
    sink(box.read)
  },
  // Two threads queueing at once, for `perf record`: n writes each; ns/op is per write.
  "tsWriteNextContended": { n in
    let box = opaque(ThreadSafeSingleWriter(value: Counter()))
    let threads = (0..<2).map { _ in
      Thread { for _ in 0..<n / 2 { box.writeNext { $0.write.a += 1 } } }
    }
    threads.forEach { $0.start() }
    while !threads.allSatisfy(\.isFinished) { usleep(100) }
    sink(box.withWriter { $0.a })
  },
  "nslockContended": { n in
    let lock = NSLock()
    nonisolated(unsafe) var count = 0
    let threads = (0..<2).map { _ in
      Thread { for _ in 0..<n / 2 { lock.withLock { count += 1 } } }
    }
    threads.forEach { $0.start() }
    while !threads.allSatisfy(\.isFinished) { usleep(100) }
    sink(lock.withLock { count })
  },
  "articleCheckout": { n in
    let box = opaque(ArticleSingleWriter(value: Counter()))
    for _ in 0..<n { box.writer!.write.a += 1 }
    sink(box.read)
  },
]

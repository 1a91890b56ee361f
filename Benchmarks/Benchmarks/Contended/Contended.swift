// Two threads each make 1M increments of the same counter at once, through
// ThreadSafeSingleWriter and through the locks it is compared with. One sample is
// both threads' work, 2M increments; compare.py reports ns per increment and
// throughput (increments per second, both threads together).

import Benchmark
import BenchmarkSuite
import BenchmarkSupport
import Foundation
import SingleWriter
import Synchronization

/// A `Mutex` that two threads can share.
final class SharedMutex: Sendable {
  let mutex = Mutex(Counter())
}

let benchmarks: @Sendable () -> Void = {
  configureSuite(metrics: [.wallClock], maxDuration: .seconds(2))
  registerMutexReference(suite: "Contended")

  Benchmark("Contended: Mutex.withLock, 2 threads (2000000 ops/sample)") { benchmark in
    let shared = SharedMutex()
    let count = benchmark.scaledIterations.count
    runConcurrently(threads: 2) { _ in
      for _ in 0..<count {
        shared.mutex.withLock { $0.a += 1 }
      }
    }
    precondition(shared.mutex.withLock { $0.a } == 2 * count, "lost an increment")
  }

  Benchmark("Contended: NSLock, 2 threads (2000000 ops/sample)") { benchmark in
    let lock = NSLock()
    let box = CounterBox()
    let count = benchmark.scaledIterations.count
    runConcurrently(threads: 2) { _ in
      for _ in 0..<count {
        lock.lock()
        box.value.a += 1
        lock.unlock()
      }
    }
    precondition(box.value.a == 2 * count, "lost an increment")
  }

  Benchmark(
    "Contended: ThreadSafeSingleWriter withWriter, 2 threads (2000000 ops/sample)"
  ) { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    let count = benchmark.scaledIterations.count
    runConcurrently(threads: 2) { _ in
      for _ in 0..<count {
        box.withWriter { $0.a += 1 }
      }
    }
    precondition(box.read.a == 2 * count, "lost an increment")
  }

  Benchmark(
    "Contended: ThreadSafeSingleWriter tryWrite+retry, 2 threads (2000000 ops/sample)"
  ) { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    let count = benchmark.scaledIterations.count
    runConcurrently(threads: 2) { _ in
      for _ in 0..<count {
        while box.tryWrite({ $0.a += 1 }) == nil {}
      }
    }
    precondition(box.read.a == 2 * count, "lost an increment")
  }
}

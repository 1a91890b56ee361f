// Two threads each make 1M increments of the same counter at once, through
// ThreadSafeSingleWriter and through the locks it is compared with. One sample is
// both threads' work, 2M increments; compare.py reports ns per increment and
// throughput (increments per second, both threads together).

import Benchmark
import BenchmarkSupport
import Foundation
import SingleWriter
import Synchronization

/// A `Mutex` that two threads can share.
final class SharedMutex: Sendable {
  let mutex = Mutex(Counter())
}

let benchmarks: @Sendable () -> Void = {
  Benchmark.defaultConfiguration = .init(
    metrics: [.wallClock],
    timeUnits: .nanoseconds,
    warmupIterations: 1,
    scalingFactor: .mega,
    maxDuration: .seconds(2),
    maxIterations: 7
  )

  // This suite's own Mutex increment: compare.py divides by it, so that rows are
  // compared with a reference measured in the same process, moments apart.
  Benchmark("Ref: Mutex.withLock (Contended suite)") { benchmark in
    let mutex = Mutex(Counter())
    for _ in benchmark.scaledIterations {
      mutex.withLock { $0.a += 1 }
    }
    blackHole(mutex.withLock { $0 })
  }

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

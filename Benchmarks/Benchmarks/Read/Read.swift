// Reading the whole small struct: a plain load for SingleWriter, a short reader
// lock for ThreadSafeSingleWriter, a lock round trip for Mutex. 1M reads per sample.

import Benchmark
import BenchmarkSupport
import SingleWriter
import Synchronization

let benchmarks: @Sendable () -> Void = {
  Benchmark.defaultConfiguration = .init(
    metrics: [.wallClock, .mallocCountTotal],
    timeUnits: .nanoseconds,
    warmupIterations: 1,
    scalingFactor: .mega,
    maxDuration: .seconds(1),
    maxIterations: 7
  )

  // This suite's own Mutex increment: compare.py divides by it, so that rows are
  // compared with a reference measured in the same process, moments apart.
  Benchmark("Ref: Mutex.withLock (Read suite)") { benchmark in
    let mutex = Mutex(Counter())
    for _ in benchmark.scaledIterations {
      mutex.withLock { $0.a += 1 }
    }
    blackHole(mutex.withLock { $0 })
  }

  Benchmark("Read: SingleWriter.read") { benchmark in
    let box = SingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      blackHole(box.read)
    }
  }

  Benchmark("Read: Mutex.withLock { $0 }") { benchmark in
    let mutex = Mutex(Counter())
    for _ in benchmark.scaledIterations {
      blackHole(mutex.withLock { $0 })
    }
  }

  Benchmark("Read: article read") { benchmark in
    let box = ArticleSingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      blackHole(box.read)
    }
  }

  Benchmark("Read: ThreadSafeSingleWriter.read") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      blackHole(box.read)
    }
  }
}

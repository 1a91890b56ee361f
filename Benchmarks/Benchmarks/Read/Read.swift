// Reading the whole small struct: a plain load for SingleWriter, a short reader
// lock for ThreadSafeSingleWriter, a lock round trip for Mutex. 1M reads per sample.

import Benchmark
import BenchmarkSuite
import BenchmarkSupport
import SingleWriter
import Synchronization

let benchmarks: @Sendable () -> Void = {
  configureSuite()
  registerMutexReference(suite: "Read")

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

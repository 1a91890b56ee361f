// What every suite sets up the same way, so that the rows of different suites are
// measured alike.

import Benchmark
import BenchmarkSupport
import Synchronization

/// The shared defaults: 1M operations per sample (`.mega`), so the ~200 ns sample
/// overhead disappears, and a short run, so the whole table takes minutes.
public func configureSuite(
  metrics: [BenchmarkMetric] = [.wallClock, .mallocCountTotal],
  maxDuration: Duration = .seconds(1),
  maxIterations: Int = 7
) {
  Benchmark.defaultConfiguration = .init(
    metrics: metrics,
    timeUnits: .nanoseconds,
    warmupIterations: 1,
    scalingFactor: .mega,
    maxDuration: maxDuration,
    maxIterations: maxIterations
  )
}

/// Registers the suite's own `Mutex` increment. Tools/Report divides the suite's rows by
/// it, so each row is compared with a reference measured in the same process,
/// moments apart, rather than with one from another suite's process.
public func registerMutexReference(suite: String) {
  Benchmark("Ref: Mutex.withLock (\(suite) suite)") { benchmark in
    let mutex = Mutex(Counter())
    for _ in benchmark.scaledIterations {
      mutex.withLock { $0.a += 1 }
    }
    blackHole(mutex.withLock { $0 })
  }
}

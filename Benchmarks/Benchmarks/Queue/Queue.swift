// A deep queue: writes queued with `writeNext` while a proxy is held, all drained
// by one release. SingleWriter drains in a loop; the article's code recurses through
// `deinit`, so it runs at a depth its stack survives (see ArticleDepthProbe).

import Benchmark
import BenchmarkSuite
import BenchmarkSupport
import SingleWriter

let benchmarks: @Sendable () -> Void = {
  configureSuite(maxDuration: .seconds(2), maxIterations: 5)
  registerMutexReference(suite: "Queue")

  Benchmark("Queue: SingleWriter 1M writeNext queued, one release") { benchmark in
    let box = SingleWriter(value: Counter())
    withExtendedLifetime(box.writer) {
      for _ in benchmark.scaledIterations {
        box.writeNext { $0.write.a += 1 }
      }
    }
    precondition(box.read.a == benchmark.scaledIterations.count, "lost a queued write")
  }

  // One sample is one queue of `articleQueueSafeDepth` writes (half the depth that
  // crashes); the name carries the count so Tools/Report can divide by it.
  let depth = articleQueueSafeDepth
  Benchmark(
    "Queue: article \(depth) writeNext queued, one release (\(depth) ops/sample)",
    configuration: .init(scalingFactor: .one, maxIterations: 10)
  ) { _ in
    runOnBigStack {
      let count = runArticleQueue(depth: depth)
      precondition(count == depth, "lost a queued write")
    }
  }

  Benchmark("Queue: ThreadSafeSingleWriter 1M writeNext queued, one release") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    withExtendedLifetime(box.writer) {
      for _ in benchmark.scaledIterations {
        box.writeNext { $0.write.a += 1 }
      }
    }
    precondition(box.read.a == benchmark.scaledIterations.count, "lost a queued write")
  }
}

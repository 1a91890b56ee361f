// Growing an array through a held writer, one element per write. Each sample makes
// 1M appends: 1M/N arrays of N elements each, so the per-append cost includes the
// array's own regrowth at that size.

import Benchmark
import BenchmarkSuite
import BenchmarkSupport
import SingleWriter
import Synchronization

let benchmarks: @Sendable () -> Void = {
  configureSuite()
  registerMutexReference(suite: "Append")

  for size in [1_000, 100_000, 1_000_000] {
    Benchmark("Append: SingleWriter held writer, \(size.formatted) elements") { benchmark in
      let box = SingleWriter(value: [Int]())
      for _ in 0..<(benchmark.scaledIterations.count / size) {
        guard let proxy = box.writer else { fatalError("writer busy") }
        proxy.write = []
        for element in 0..<size {
          proxy.write.append(element)
        }
      }
      blackHole(box.read.count)
    }

    // The headline's path: each append through a held thread-safe proxy takes and drops
    // the value lock, as every access through it does.
    Benchmark("Append: ThreadSafeSingleWriter held writer, \(size.formatted) elements") {
      benchmark in
      let box = ThreadSafeSingleWriter(value: [Int]())
      for _ in 0..<(benchmark.scaledIterations.count / size) {
        guard let proxy = box.writer else { fatalError("writer busy") }
        proxy.write = []
        for element in 0..<size {
          proxy.write.append(element)
        }
      }
      blackHole(box.read.count)
    }

    Benchmark("Append: Mutex.withLock, \(size.formatted) elements") { benchmark in
      let mutex = Mutex([Int]())
      for _ in 0..<(benchmark.scaledIterations.count / size) {
        mutex.withLock { $0 = [] }
        for element in 0..<size {
          mutex.withLock { $0.append(element) }
        }
      }
      blackHole(mutex.withLock { $0.count })
    }
  }

  // The article's proxy copies the whole array into the container after every
  // append, and the next append then copies it again (copy-on-write): O(N) per
  // append. 1k runs with the same 1M appends per sample; 10k runs one array per
  // sample (10k appends); 100k would take over 10 s per sample and is left out.
  Benchmark("Append: article held writer, 1k elements") { benchmark in
    let box = ArticleSingleWriter(value: [Int]())
    for _ in 0..<(benchmark.scaledIterations.count / 1_000) {
      guard let proxy = box.writer else { fatalError("writer busy") }
      proxy.write = []
      for element in 0..<1_000 {
        proxy.write.append(element)
      }
    }
    blackHole(box.read.count)
  }

  Benchmark(
    "Append: article held writer, 10k elements (10000 ops/sample)",
    configuration: .init(scalingFactor: .one, maxIterations: 10)
  ) { _ in
    let box = ArticleSingleWriter(value: [Int]())
    guard let proxy = box.writer else { fatalError("writer busy") }
    for element in 0..<10_000 {
      proxy.write.append(element)
    }
    blackHole(box.read.count)
  }
}

extension Int {
  /// 1k, 100k, 1M.
  fileprivate var formatted: String {
    self >= 1_000_000 ? "\(self / 1_000_000)M" : "\(self / 1_000)k"
  }
}

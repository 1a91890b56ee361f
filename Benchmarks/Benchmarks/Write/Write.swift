// One increment of a small struct through each way of writing shared state.
// Every sample runs 1M operations (`.mega`), so the ~200 ns per-sample overhead
// disappears; `compare.sh` divides by the count.

import Benchmark
import BenchmarkSuite
import BenchmarkSupport
import Dispatch
import Foundation
import SingleWriter
import Synchronization

/// A user's actor around the same counter.
actor CounterActor {
  var value = Counter()
  func increment() { value.a += 1 }
}

let benchmarks: @Sendable () -> Void = {
  configureSuite()

  // MARK: SingleWriter

  Benchmark("Write: SingleWriter checkout+write+release") { benchmark in
    let box = SingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      box.writer!.write.a += 1
    }
    blackHole(box.read)
  }

  Benchmark("Write: SingleWriter writeNext (free)") { benchmark in
    let box = SingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      box.writeNext { $0.write.a += 1 }
    }
    blackHole(box.read)
  }

  Benchmark("Write: SingleWriter tryWrite") { benchmark in
    let box = SingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      _ = box.tryWrite { $0.a += 1 }
    }
    blackHole(box.read)
  }

  // MARK: ThreadSafeSingleWriter (ThreadSafeWrite.swift)

  threadSafeWriteBenchmarks()

  // MARK: References

  Benchmark("Write: Mutex.withLock") { benchmark in
    let mutex = Mutex(Counter())
    for _ in benchmark.scaledIterations {
      mutex.withLock { $0.a += 1 }
    }
    blackHole(mutex.withLock { $0 })
  }

  Benchmark("Write: NSLock") { benchmark in
    let lock = NSLock()
    let box = CounterBox()
    blackHole(box)
    for _ in benchmark.scaledIterations {
      lock.lock()
      box.value.a += 1
      lock.unlock()
    }
    blackHole(box.value)
  }

  Benchmark("Write: NSRecursiveLock") { benchmark in
    let lock = NSRecursiveLock()
    let box = CounterBox()
    blackHole(box)
    for _ in benchmark.scaledIterations {
      lock.lock()
      box.value.a += 1
      lock.unlock()
    }
    blackHole(box.value)
  }

  Benchmark("Write: DispatchQueue.sync (serial)") { benchmark in
    let queue = DispatchQueue(label: "bench.serial")
    let box = CounterBox()
    blackHole(box)
    for _ in benchmark.scaledIterations {
      queue.sync { box.value.a += 1 }
    }
    blackHole(box.value)
  }

  Benchmark("Write: actor method, awaited from one Task") { benchmark async in
    let counter = CounterActor()
    for _ in benchmark.scaledIterations {
      await counter.increment()
    }
    blackHole(await counter.value)
  }

  Benchmark("Write: alloc+free of a small class") { benchmark in
    for _ in benchmark.scaledIterations {
      blackHole(makeSmall())
    }
  }

  Benchmark("Write: alloc+free with a weak store+load") { benchmark in
    let holder = WeakHolder()
    for _ in benchmark.scaledIterations {
      let object = makeSmall()
      holder.object = object
      blackHole(holder.object)
    }
  }

  // MARK: The article's baseline

  Benchmark("Write: article checkout+write+release") { benchmark in
    let box = ArticleSingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      box.writer!.write.a += 1
    }
    blackHole(box.read)
  }

  Benchmark("Write: article writeNext (free)") { benchmark in
    let box = ArticleSingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      box.writeNext { $0.write.a += 1 }
    }
    blackHole(box.read)
  }
}

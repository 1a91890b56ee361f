// What observing a container costs its writers: one increment through `withWriter` and
// `tryWrite` with 0, 1 and 10 idle `changes()` subscribers (streams nobody is iterating),
// with a consumer task waiting on another thread, and with Observation-module tracking;
// beside `Mutex.withLock` and an `@Observable` class's setter. 1M writes per sample.

import Benchmark
import BenchmarkSuite
import BenchmarkSupport
import Dispatch
import Observation
import SingleWriter
import Synchronization

/// The setter users compare with: an `@Observable` model's stored property.
@Observable final class ObservableCounter {
  var value = Counter()
}

/// A consumer that waits in `changes()` on another thread for as long as the row runs.
func startWaitingConsumer(_ box: ThreadSafeSingleWriter<Counter>) -> Task<Void, Never> {
  let stream = box.changes()
  return Task.detached {
    for await value in stream { blackHole(value) }
  }
}

let benchmarks: @Sendable () -> Void = {
  configureSuite()
  registerMutexReference(suite: "Observed")

  Benchmark("Observed: @Observable class setter") { benchmark in
    let model = ObservableCounter()
    for _ in benchmark.scaledIterations {
      model.value.a += 1
    }
    blackHole(model.value)
  }

  for subscribers in [0, 1, 10] {
    Benchmark("Observed: ThreadSafeSingleWriter withWriter, \(subscribers) idle subscribers") {
      benchmark in
      let box = ThreadSafeSingleWriter(value: Counter())
      let streams = (0..<subscribers).map { _ in box.changes() }
      for _ in benchmark.scaledIterations {
        box.withWriter { $0.a += 1 }
      }
      blackHole(streams)
      blackHole(box.read)
    }

    Benchmark("Observed: ThreadSafeSingleWriter tryWrite, \(subscribers) idle subscribers") {
      benchmark in
      let box = ThreadSafeSingleWriter(value: Counter())
      let streams = (0..<subscribers).map { _ in box.changes() }
      for _ in benchmark.scaledIterations {
        _ = box.tryWrite { $0.a += 1 }
      }
      blackHole(streams)
      blackHole(box.read)
    }

    Benchmark("Observed: SingleWriter tryWrite, \(subscribers) idle subscribers") { benchmark in
      let box = SingleWriter(value: Counter())
      let streams = (0..<subscribers).map { _ in box.changes() }
      for _ in benchmark.scaledIterations {
        _ = box.tryWrite { $0.a += 1 }
      }
      blackHole(streams)
      blackHole(box.read)
    }
  }

  Benchmark("Observed: ThreadSafeSingleWriter withWriter, a waiting consumer") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    let consumer = startWaitingConsumer(box)
    for _ in benchmark.scaledIterations {
      box.withWriter { $0.a += 1 }
    }
    consumer.cancel()
    blackHole(box.read)
  }

  Benchmark("Observed: ThreadSafeSingleWriter tryWrite, a waiting consumer") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    let consumer = startWaitingConsumer(box)
    for _ in benchmark.scaledIterations {
      _ = box.tryWrite { $0.a += 1 }
    }
    consumer.cancel()
    blackHole(box.read)
  }

  Benchmark("Observed: ThreadSafeSingleWriter tryWrite, tracked") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    blackHole(box.trackedRead)  // tracked for good; nobody listens now
    for _ in benchmark.scaledIterations {
      _ = box.tryWrite { $0.a += 1 }
    }
    blackHole(box.read)
  }

  Benchmark("Observed: ThreadSafeSingleWriter.read") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    blackHole(box.trackedRead)
    for _ in benchmark.scaledIterations {
      blackHole(box.read)
    }
  }

  Benchmark("Observed: ThreadSafeSingleWriter.trackedRead") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    for _ in benchmark.scaledIterations {
      blackHole(box.trackedRead)
    }
  }
}

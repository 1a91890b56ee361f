// The ThreadSafeSingleWriter write rows, registered by Write.swift in the same process
// as the Mutex and allocation rows they are compared with. A file of its own so the
// rows can be switched off together (comment out the call in Write.swift).

import Benchmark
import BenchmarkSupport
import SingleWriter

func threadSafeWriteBenchmarks() {
  Benchmark("Write: ThreadSafeSingleWriter checkout+write+release") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      box.writer!.write.a += 1
    }
    blackHole(box.read)
  }

  Benchmark("Write: ThreadSafeSingleWriter writeNext (free)") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      box.writeNext { $0.write.a += 1 }
    }
    blackHole(box.read)
  }

  Benchmark("Write: ThreadSafeSingleWriter tryWrite") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      _ = box.tryWrite { $0.a += 1 }
    }
    blackHole(box.read)
  }

  Benchmark("Write: ThreadSafeSingleWriter withWriter") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      box.withWriter { $0.a += 1 }
    }
    blackHole(box.read)
  }

  // A copy of the 16-byte value, written, and moved back in: against `withWriter` above.
  Benchmark("Write: ThreadSafeSingleWriter transaction") { benchmark in
    let box = ThreadSafeSingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      box.transaction { $0.a += 1 }
    }
    blackHole(box.read)
  }

  Benchmark("Write: ThreadSafeSingleWriter await write, one Task") { benchmark async in
    let box = ThreadSafeSingleWriter(value: Counter())
    blackHole(box)
    for _ in benchmark.scaledIterations {
      await box.write { $0.a += 1 }
    }
    blackHole(box.read)
  }
}

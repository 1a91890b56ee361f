// The companion types against what they replace: ReentrantMutex against
// NSRecursiveLock, BarrierStore against a lock-protected dictionary and the
// classic concurrent-queue-with-barrier, Confined against an actor.

import Benchmark
import BenchmarkSuite
import BenchmarkSupport
import Dispatch
import Foundation
import SingleWriter
import SingleWriterCompanions
import Synchronization

/// The object a `Confined` guards.
final class Model {
  var count = 0
}

/// The same state behind an actor.
actor ModelActor {
  var count = 0
  func increment() { count += 1 }
  func get() -> Int { count }
}

/// A dictionary behind `NSLock`, the plain alternative to BarrierStore.
final class LockedDictionary: @unchecked Sendable {
  // Unchecked: `storage` is only touched between lock() and unlock().
  let lock = NSLock()
  var storage: [Int: Int] = [:]
}

let benchmarks: @Sendable () -> Void = {
  configureSuite()
  registerMutexReference(suite: "Companions")

  // MARK: ReentrantMutex vs NSRecursiveLock, nested 1 and 3 deep

  Benchmark("Reentrant: ReentrantMutex.with, 1 deep") { benchmark in
    let lock = ReentrantMutex()
    let box = CounterBox()
    blackHole(box)
    for _ in benchmark.scaledIterations {
      lock.with { box.value.a += 1 }
    }
    blackHole(box.value)
  }

  Benchmark("Reentrant: NSRecursiveLock, 1 deep") { benchmark in
    let lock = NSRecursiveLock()
    let box = CounterBox()
    blackHole(box)
    for _ in benchmark.scaledIterations {
      lock.withLock { box.value.a += 1 }
    }
    blackHole(box.value)
  }

  Benchmark("Reentrant: ReentrantMutex.with, 3 deep") { benchmark in
    let lock = ReentrantMutex()
    let box = CounterBox()
    blackHole(box)
    for _ in benchmark.scaledIterations {
      lock.with { lock.with { lock.with { box.value.a += 1 } } }
    }
    blackHole(box.value)
  }

  Benchmark("Reentrant: NSRecursiveLock, 3 deep") { benchmark in
    let lock = NSRecursiveLock()
    let box = CounterBox()
    blackHole(box)
    for _ in benchmark.scaledIterations {
      lock.withLock { lock.withLock { lock.withLock { box.value.a += 1 } } }
    }
    blackHole(box.value)
  }

  // MARK: BarrierStore vs a lock-protected dictionary (64 keys)

  let keys = 64

  for backing in [BarrierStoreBacking.readWriteLock, .barrierQueue] {
    Benchmark("Store: BarrierStore(.\(backing)) value(forKey:)") { benchmark in
      let store = BarrierStore<Int, Int>(backing: backing)
      for key in 0..<keys { store.setValue(key, forKey: key) }
      for index in benchmark.scaledIterations {
        blackHole(store.value(forKey: index & (keys - 1)))
      }
    }

    Benchmark("Store: BarrierStore(.\(backing)) setValue(forKey:)") { benchmark in
      let store = BarrierStore<Int, Int>(backing: backing)
      for index in benchmark.scaledIterations {
        store.setValue(index, forKey: index & (keys - 1))
      }
      blackHole(store.value(forKey: 0))
    }
  }

  Benchmark("Store: NSLock + Dictionary read") { benchmark in
    let locked = LockedDictionary()
    for key in 0..<keys { locked.storage[key] = key }
    for index in benchmark.scaledIterations {
      locked.lock.lock()
      let value = locked.storage[index & (keys - 1)]
      locked.lock.unlock()
      blackHole(value)
    }
  }

  Benchmark("Store: NSLock + Dictionary write") { benchmark in
    let locked = LockedDictionary()
    for index in benchmark.scaledIterations {
      locked.lock.lock()
      locked.storage[index & (keys - 1)] = index
      locked.lock.unlock()
    }
    blackHole(locked.storage.count)
  }

  Benchmark("Store: Mutex<Dictionary> write") { benchmark in
    let mutex = Mutex([Int: Int]())
    for index in benchmark.scaledIterations {
      mutex.withLock { $0[index & (keys - 1)] = index }
    }
    blackHole(mutex.withLock { $0.count })
  }

  Benchmark("Store: concurrent DispatchQueue barrier sync write") { benchmark in
    let queue = DispatchQueue(label: "bench.concurrent", attributes: .concurrent)
    let locked = LockedDictionary()
    for index in benchmark.scaledIterations {
      queue.sync(flags: .barrier) { locked.storage[index & (keys - 1)] = index }
    }
    blackHole(locked.storage.count)
  }

  // MARK: Confined vs actor

  Benchmark("Confined: tell, 1M then one ask to drain") { benchmark async in
    let model = Confined(Model())
    for _ in benchmark.scaledIterations {
      model.tell { $0.count += 1 }
    }
    let count = await model.ask { $0.count }
    precondition(count == benchmark.scaledIterations.count, "lost a message")
  }

  Benchmark("Confined: ask") { benchmark async in
    let model = Confined(Model())
    for _ in benchmark.scaledIterations {
      blackHole(await model.ask { $0.count })
    }
  }

  Benchmark("Confined: actor method, awaited (reference)") { benchmark async in
    let model = ModelActor()
    for _ in benchmark.scaledIterations {
      await model.increment()
    }
    blackHole(await model.get())
  }

  Benchmark("Confined: actor get, awaited from a Task (reference)") { benchmark async in
    let model = ModelActor()
    for _ in benchmark.scaledIterations {
      blackHole(await model.get())
    }
  }
}

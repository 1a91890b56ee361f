import Dispatch
import SingleWriterCompanions

/// The article's shared cache: a dictionary that any thread may read or write, in the
/// three forms it offers: sync, with a completion, and `await`.
func barrierStoreWalkthrough() {
  // Completions go to this serial queue, so they print in the order of the calls.
  let completions = DispatchQueue(label: "completions")
  let cache = BarrierStore<String, String>(completionQueue: completions)
  print("backing: \(cache.backing)")

  // Sync: returns when done.
  cache.setValue("Joe", forKey: "user")
  print("sync read: \(cache.value(forKey: "user") ?? "nil")")

  // Callback: returns at once; the completion runs later on `completions`, which is
  // the only queue that touches `log`.
  final class Log: @unchecked Sendable { var lines: [String] = [] }
  let log = Log()
  cache.setValue("dark", forKey: "theme") { key, value in
    log.lines.append("callback: stored \(key) = \(value)")
  }
  cache.value(forKey: "theme") { key, value in
    log.lines.append("callback: read \(key) = \(value ?? "nil")")
  }
  cache.removeValue(forKey: "user") { key, removed in
    log.lines.append("callback: removed \(key), which was \(removed ?? "nil")")
  }
  // A write started before a read is seen by it, even before the write's completion.
  print("sync read right after the callback calls: \(cache.value(forKey: "theme") ?? "nil")")
  for line in completions.sync(execute: { log.lines }) { print(line) }

  let done = DispatchSemaphore(value: 0)
  // Async: the same operations for `await`, named with an `Async` suffix.
  Task {
    await cache.setValueAsync("fr", forKey: "language")
    print("async read: \(await cache.valueAsync(forKey: "language") ?? "nil")")
    let removed = await cache.removeValueAsync(forKey: "language")
    print("async remove returned \(removed ?? "nil")")
    done.signal()
  }
  done.wait()

  // The article's design, a concurrent queue with barrier writes, behaves the same.
  let queued = BarrierStore<Int, Int>(backing: .barrierQueue)
  DispatchQueue.concurrentPerform(iterations: 100) { queued.setValue($0 * $0, forKey: $0) }
  let sum = (0..<100).reduce(0) { $0 + (queued.value(forKey: $1) ?? 0) }
  print("backing: \(queued.backing); 100 concurrent writes, sum of squares \(sum)")
}

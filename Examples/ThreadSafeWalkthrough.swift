import Dispatch
import SingleWriter

/// Writers on many threads race for the writer; the ones refused queue their write,
/// and the final count is exact.
func threadSafeWalkthrough() {
  struct Stats: Sendable {
    var hits = 0
    var lastWriter = -1
  }
  let stats = ThreadSafeSingleWriter(value: Stats())
  let iterations = 10_000

  DispatchQueue.concurrentPerform(iterations: iterations) { index in
    // Take the writer if it is free; otherwise queue the write for whoever holds it.
    let wrote = stats.tryWrite { (value: inout Stats) -> Bool in
      value.hits += 1
      value.lastWriter = index
      return true
    }
    if wrote == nil {
      stats.writeNext { proxy in
        proxy.write.hits += 1
        proxy.write.lastWriter = index
      }
    }
  }
  // Each queued write ran on the thread that released the writer before it.
  print("\(iterations) writes from \(iterations) iterations: hits = \(stats.read.hits)")

  // A checkout can cross threads: check out here, write and release over there.
  let done = DispatchSemaphore(value: 0)
  do {
    let proxy = stats.writer!
    stats.writeNext { $0.write.hits += 1 }  // waits for the proxy
    DispatchQueue.global().async {
      proxy.write.hits += 100
      done.signal()
    }  // the closure, and with it the proxy, is released on that thread
  }  // this thread's reference ends here
  done.wait()
  // Reads never wait for a checkout, and see each write whole.
  print("read while the writer may still be out: \(stats.read.hits >= 10_100)")
  let final = stats.withWriter { $0.hits }  // waits its turn behind the queued write
  print("after withWriter: hits = \(final)")  // 10101
}

import Foundation
import SingleWriter
import Testing

/// Found by the generated-program checker (backlog theme): a `writeNext` that queued, then
/// found the checkout free on arriving (here after waiting for room in a bounded backlog)
/// served the queue itself, its own body included, as if for another thread, so a proxy
/// that body kept for this very thread was recorded as nobody's. This thread then held the
/// checkout without the container knowing: its next `writeNext` on a full backlog waited
/// for room that only it could make, and hung. Now its own body runs in place, as when the
/// writer is free.
@Suite struct KeptOwnBodyTests {
  @Test func aProxyKeptByABodyItsCallerServedCountsAsTheCallers() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
      for _ in 0..<40 {
        let box = ThreadSafeSingleWriter(value: CheckedPair(), maxQueuedWrites: 1)
        var held = box.writer
        box.writeNext { $0.write.a += 1 }  // fills the bound
        let outcome = Locked("")
        Thread.detachNewThread {
          let kept = KeptProxy()  // keeps a proxy for this thread only
          // Waits for room; once the holder has served the write ahead, this call often
          // finds the checkout free and serves its own body, which keeps the proxy here.
          box.writeNext { proxy in
            _ = kept.keep(proxy)
          }
          guard let proxy = kept.take() else { return outcome.withLock { $0 = "elsewhere" } }
          Thread.detachNewThread { box.writeNext { $0.write.a += 1 } }  // fills the bound
          while box.queuedWrites < 1 { usleep(100) }
          box.writeNext { $0.write.a += 1 }  // from the holder: queues past the bound
          proxy.write.a += 1
          outcome.withLock { $0 = "returned" }
        }
        usleep(5_000)
        held = nil
        _ = held
        for _ in 0..<200 where outcome.withLock({ $0.isEmpty }) { usleep(10_000) }
        switch outcome.withLock({ $0 }) {
        case "elsewhere": continue
        case "returned": print("SELF-SERVED-RETURNED")
        default: print("SELF-SERVED-HUNG")
        }
        exit(0)
      }
      print("NEVER-SELF-SERVED")
      exit(0)
    }
    let output = result.map { String(decoding: $0.standardOutputContent, as: UTF8.self) } ?? ""
    #expect(output.contains("SELF-SERVED-RETURNED"), "\(output)")
  }
}

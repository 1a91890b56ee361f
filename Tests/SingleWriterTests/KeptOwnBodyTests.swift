import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// Found by the generated-program checker (backlog theme): a `writeNext` that queued, then
/// found the checkout free on arriving (here after waiting for room in a bounded backlog)
/// served the queue itself, its own body included, as if for another thread, so a proxy
/// that body kept for this very thread was recorded as nobody's. This thread then held the
/// checkout without the container knowing: its next `writeNext` on a full backlog waited
/// for room that only it could make, and hung. Now its own body runs in place, as when the
/// writer is free.
@Suite struct KeptOwnBodyTests {
  /// The waiting thread is made to arrive after the holder has freed the checkout: once it
  /// has asked for room, the test takes the ask back, so the release does not wake it and
  /// it finds the room only at its next recheck, with the checkout long free. An attempt
  /// in which it asked again before the release is retried.
  @Test func aProxyKeptByABodyItsCallerServedCountsAsTheCallers() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
      for _ in 0..<1_000 {
        let box = ThreadSafeSingleWriter(value: CheckedPair(), maxQueuedWrites: 1)
        var held = box.writer
        box.writeNext { $0.write.a += 1 }  // fills the bound
        let outcome = Locked("")
        Thread.detachNewThread {
          let kept = KeptProxy()  // keeps a proxy for this thread only
          box.writeNext { proxy in  // waits for room
            _ = kept.keep(proxy)
          }
          guard let proxy = kept.take() else { return outcome.withLock { $0 = "elsewhere" } }
          Thread.detachNewThread { box.writeNext { $0.write.a += 1 } }  // fills the bound
          while box.queuedWrites < 1 { usleep(100) }
          box.writeNext { $0.write.a += 1 }  // from the holder: queues past the bound
          proxy.write.a += 1
          outcome.withLock { $0 = "returned" }
        }
        while sw_load_relaxed(box.lock.roomWanted) == 0 { usleep(50) }
        sw_store_release(box.lock.roomWanted, 0)
        held = nil  // serves the write ahead, then frees the checkout
        _ = held
        // A watchdog, not a timing: the thread returns within milliseconds unless it hangs.
        for _ in 0..<6_000 where outcome.withLock({ $0.isEmpty }) { usleep(10_000) }
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

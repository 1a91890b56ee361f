import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

// Promise "True warnings": a bounded `writeNext` in a task that waits a second for room,
// while another task holds the checkout, warned that the task held it "through a proxy".
// The rule it shares (`blockedWaitMayStarveHolder`) also holds for an async `transaction`,
// which holds the checkout with no proxy: the warning claimed a proxy that did not exist.

/// The wait for room outlasts the second after which it warns: real time.
@Suite(.tags(.realTime), .unlessRealTimeSkipped) struct AttackPassRoomWarningNamesTheHolder {
  @Test func aWaitForRoomBehindAnAsyncTransactionClaimsNoProxy() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "a bounded writeNext behind an async transaction")
      let box = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let held = SharedFlag()
      let holder = Task {
        try? await box.transaction { value in
          held.set()
          // Holds the writer until the wait for room below has warned.
          while sw_printed_error_count() == 0 { try? await Task.sleep(nanoseconds: 1_000_000) }
          value += 1
        }
      }
      while !held.isSet { await Task.yield() }
      await Task.detached {
        box.writeNext { $0.write += 1 }  // fills the backlog
        box.writeNext { $0.write += 1 }  // waits for room
      }.value
      _ = await holder.result
      await box.drained()
      exit(box.read == 3 ? 0 : 1)
    }
    let text = standardError(result)
    #expect(text.contains("waited 1 s for room"), "\(exitReport(result))")
    #expect(!text.contains("through a proxy"), "\(exitReport(result))")
  }
}

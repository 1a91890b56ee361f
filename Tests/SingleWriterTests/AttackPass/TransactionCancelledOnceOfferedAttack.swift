import Foundation
import Testing

@testable import SingleWriter

// Promise "Cancellation of a transaction": an async transaction cancelled while it waits
// its turn throws without running its body; once the body runs, it commits. Between the
// two: its turn came (the writer was handed to its task as it slept) and the task is
// cancelled before it runs. The writer is the task's already, as for a `checkout()`
// ("a cancellation that loses gets the proxy"): the body must run once and commit, and the
// writes queued behind it must run after the commit, not be stuck or skipped.

@Suite(.serialized) struct AttackPassTransactionCancelledOnceOffered {
  @Test func aTransactionCancelledAfterItsTurnCameRunsItsBodyAndCommits() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "a transaction cancelled once offered the writer")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      let a = ThreadSafeSingleWriter(value: [String]())
      var held: ThreadSafeWriterProxy<[String]>? = coaTakeElsewhere(a)
      let executor = ScheduleExecutor()
      let finished = SharedFlag()
      let outcome = Locked<String?>(nil)
      let transaction = Task(executorPreference: executor) {
        do {
          try await a.transaction { log in
            await Task.yield()
            log.append("transaction")
          }
          outcome.withLock { $0 = "committed" }
        } catch {
          outcome.withLock { $0 = "threw \(type(of: error))" }
        }
        finished.set()
      }
      coaRun(executor) { a.pendingCount == 1 }  // queued, then not run
      writeNextFromAnotherThread(a) { $0.write.append("behind") }
      held = nil  // the writer is handed to the task, which cannot run yet
      _ = held
      coaAwait(60, "the offer was never made") { atkCCOOfferState(a) == .offered }
      transaction.cancel()  // loses: its turn came
      coaRun(executor) { finished.isSet }
      coaAwait(60, "the write behind it never ran") { a.read.count == 2 }
      let got = outcome.withLock { $0 } ?? "nothing"
      atkEnd(
        breakingIf: got != "committed" || a.read != ["transaction", "behind"],
        "a transaction cancelled once its turn came: \(got), value \(a.read)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }
}

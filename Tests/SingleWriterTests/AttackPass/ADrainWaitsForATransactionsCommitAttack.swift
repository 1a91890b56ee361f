import Foundation
import Testing

@testable import SingleWriter

// "The backlog is visible": `drained()` returns once every write queued before it has
// run, and "a write has run once its closure returned (a `transaction` once it
// committed)". A `withWriter` that queued and runs holds up a drain called meanwhile
// (`drainedWaitsForAWithWriterThatQueuedAndRuns`); so must an async transaction that
// queued, was handed the writer as a `checkout()` is, and runs its body: only a proxy's
// holder never holds a drain up.

@Suite(.serialized) struct AttackPassADrainWaitsForATransactionsCommit {
  /// The transaction queues behind a proxy held elsewhere; the release hands it the
  /// writer, and its body holds it open until a drain called then has returned (or a
  /// while, if the drain rightly waits). The drain must see the commit.
  @Test func aDrainCalledWhileAQueuedAsyncTransactionRunsWaitsForItsCommit() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "a drain called while a queued async transaction runs")
      let a = ThreadSafeSingleWriter(value: 0)
      var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let inBody = SharedFlag()
      let drained = SharedFlag()
      let transaction = Task.detached {
        try await a.transaction { value in
          inBody.set()
          value = 1
          // Open until the drain has returned; one that rightly waits for the commit
          // never returns meanwhile, and the body gives up after a while.
          var polls = 2_000
          while !drained.isSet, polls > 0 {
            try? await Task.sleep(nanoseconds: 1_000_000)
            polls -= 1
          }
          value = 2
        }
      }
      coaAwait(60, "the transaction never queued") { a.queuedWrites == 1 }
      held = nil  // hands the writer to the transaction's task
      _ = held
      coaAwait(60, "the transaction's body never ran") { inBody.isSet }
      await a.drained()
      drained.set()
      let seen = a.read
      _ = try? await transaction.value
      atkEnd(
        breakingIf: seen != 2,
        "drained() returned while an async transaction that had queued was still open "
          + "(read \(seen))")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }
}

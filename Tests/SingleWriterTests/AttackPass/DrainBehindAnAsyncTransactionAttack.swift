import Foundation
import Testing

@testable import SingleWriter

// Promise "The backlog is visible": `drained()` returns only after every write queued
// before it has run, and a write has run once its closure returned. An async
// `transaction` queues as a `checkout()` does, but it is a closure write: a drain queued
// behind it must wait for its commit, not return when its task is handed the writer.

@Suite(.serialized) struct AttackPassDrainBehindAnAsyncTransaction {
  /// An async transaction queued behind a held proxy, then a `drained()` behind it. At the
  /// release the transaction's task gets the writer and its body runs, holding it open
  /// until the drain returns (or for a while, if the drain rightly waits). The value read
  /// once the drain returns must have the transaction's commit in it.
  @Test func aDrainQueuedBehindAnAsyncTransactionWaitsForItsCommit() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "a drain queued behind an async transaction")
      let a = ThreadSafeSingleWriter(value: 0)
      let held = coaTakeElsewhere(a)
      let drained = SharedFlag()
      let bodyBegan = SharedFlag()
      let transaction = Task.detached {
        try await a.transaction { value in
          bodyBegan.set()
          value = 1
          // Open until the drain has returned; a drain that rightly waits for the commit
          // never returns meanwhile, and the body gives up after a while.
          var polls = 2_000
          while !drained.isSet, polls > 0 {
            try? await Task.sleep(nanoseconds: 1_000_000)
            polls -= 1
          }
          value = 2
        }
      }
      let seen = await drainBehindTheQueuedTransaction(a, releasing: consume held, drained) {
        a.read
      }
      _ = try? await transaction.value
      atkEnd(
        breakingIf: !bodyBegan.isSet || seen != 2,
        "drained() returned while the transaction queued before it was still open (read \(seen))"
      )
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// The same when the body throws after writing its draft: the drain returns once the
  /// transaction has ended, and sees the value from before it.
  @Test func aDrainQueuedBehindAnAsyncTransactionThatThrowsReturnsOnceItEnded() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "a drain queued behind an async transaction that throws")
      let a = ThreadSafeSingleWriter(value: 0)
      let held = coaTakeElsewhere(a)
      let drained = SharedFlag()
      let ended = SharedFlag()
      let transaction = Task.detached {
        try await a.transaction { (value: inout Int) async throws -> Void in
          value = 1
          var polls = 500
          while !drained.isSet, polls > 0 {
            try? await Task.sleep(nanoseconds: 1_000_000)
            polls -= 1
          }
          ended.set()  // the body's last step: the drain must not return before it
          throw CancellationError()
        }
      }
      let endedFirst = await drainBehindTheQueuedTransaction(a, releasing: consume held, drained) {
        ended.isSet
      }
      _ = try? await transaction.value
      atkEnd(
        breakingIf: !endedFirst || a.read != 0,
        "drained() returned before the throwing transaction ended (\(!endedFirst)), value \(a.read)"
      )
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// A synchronous transaction that queued (as `withWriter` does) behind a held proxy,
  /// then a drain behind it: the drain returns only after the commit.
  @Test func aDrainQueuedBehindASyncTransactionWaitsForItsCommit() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "a drain queued behind a sync transaction")
      let a = ThreadSafeSingleWriter(value: 0)
      let held = coaTakeElsewhere(a)
      let drained = SharedFlag()
      let done = SharedFlag()
      Thread.detachNewThread {
        a.transaction { value in
          value = 1
          _ = eventually(atMost: 2) { drained.isSet }
          value = 2
        }
        done.set()
      }
      let seen = await drainBehindTheQueuedTransaction(a, releasing: consume held, drained) {
        a.read
      }
      coaAwait(10, "the transaction never ended") { done.isSet }
      atkEnd(
        breakingIf: seen != 2,
        "drained() returned while the sync transaction queued before it was open (read \(seen))")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }
}

/// Once the transaction has queued behind `held`, queues a `drained()` behind it, then
/// releases `held`, which hands the writer to the transaction. Returns what `afterDrain`
/// saw when the drain returned, having set `drained`. `held` is consumed, so that it lives
/// exactly until its release here, in debug and release builds alike.
private func drainBehindTheQueuedTransaction<R: Sendable>(
  _ a: ThreadSafeSingleWriter<Int>, releasing held: consuming ThreadSafeWriterProxy<Int>,
  _ drained: SharedFlag, afterDrain: @escaping @Sendable () -> R
) async -> R {
  let drainer = withExtendedLifetime(held) {
    coaAwait(10, "the transaction never queued") { a.pendingCount == 1 }
    let drainer = Task.detached {
      await a.drained()
      drained.set()
      return afterDrain()
    }
    coaAwait(10, "the drain never queued") { coaInboxCount(a) == 2 }
    return drainer
  }
  _ = consume held
  return await drainer.value
}

import Foundation
import Testing

@testable import SingleWriter

// Promise "Seen whole or not at all": until a transaction's body returns, `changes()` sees
// the value from before and never waits for the body. A consumer waits for the end of a
// held checkout that has written (its value may be half done); a transaction holds the
// checkout but writes only a copy, so a consumer must get the newest committed value
// while the body is still open.

@Suite(.serialized) struct AttackPassChangesDuringAnOpenTransaction {
  /// A write is published, then an async transaction takes the writer and stays open until
  /// the consumer has had its element. The consumer must get the write before the body
  /// returns, and never the body's draft. (The body's wait is a watchdog: with a bound of
  /// 2 s it once ran out under a loaded full run before the consumer was scheduled, and
  /// the test then waited forever for a third value.)
  @Test func aConsumerGetsTheLastCommitWhileAnAsyncTransactionIsOpen() async {
    let box = ThreadSafeSingleWriter(value: 0)
    var iterator = box.changes().makeAsyncIterator()
    #expect(await iterator.next() == 0)
    box.withWriter { $0 = 1 }
    let consumed = SharedFlag()
    let bodyOpen = Locked(false)
    let transaction = Task.detached {
      try await box.transaction { value in
        value = 99
        bodyOpen.withLock { $0 = true }
        var polls = 60_000
        while !consumed.isSet, polls > 0 {
          try? await Task.sleep(nanoseconds: 1_000_000)
          polls -= 1
        }
        value = 2
        bodyOpen.withLock { $0 = false }
      }
    }
    _ = await waitUntil { bodyOpen.withLock { $0 } }
    let next = await iterator.next()
    let stillOpen = bodyOpen.withLock { $0 }
    consumed.set()
    _ = try? await transaction.value
    #expect(next == 1, "the consumer saw \(String(describing: next))")
    #expect(stillOpen, "the consumer waited for the transaction's body")
    // Only if it has not had the commit already: else this would wait forever.
    if next == 1 { #expect(await iterator.next() == 2) }
  }

  /// The same with a synchronous transaction held open on a thread of its own.
  @Test func aConsumerGetsTheLastCommitWhileASyncTransactionIsOpen() async {
    let box = ThreadSafeSingleWriter(value: 0)
    var iterator = box.changes().makeAsyncIterator()
    #expect(await iterator.next() == 0)
    box.withWriter { $0 = 1 }
    let consumed = SharedFlag()
    let bodyOpen = Locked(false)
    let closed = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      box.transaction { value in
        value = 99
        bodyOpen.withLock { $0 = true }
        _ = eventually { consumed.isSet }
        value = 2
        bodyOpen.withLock { $0 = false }
      }
      closed.signal()
    }
    _ = await waitUntil { bodyOpen.withLock { $0 } }
    let next = await iterator.next()
    let stillOpen = bodyOpen.withLock { $0 }
    consumed.set()
    await withCheckedContinuation { done in
      Thread.detachNewThread {
        closed.wait()
        done.resume()
      }
    }
    #expect(next == 1, "the consumer saw \(String(describing: next))")
    #expect(stillOpen, "the consumer waited for the transaction's body")
    // Only if it has not had the commit already: else this would wait forever.
    if next == 1 { #expect(await iterator.next() == 2) }
  }
}

import Foundation
import Testing

@testable import SingleWriter

// Promise "The backlog is bounded": the checkout's holder queues past a full bound
// instead of waiting for room only its own end can make. A transaction holds the checkout
// (the sync form on its thread, the async form in its task, across suspensions), so its
// body's `writeNext` calls must queue past the bound, run after the commit, and see it.

@Suite(.serialized) struct AttackPassBoundInsideATransaction {
  /// A synchronous transaction on a container bounded at one queued write queues five
  /// from its body.
  @Test func aSyncTransactionsBodyQueuesPastAFullBound() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "writeNext past the bound from a sync transaction's body")
      let a = ThreadSafeSingleWriter(value: [Int](), maxQueuedWrites: 1)
      a.transaction { log in
        log.append(0)
        for step in 1...5 { a.writeNext { $0.write.append(step) } }
        log.append(-1)
      }
      await a.drained()
      let log = a.read
      atkEnd(breakingIf: log != [0, -1, 1, 2, 3, 4, 5], "read \(log)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// The same from an async transaction's body, across a suspension between the writes,
  /// and with the transaction queued behind a held proxy first (handed the writer at its
  /// turn, with no thread of its own).
  @Test func anAsyncTransactionsBodyQueuesPastAFullBoundAcrossSuspensions() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "writeNext past the bound from an async transaction's body")
      let a = ThreadSafeSingleWriter(value: [Int](), maxQueuedWrites: 1)
      var held: ThreadSafeWriterProxy<[Int]>? = coaTakeElsewhere(a)
      let transaction = Task.detached {
        try await a.transaction { log in
          log.append(0)
          for step in 1...5 {
            a.writeNext { $0.write.append(step) }
            await Task.yield()
          }
          log.append(-1)
        }
      }
      coaAwait(10, "the transaction never queued") { a.pendingCount == 1 }
      held = nil
      _ = held
      _ = try? await transaction.value
      await a.drained()
      let log = a.read
      atkEnd(breakingIf: log != [0, -1, 1, 2, 3, 4, 5], "read \(log)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// A `Task.immediate` started inside an async transaction's body (the task holds the
  /// checkout) calls `writeNext` on a full backlog: it runs inline in the holder task, so
  /// it queues past the bound instead of waiting for room only the commit can make.
  @Test func aBoundedWriteNextFromAnInlineTaskInsideAnAsyncTransactionQueuesPastTheBound()
    async
  {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "a bounded writeNext from a Task.immediate inside a transaction")
      guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else { exit(0) }
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let queued = await Task.detached { () -> Int in
        let seen = Locked(0)
        try? await a.transaction { value in
          value += 1
          writeNextFromAnotherThread(a) { $0.write += 1 }  // the backlog is full now
          Task.immediate {
            a.writeNext { $0.write += 1 }  // no room until the commit
            seen.withLock { $0 = a.queuedWrites }
          }
          await Task.yield()
        }
        return seen.withLock { $0 }
      }.value
      await a.drained()
      atkEnd(breakingIf: queued != 2 || a.read != 3, "queued \(queued), read \(a.read)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }
}

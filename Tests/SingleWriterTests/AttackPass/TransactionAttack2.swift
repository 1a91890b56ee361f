import Dispatch
import Foundation
import Testing

@testable import SingleWriter

/// A second pass on `transaction`'s documented promises: waits for itself from inside an
/// async body, work handed to another thread from inside the body, lock order between two
/// containers' transactions, and an async transaction on the main actor beside a storm.
@Suite struct TransactionAttack2 {
  // MARK: Waits for itself inside an async body

  /// `drained()` by the same task inside its async transaction's body waits for the commit
  /// that waits for it: documented to stop with a message.
  @Test func drainedInsideAnAsyncTransactionBySameTaskStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "drained() inside async transaction")
      let box = ThreadSafeSingleWriter(value: 0)
      blockUntilDone(
        Task {
          try? await box.transaction { value in
            box.writeNext { $0.write += 1 }
            await box.drained()
            value += 1
          }
        })
    }
    expectStop(result, saying: transactionSelfWriteMessage)
  }

  /// `checkout()` by the same task inside its async transaction's body: documented to stop.
  @Test func checkoutInsideAnAsyncTransactionBySameTaskStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "checkout() inside async transaction")
      let box = ThreadSafeSingleWriter(value: 0)
      blockUntilDone(
        Task {
          try? await box.transaction { value in
            await Task.yield()
            let proxy = try await box.checkout()
            proxy.write += 1
            value += 1
          }
        })
    }
    expectStop(result, saying: transactionSelfWriteMessage)
  }

  // MARK: Work handed to another thread

  /// The body hands a write to another thread and waits for that thread's `writeNext` to
  /// return: it queues behind the commit, then runs on the committed value. Run in place
  /// on the value under the draft, the commit would overwrite it (a lost write).
  @Test func aWriteHandedToAnotherThreadFromTheBodyRunsAfterTheCommit() {
    let box = ThreadSafeSingleWriter(value: 1)
    box.transaction { value in
      value = 10
      atkOnFreshThread { box.writeNext { $0.write *= 2 } }
      #expect(box.read == 1, "a read inside the body sees the value from before")
      value += 1
    }
    #expect(box.read == 22)
    #expect(box.queuedWrites == 0)
  }

  /// The same from an async body, the helper a thread that blocks in `withWriter`: it
  /// waits for the commit (the body does not wait for it), then sees it.
  @Test func aBlockingWriterStartedFromAnAsyncBodyRunsAfterTheCommit() async throws {
    let box = ThreadSafeSingleWriter(value: 1)
    let helper = DispatchSemaphore(value: 0)
    let started = Locked(false)
    try await box.transaction { value in
      value = 10
      Thread.detachNewThread {
        started.withLock { $0 = true }
        box.withWriter { $0 *= 2 }
        helper.signal()
      }
      _ = await waitUntil { started.withLock { $0 } }
      try await Task.sleep(nanoseconds: 5_000_000)
      value += 1
    }
    await withCheckedContinuation { done in
      Thread.detachNewThread {
        helper.wait()
        done.resume()
      }
    }
    #expect(box.read == 22)
  }

  /// A proxy taken before the transaction and escaped to another thread, which writes
  /// through it in two steps and then lets it go: the transaction waits for that release,
  /// and its draft starts from the whole of that write.
  @Test func aTransactionWaitsForAProxyEscapedToAnotherThread() async {
    let box = ThreadSafeSingleWriter(value: Pair())
    let kept = Locked<ThreadSafeWriterProxy<Pair>?>(box.writer)
    let wrote = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      kept.withLock { $0?.write.a += 1 }
      wrote.signal()
      usleep(20_000)
      kept.withLock { $0?.write.b += 1 }
      kept.withLock { $0 = nil }
    }
    wrote.wait()
    let seen = box.transaction { value -> Pair in
      let before = value
      value.a += 10
      value.b += 10
      return before
    }
    #expect(seen == Pair(a: 1, b: 1), "the draft started from half the escaped proxy's write")
    #expect(box.read == Pair(a: 11, b: 11))
  }

  /// A transaction on B inside `read { }` of A: no wait for itself, and it commits.
  @Test func aTransactionInsideAReadOfAnotherContainerCommits() {
    let a = ThreadSafeSingleWriter(value: 1)
    let b = ThreadSafeSingleWriter(value: 1)
    a.read { outer in b.transaction { $0 += outer } }
    #expect(b.read == 2)
  }

  // MARK: Cancelled while waiting its turn

  /// A task cancelled while its async transaction waits behind a held proxy, with writes
  /// and a `drained()` queued behind it: it throws without running its body, and leaves
  /// the queue whole. At the release, the writes behind it run, once each, in order, and
  /// `drained()` returns.
  @Test func aCancelledWaiterLeavesTheWritesBehindItWhole() async {
    let box = ThreadSafeSingleWriter(value: [String]())
    let proxy = Locked<ThreadSafeWriterProxy<[String]>?>(box.writer)
    let ran = Locked(false)
    let waiter = Task.detached {
      try await box.transaction { log in
        ran.withLock { $0 = true }
        await Task.yield()
        log.append("cancelled transaction")
      }
    }
    _ = await waitUntil { box.queuedWrites == 1 }
    box.writeNext { $0.write.append("first") }
    let drain = Task.detached { await box.drained() }
    box.writeNext { $0.write.append("second") }
    waiter.cancel()
    let outcome = await waiter.result
    #expect(throws: CancellationError.self) { try outcome.get() }
    proxy.withLock { $0 = nil }
    await drain.value
    #expect(!ran.withLock { $0 })
    #expect(box.read == ["first", "second"])
    #expect(box.queuedWrites == 0)
  }

  // MARK: Lock order

  #if DEBUG
    /// Two containers' synchronous transactions nested both ways, one after the other on
    /// one thread: one inversion, reported once.
    @Test func syncTransactionsNestedBothWaysAreReported() async {
      let result = await #expect(
        processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
      ) {
        attackWatchdog(30, "sync transactions nested both ways")
        let reports = atkCountLockReports()
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        a.transaction { _ in b.transaction { $0 += 1 } }
        b.transaction { _ in a.transaction { $0 += 1 } }
        atkEnd(
          breakingIf: reports.load() != 1,
          "\(reports.load()) lock-order reports for A-then-B and B-then-A transactions (want 1)")
      }
      expectNoBreak(result)
      expectExit(result, 0)
    }

    /// The same with async transactions in one task, and one in each order: the holder
    /// of the outer transaction is the task, across the inner one's suspension.
    @Test func asyncTransactionsNestedBothWaysAreReported() async {
      let result = await #expect(
        processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
      ) {
        attackWatchdog(30, "async transactions nested both ways")
        let reports = atkCountLockReports()
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        try? await a.transaction { _ in
          try await b.transaction { value in
            await Task.yield()
            value += 1
          }
        }
        try? await b.transaction { _ in
          await Task.yield()
          a.transaction { $0 += 1 }
        }
        atkEnd(
          breakingIf: reports.load() != 1,
          "\(reports.load()) lock-order reports for A-then-B and B-then-A transactions (want 1)")
      }
      expectNoBreak(result)
      expectExit(result, 0)
    }
  #endif

  // MARK: Main actor beside a storm

  /// A main-actor caller's async transactions while two threads queue `writeNext`s: every
  /// write runs once, each transaction's body runs on the main actor, and no storm body
  /// sees a draft.
  @Test @MainActor func mainActorTransactionsBesideAWriteNextStorm() async throws {
    let box = ThreadSafeSingleWriter(value: Pair())
    let perThread = 2_000
    let drafts = Counter()
    let storm = (0..<2).map { _ in
      Task.detached {
        for _ in 0..<perThread {
          box.writeNext { proxy in
            if proxy.write.a != proxy.write.b { drafts.add(1) }
            proxy.write.a += 1
            proxy.write.b += 1
          }
        }
      }
    }
    for _ in 0..<50 {
      try await box.transaction { value in
        MainActor.assertIsolated()
        value.a += 1
        await Task.yield()
        MainActor.assertIsolated()
        value.b += 1
      }
    }
    for task in storm { await task.value }
    await box.drained()
    #expect(drafts.load() == 0, "a storm body saw a transaction's draft")
    #expect(box.read == Pair(a: 2 * perThread + 50, b: 2 * perThread + 50))
  }
}

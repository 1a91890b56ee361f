import Dispatch
import Foundation
import Testing

@testable import SingleWriter

/// The message a write from inside a transaction's body by its own thread or task stops with.
let transactionSelfWriteMessage = "inside an async transaction's body on the same container"

/// Attacks on `transaction`: hostile readers and observers looking for half a transaction,
/// and writes to the same container from inside the body, which must stop with a message.
@Suite struct TransactionAttackTests {
  /// A reader thread loops over every kind of read while transactions write `a`, then
  /// work, then `b`: with the body writing in place, the reader sees `a != b`.
  @Test func noReaderEverSeesHalfATransaction() async {
    let box = ThreadSafeSingleWriter(value: Pair())
    let torn = Counter()
    let reads = Counter()
    let reader = Repeating(threads: 2) {
      let whole = box.read
      let inPlace = box.read { $0 }
      let tracked = box.trackedRead
      for pair in [whole, inPlace, tracked] where pair.a != pair.b { torn.add(1) }
      reads.add(1)
    }
    for _ in 0..<50 {
      box.transaction { pair in
        pair.a += 1
        // Half done: until the readers have made two more rounds, so that one read the
        // whole round while the body was between its writes.
        let seen = reads.load()
        #expect(eventually { reads.load() >= seen + 2 })
        pair.b += 1
      }
    }
    reader.stop()
    #expect(torn.load() == 0, "reads saw half a transaction")
    #expect(box.read == Pair(a: 50, b: 50))
  }

  /// The same with references in the value (no optimistic copy: readers take a slot), and
  /// with async transactions whose bodies suspend halfway.
  @Test func noReaderSeesHalfAnAsyncTransactionOfARichValue() async throws {
    let box = ThreadSafeSingleWriter(value: Rich())
    let torn = Counter()
    let reads = Counter()
    let reader = Repeating(threads: 2) {
      if !box.read.isWhole { torn.add(1) }
      if !box.read({ $0.isWhole }) { torn.add(1) }
      reads.add(1)
    }
    for _ in 0..<50 {
      try await box.transaction { rich in
        rich.count += 1
        rich.items.append(rich.count)
        // Half done, across a suspension, until the readers have made two more rounds.
        let seen = reads.load()
        await waitUntil { reads.load() >= seen + 2 }
        rich.name = String(rich.count)
        rich.ref = Ref(rich.count)
      }
    }
    reader.stop()
    #expect(torn.load() == 0)
    #expect(box.read.count == 50 && box.read.isWhole)
  }

  /// A `changes()` consumer and a tracking observer see only committed values, while
  /// transactions commit and throw and `writeNext` writes queue behind them.
  @Test func observersSeeOnlyCommittedValues() async {
    let box = ThreadSafeSingleWriter(value: Pair())
    let stream = box.changes(skippingRepeats: false)
    let consumer = Task {
      var seen = 0
      var bad = 0
      for await pair in stream {
        if pair.a != pair.b || pair.a < 0 { bad += 1 }
        seen += 1
        if pair.a == 1_000 { break }
      }
      return (seen, bad)
    }
    await onThreads(2) { index in
      for round in 0..<250 {
        if round % 5 == 0 {
          _ = try? box.transaction { (pair: inout Pair) throws(Abandon) in
            pair.a = -1  // never published
            throw Abandon()
          }
        }
        box.transaction { pair in
          pair.a += 1
          pair.b += 1
        }
        box.writeNext { $0.write.bump() }
      }
      _ = index
    }
    let (seen, bad) = await consumer.value
    #expect(bad == 0, "a stream saw a value no commit published")
    #expect(seen >= 1)
    #expect(box.read == Pair(a: 1_000, b: 1_000))
  }

  // MARK: Writes to the same container from inside the body

  @Test func withWriterInsideASyncTransactionStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "withWriter inside transaction")
      let box = ThreadSafeSingleWriter(value: 0)
      box.transaction { _ in box.withWriter { $0 += 1 } }
    }
    expectStop(result, saying: "inside a write's closure")
  }

  @Test func aTransactionInsideASyncTransactionStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "transaction inside transaction")
      let box = ThreadSafeSingleWriter(value: 0)
      box.transaction { _ in box.transaction { $0 += 1 } }
    }
    expectStop(result, saying: "transaction or a writeNext body")
  }

  @Test func aTransactionInsideAReadStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "transaction inside read")
      let box = ThreadSafeSingleWriter(value: 0)
      box.read { _ in box.transaction { $0 += 1 } }
    }
    expectStop(result, saying: "inside `read { }`")
  }

  @Test func awaitWriteInsideAnAsyncTransactionStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "await write inside async transaction")
      let box = ThreadSafeSingleWriter(value: 0)
      blockUntilDone(
        Task {
          try? await box.transaction { value in
            await box.write { $0 += 1 }
            value += 1
          }
        })
    }
    expectStop(result, saying: transactionSelfWriteMessage)
  }

  @Test func withWriterInsideAnAsyncTransactionStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "withWriter inside async transaction")
      let box = ThreadSafeSingleWriter(value: 0)
      blockUntilDone(
        Task {
          try? await box.transaction { value in
            await Task.yield()
            box.withWriter { $0 += 1 }
            value += 1
          }
        })
    }
    expectStop(result, saying: transactionSelfWriteMessage)
  }

  @Test func anAsyncTransactionInsideAnAsyncTransactionStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "async transaction inside async transaction")
      let box = ThreadSafeSingleWriter(value: 0)
      blockUntilDone(
        Task {
          try? await box.transaction { _ in
            try await box.transaction { value in
              await Task.yield()
              value += 1
            }
          }
        })
    }
    expectStop(result, saying: transactionSelfWriteMessage)
  }

  /// Another task's write from inside the body is no self-deadlock: it waits for the
  /// commit, and sees it.
  @Test func anotherTasksWriteFromInsideTheBodyWaitsForTheCommit() async throws {
    let box = ThreadSafeSingleWriter(value: [String]())
    var other: Task<Void, Never>?
    try await box.transaction { log in
      other = Task.detached { await box.write { $0.append("other") } }
      await waitUntil { box.queuedWrites == 1 }
      log.append("transaction")
    }
    await other?.value
    #expect(box.read == ["transaction", "other"])
  }
}

import Dispatch
import Foundation
import Testing

@testable import SingleWriter

extension ThreadSafeSingleWriterTests {
  // MARK: Whole reads, Writers not starved by readers (Promises.md)

  @Test func readsDoNotWaitForAHeldCheckout() {
    let box = ThreadSafeSingleWriter(value: Pair())
    let proxy = box.writer!
    proxy.write.bump()
    let done = DispatchSemaphore(value: 0)
    let seen = Locked(Pair())
    DispatchQueue.global().async {
      let value = box.read
      seen.withLock { $0 = value }
      done.signal()
    }
    #expect(done.wait(timeout: .now() + 60) == .success, "read waited for the checkout")
    #expect(seen.withLock { $0 } == Pair(a: 1, b: 1))
    withExtendedLifetime(proxy) {}
  }

  @Test func aTryWriteWhileOnlyReadersHoldTheValueWaitsForThemInsteadOfFailing() {
    let box = ThreadSafeSingleWriter(value: [String](repeating: "x", count: 64))
    let readers = Repeating(threads: 2) { _ = box.read }
    var failed = 0
    for _ in 0..<20_000 where box.tryWrite({ $0[0] = "y" }) == nil { failed += 1 }
    readers.stop()
    #expect(failed == 0, "nil means the writer is busy, and nobody held it")
  }
}

extension ThreadSafeSingleWriterHostileTests {
  // MARK: Whole reads, Writers not starved by readers (Promises.md): under every kind of write

  @Test func readersSeeWholeRichValuesUnderEveryKindOfWrite() async throws {
    let box = ThreadSafeSingleWriter(value: Rich())
    let torn = Counter()
    let readers = Repeating(threads: 2) { if !box.read.isWhole { torn.add(1) } }
    try await withThrowingTaskGroup(of: Void.self) { group in
      for task in 0..<4 {
        group.addTask {
          for index in 0..<1_500 {
            switch (index + task) % 5 {
            case 0: await box.write { $0.bump() }
            case 1: box.withWriter { $0.bump() }
            case 2: box.writeNext { $0.write.bump() }
            case 3:
              if let writer = box.writer {
                writer.write.bump()
              } else {
                box.writeNext { $0.write.bump() }
              }
            default:
              let proxy = try await box.checkout()
              proxy.write.bump()
            }
          }
        }
      }
      try await group.waitForAll()
    }
    readers.stop()
    await waitUntil { box.writer != nil }
    #expect(torn.load() == 0)
    #expect(box.read.count == 6_000)
    #expect(box.read.isWhole)
  }

  @Test func aWriterIsNotStarvedByAStreamOfReaders() async throws {
    let box = ThreadSafeSingleWriter(value: Array(repeating: 1, count: 64))
    let batches = Counter()
    let readers = Repeating(threads: 4) {
      var sum = 0
      for _ in 0..<1_000 { sum &+= box.read.count }
      batches.add(sum > 0 ? 1 : 0)
    }
    await waitUntil { batches.load() >= 4 }  // the readers are reading
    let worst = await runOnThread(stackSize: 1 << 20) { () -> UInt64 in
      var worst: UInt64 = 0
      for _ in 0..<200 {
        let start = attackNow()
        box.withWriter { $0.append(1) }
        worst = max(worst, attackNow() - start)
      }
      return worst
    }
    readers.stop()
    // Starvation would never end: this bound is a watchdog, not a timing.
    #expect(worst < 10_000_000_000, "a write waited \(worst / 1_000_000) ms for readers")
  }
}

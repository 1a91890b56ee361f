import Foundation
import Testing

@testable import SingleWriter

// Promise "A release pays its debts", for the async `transaction`, whose end is "like
// that proxy's release": the writes its body queued (from whatever threads the task ran
// on) have run when `transaction` returns, while another thread keeps queueing, so that
// the serving thread is asked to hand over.

@Suite(.serialized) struct AttackPassTransactionDebts {
  /// The body queues 70 slow writes and a marker on thread 1, then one more on thread 2;
  /// the transaction ends on a thread of the cooperative pool. The marker must have run
  /// when `transaction` returns.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func anAsyncTransactionReturnsOnlyAfterTheWritesItsBodyQueuedFromTwoThreads() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "an async transaction's debts")
      let a = ThreadSafeSingleWriter(value: 0)
      let one = AtkPinned2()
      let two = AtkPinned2()
      let marker = Locked(false)
      let stop = Locked(false)
      let helper = DispatchSemaphore(value: 0)
      let early = await Task.detached { () -> Bool in
        try? await a.transaction { value in
          value += 1
          await one.run {
            for _ in 0..<70 {
              a.writeNext {
                $0.write += 1
                usleep(60)
              }
            }
            a.writeNext { proxy in
              proxy.write += 1
              marker.withLock { $0 = true }
            }
          }
          await two.run { a.writeNext { $0.write += 1 } }
          // Another thread keeps queueing while the end serves.
          Thread.detachNewThread {
            helper.signal()
            while !stop.withLock({ $0 }) { a.writeNext { $0.write += 1 } }
            helper.signal()
          }
          helper.wait()
        }
        return !marker.withLock { $0 }
      }.value
      stop.withLock { $0 = true }
      helper.wait()
      atkEnd(breakingIf: early, "the transaction returned before the marker its body queued ran")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }
}

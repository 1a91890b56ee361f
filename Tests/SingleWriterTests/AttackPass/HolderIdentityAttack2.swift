import Dispatch
import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

// Second hostile pass on holder identity (`checkoutHolder`, the scoped marks in
// `checkoutThread`, and `writingThread` recorded as a task by `beginProxyWriting`).

/// An actor whose jobs run on a thread of its own, one executor per instance (unlike
/// `AtkPinned`, whose executor is shared): two of them pin a task to two known threads.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
actor AtkPinned2 {
  let executor = OwnThreadExecutor()
  nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
  func run<R: Sendable>(_ body: @Sendable () -> R) -> R { body() }
}

@Suite struct AttackPassHolderIdentity2 {
  // MARK: A checkout sent to another task, then drained()

  /// Promise "No drain behind its own proxy": drained() stops only in a task that holds a
  /// proxy it took; in any other task it waits. A task checks out and sends the proxy to
  /// another task, which releases it 0.3 s later; a write is queued behind it from another
  /// thread; the first task, holding nothing now, calls drained(): a wait that ends. It
  /// stops the program, since `checkoutHolder` still names the task that took the proxy.
  @Test func drainedAfterSendingTheCheckoutToAnotherTaskWaits() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "drained after sending the checkout away")
      let a = ThreadSafeSingleWriter(value: 0)
      await Task.detached {
        let sent = Locked<ThreadSafeWriterProxy<Int>?>(try! await a.checkout())
        let other = Task.detached {
          let proxy = sent.withLock { $0.take() }!
          try? await Task.sleep(nanoseconds: 300_000_000)
          proxy.write += 1
        }
        while sent.withLock({ $0 != nil }) { await Task.yield() }
        writeNextFromAnotherThread(a) { $0.write += 10 }
        await a.drained()
        precondition(a.read == 11, "read \(a.read)")
        await other.value
      }.value
      exit(0)
    }
    expectExit(result, 0)
    #expect(
      !standardError(result).contains("drained() in a task that holds"), "\(exitReport(result))")
  }

  // MARK: A holder task that queues from two threads

  /// Promise "A release pays its debts": a release returns only after the writes that
  /// the checkout's holder queued from the releasing thread while it held the checkout.
  /// A task takes the writer on thread 1 and queues there (70 slow writes, then a
  /// marker); it hops to thread 2 and queues one more; it hops back to thread 1 and
  /// releases. A plain thread keeps queueing meanwhile, so the serving thread is asked to
  /// hand over. The debt recorded for thread 1 (`holderThread`) was overwritten by thread
  /// 2's write, so thread 1's release owes nothing, hands the batch to the successor and
  /// returns before the marker ran.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func aHolderTaskThatQueuedFromTwoThreadsStillOwesItsReleasingThreadsWrites() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      await atkReleaseOfAHoppingHolder(hopping: true)
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// Passed (the control of the test above): the same holder task that does not hop to
  /// thread 2 before its release on thread 1 is owed its writes.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func aHolderTaskThatQueuedFromOneThreadOwesItsWrites() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      await atkReleaseOfAHoppingHolder(hopping: false)
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }
}

/// Calls `body` during an inout access to `value`.
func atkDuringAccessString(_ value: inout String, _ body: () -> Void) {
  value += "y"
  body()
}

/// A task takes `a`'s writer on thread 1 and queues there 70 slow writes and a marker;
/// if `hopping`, it hops to thread 2 and queues one more there; then it releases on thread
/// 1 while another thread keeps queueing. Ends the child: BREAK if the release returned
/// before the marker ran.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
func atkReleaseOfAHoppingHolder(hopping: Bool) async -> Never {
  attackWatchdog(20, "a hopping holder's release")
  let a = ThreadSafeSingleWriter(value: 0)
  let one = AtkPinned2()
  let two = AtkPinned2()
  let marker = Locked(false)
  let stop = Locked(false)
  let helper = DispatchSemaphore(value: 0)
  let early = await Task.detached { () -> Bool in
    let held = Locked<ThreadSafeWriterProxy<Int>?>(nil)
    await one.run {
      held.withLock { $0 = a.writer }
      precondition(held.withLock { $0 } != nil)
      for _ in 0..<70 {
        a.writeNext {
          $0.write += 1; usleep(60)
        }
      }
      a.writeNext { proxy in
        proxy.write += 1
        marker.withLock { $0 = true }
      }
    }
    if hopping { await two.run { a.writeNext { $0.write += 1 } } }
    // Another thread keeps queueing while the release serves.
    Thread.detachNewThread {
      helper.signal()
      while !stop.withLock({ $0 }) { a.writeNext { $0.write += 1 } }
      helper.signal()
    }
    helper.wait()
    return await one.run { () -> Bool in
      let t0 = attackNow()
      held.withLock { $0 = nil }  // the release, on thread 1: serves
      attackErr(
        "release took \((attackNow() - t0) / 1000) us, read \(a.read), marker \(marker.withLock { $0 })\n"
      )
      return !marker.withLock { $0 }
    }
  }.value
  stop.withLock { $0 = true }
  helper.wait()
  atkEnd(breakingIf: early, "thread 1's release returned before the marker it queued ran")
}

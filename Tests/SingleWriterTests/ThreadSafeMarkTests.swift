import Dispatch
import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// The self-deadlock checks and the marks behind them (`checkoutThread`, `writingThread`,
/// `gateThread`, `checkoutHolder`): misuse stops with a message, and legal programs leave
/// no mark behind.
@Suite struct ThreadSafeSingleWriterMarkTests {
  // MARK: True warnings, No write inside a read (Promises.md)

  /// The warning names `checkout()` among the proxies it catches, but `checkout()` marks
  /// `checkoutThread` 0, so a task that blocks its thread in withWriter hung silently. The
  /// warning is due after a second; the watchdog ends the deadlock after three.
  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func withWriterBehindThisTasksOwnCheckoutWarns() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(3, "withWriter behind this task's checkout()")
      let box = ThreadSafeSingleWriter(value: 0)
      let proxy = try await box.checkout()
      proxy.write += 1
      box.withWriter { $0 += 1 }
      exit(7)
    }
    #expect(
      standardError(result).contains("this is a deadlock"), "no warning: \(exitReport(result))")
  }

  /// The same with `writer`'s proxy and `await write`.
  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func awaitWriteBehindThisTasksOwnWriterProxyWarns() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(3, "await write behind this task's writer proxy")
      let box = ThreadSafeSingleWriter(value: 0)
      let proxy = box.writer!
      proxy.write += 1
      await box.write { $0 += 1 }
      exit(7)
    }
    #expect(
      standardError(result).lowercased().contains("this is a deadlock"),
      "no warning: \(exitReport(result))")
  }

  @Test func withWriterInsideReadOnTheSameThreadStopsWithAMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(3, "withWriter inside read { }")
      let box = ThreadSafeSingleWriter(value: 0)
      box.read { _ in box.withWriter { $0 += 1 } }
      exit(7)
    }
    expectStop(result, saying: "ThreadSafeSingleWriter:")
  }

  @Test func tryWriteInsideReadOnTheSameThreadStopsWithAMessage() async {
    // tryWrite "returns nil if the writer is not free"; with only readers present it takes
    // the checkout and waits for them, here for its own thread's reader slot.
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(3, "tryWrite inside read { }")
      let box = ThreadSafeSingleWriter(value: 0)
      box.read { _ in _ = box.tryWrite { $0 += 1 } }
      exit(7)
    }
    expectStop(result, saying: "ThreadSafeSingleWriter:")
  }

  @Test func aProxyWriteInsideReadOnTheSameThreadStopsWithAMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(3, "proxy write inside read { }")
      let box = ThreadSafeSingleWriter(value: 0)
      let proxy = box.writer!
      box.read { _ in proxy.write += 1 }
      exit(7)
    }
    expectStop(result, saying: "ThreadSafeSingleWriter:")
  }

  /// The documented pattern: check out, send the proxy to a detached task. The task that
  /// checked out then waits its turn, which comes when the detached task ends (2 s, past
  /// the second after which a wait warns).
  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func awaitWriteAfterSendingTheCheckoutToAnotherTaskDoesNotCallItADeadlock() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "await write behind a proxy sent away")
      let box = ThreadSafeSingleWriter(value: 0)
      var proxy: ThreadSafeWriterProxy<Int>? = try await box.checkout()
      Task.detached { [proxy] in
        try? await Task.sleep(nanoseconds: 2_000_000_000)
        proxy!.write += 1
      }
      proxy = nil
      await box.write { $0 += 10 }
      precondition(box.read == 11)
      exit(7)
    }
    expectExit(result, 7)
    #expect(
      !standardError(result).contains("This is a deadlock"),
      "the warning asserts a deadlock it cannot know of: \(exitReport(result))")
  }

  @Test func marksAreClearAfterKeptProxiesWaitersAndSuccessorsSettle() async throws {
    for round in 0..<150 {
      weak var weakBox: ThreadSafeSingleWriter<Int>?
      let expected: Int
      do {
        let box = ThreadSafeSingleWriter(value: 0)
        weakBox = box
        let group = DispatchGroup()
        var held = box.writer
        // Kept proxies, released on another thread, on the serving thread, or inside the
        // deinit of a captured object; closure writes that wait; a run over 1 ms.
        DispatchQueue.global().async(group: group) {
          box.writeNext { proxy in
            // A thread of its own: on 2 cores, pool threads blocked in withWriter behind
            // this proxy would keep a pool block that releases it from running.
            group.enter()
            let kept = Locked<ThreadSafeWriterProxy<Int>?>(proxy)
            Thread.detachNewThread {
              attackSpin(UInt64(round % 5) * 300_000)
              kept.withLock {
                $0?.write += 1
                $0 = nil  // released before the group hears of it
              }
              group.leave()
            }
          }
        }
        DispatchQueue.global().async(group: group) {
          let keeper = HoldsProxyThenCallsBack(box, queueing: true)
          box.writeNext { proxy in
            keeper.proxy = proxy
            proxy.write += 1
          }
        }
        DispatchQueue.global().async(group: group) {
          for _ in 0..<50 { box.writeNext { $0.write += 1 } }
        }
        DispatchQueue.global().async(group: group) {
          box.writeNext { proxy in
            proxy.write += 1
            attackSpin(1_500_000)
          }
          box.withWriter { $0 += 1 }
        }
        DispatchQueue.global().async(group: group) {
          box.writeNext { $0.write += 1 }
          box.withWriter { $0 += 1 }
          _ = box.tryWrite { $0 += 1 }
        }
        attackSpin(UInt64(round % 3) * 200_000)
        held = nil
        _ = held
        group.wait()
        // A block lets go of what it captured just after it leaves the group: give a
        // checkout still ending a second. A mark left behind stays for good.
        _ = eventually(atMost: 60) { !box.lock.word.isCheckedOut }
        expected = box.read
        #expect(sw_uptr_load(box.lock.checkoutThread) == 0, "round \(round)")
        #expect(sw_uptr_load(box.lock.writingThread) == 0, "round \(round)")
        #expect(sw_uptr_load(box.lock.gateThread) == 0, "round \(round)")
        #expect(sw_uptr_load(box.lock.checkoutHolder) == 0, "round \(round)")
        #expect(!box.lock.word.isCheckedOut, "round \(round)")
      }
      #expect(expected >= 156, "round \(round)")
      // Blocks and threads let go of what they captured just after they signal the group.
      _ = eventually(atMost: 60) { weakBox == nil }
      #expect(weakBox == nil, "round \(round): the container outlived its calls")
    }
  }

  @Test func marksAreClearAfterCancelledCheckoutsAndQueuedAsyncWrites() async {
    for round in 0..<100 {
      let box = ThreadSafeSingleWriter(value: 0)
      var held = box.writer
      let writes = (0..<4).map { _ in Task { await box.write { $0 += 1 } } }
      let checkouts = (0..<3).map { _ in checkoutTask(box, adding: 100) }
      await waitUntil { box.pendingCount == 7 }  // every one queued
      if round % 2 == 0 { checkouts[1].cancel() }
      held = nil
      _ = held
      for write in writes { await write.value }
      var taken = 0
      for checkout in checkouts where await checkout.value { taken += 1 }
      #expect(box.read == 4 + 100 * taken, "round \(round)")
      #expect(sw_uptr_load(box.lock.checkoutThread) == 0, "round \(round)")
      #expect(sw_uptr_load(box.lock.writingThread) == 0, "round \(round)")
      #expect(sw_uptr_load(box.lock.gateThread) == 0, "round \(round)")
      #expect(sw_uptr_load(box.lock.checkoutHolder) == 0, "round \(round)")
    }
  }
}

extension ThreadSafeSingleWriterTests {
  // MARK: True warnings (Promises.md): a wait behind a proxy this thread holds

  // Another thread lets go once the warning is out, so the wait does end.

  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func withWriterBehindAProxyFromTheSameThreadWarns() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      let box = ThreadSafeSingleWriter(value: 0)
      releaseAfterAWarning(Locked(box.writer))
      box.withWriter { $0 += 1 }
      precondition(box.read == 1)
    }
    #expect(standardError(result).contains("this is a deadlock"), "\(exitReport(result))")
  }

  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func withWriterBehindAProxyKeptByAWriteNextOnTheSameThreadWarns() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      let box = ThreadSafeSingleWriter(value: 0)
      let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
      box.writeNext { proxy in kept.withLock { $0 = proxy } }
      releaseAfterAWarning(kept)
      box.withWriter { $0 += 1 }
      precondition(box.read == 1)
    }
    #expect(standardError(result).contains("this is a deadlock"), "\(exitReport(result))")
  }
}

extension ThreadSafeSingleWriterConcurrencyTests {
  // MARK: True warnings (Promises.md): a wait behind a proxy this task holds

  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func awaitWriteBehindThisTasksOwnCheckoutWarns() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      let box = ThreadSafeSingleWriter(value: 0)
      // Another thread lets go once the warning is out, so the wait does end.
      releaseAfterAWarning(Locked<ThreadSafeWriterProxy<Int>?>(try await box.checkout()))
      await box.write { $0 += 1 }
      precondition(box.read == 1)
    }
    #expect(
      standardError(result).contains("If this task still holds that proxy, this is a deadlock"),
      "\(exitReport(result))")
  }
}

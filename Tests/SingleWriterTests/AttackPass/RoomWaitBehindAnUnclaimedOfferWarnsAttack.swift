import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

// Promise "True warnings": "A blocking wait in a task behind another task's checkout ...
// warns after a second that it may starve the cooperative pool." A `checkout()` at its
// turn is handed the writer while its task still sleeps; the task needs a thread to claim
// it. A blocked `withWriter` takes such an offer back after a millisecond, but a bounded
// `writeNext` waiting for room cannot (the writes behind the checkout must wait for it):
// when every pool thread waits for room, the task never runs, and nothing is said, since
// the rule (`WriterLock.blockedWaitMayStarveHolder`) looks only at a recorded holder, and
// an offer recorded none until the task claimed it. An offer now records a holder that
// no caller is (`heldByNobodyKnown`) until the claim.

/// The wait for room outlasts the second after which it warns: real time.
@Suite(.tags(.realTime), .unlessRealTimeSkipped) struct AttackPassRoomWaitBehindAnUnclaimedOffer {
  /// A `checkout()` task that cannot run is offered the writer; another task's bounded
  /// `writeNext` then finds the backlog full and waits for room behind that offer. It
  /// must warn after a second; then the task is let run, and everything ends.
  @Test
  func aWaitForRoomBehindAnOfferItsTaskHasNotClaimedWarns() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "a bounded writeNext behind an unclaimed offer")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 2)
      var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let executor = ScheduleExecutor()
      let finished = SharedFlag()
      Task(executorPreference: executor) {
        if let proxy = try? await a.checkout() { proxy.write += 100 }
        finished.set()
      }
      coaRun(executor) { a.pendingCount == 1 }  // queued, then not run
      atkOnFreshThread { a.writeNext { $0.write += 1 } }  // X1
      held = nil  // offered to the task, which cannot run; X1 waits behind it
      _ = held
      coaAwait(60, "the offer was never made") { a.queuedWrites == 1 }
      atkOnFreshThread { a.writeNext { $0.write += 1 } }  // X2: the backlog is full
      let admitted = SharedFlag()
      Task.detached {
        a.writeNext { $0.write += 1 }  // waits for room, behind the unclaimed offer
        admitted.set()
      }
      let warned = eventually(atMost: 60) { sw_printed_error_count() != 0 }
      Thread.detachNewThread { executor.run(until: { finished.isSet }) }
      coaAwait(60, "the waiter was never admitted") { admitted.isSet }
      coaAwait(60, "the queue never drained") { a.queuedWrites == 0 && a.writer != nil }
      atkEnd(
        breakingIf: !warned || a.read != 103,
        "a bounded writeNext in a task waited for room behind a checkout offered to a task "
          + "that could not run, and said nothing (warned: \(warned), value \(a.read))")
    }
    expectNoBreak(result)
  }

  /// The hang itself: a `checkout()` queued behind a proxy held on a thread, and as many
  /// tasks as the pool has threads writing a bounded backlog in a loop. The release offers
  /// the writer to the checkout's task, which needs a pool thread to claim it; every pool
  /// thread waits for room behind it. Misuse, but it must not be silent: the waits must
  /// warn that they may starve the cooperative pool (the child then ends at its watchdog).
  @Test
  func everyPoolThreadWaitingForRoomBehindAnUnclaimedOfferIsReported() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "bounded writeNexts on every pool thread behind an unclaimed offer")
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 2)
      var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let checkout = Task {
        if let proxy = try? await a.checkout() { proxy.write += 100 }
      }
      // Polled with sleeps, which leave the pool's threads to the tasks.
      while a.pendingCount != 1 { try? await Task.sleep(nanoseconds: 1_000_000) }
      atkOnFreshThread { a.writeNext { $0.write += 1 } }  // the backlog is full
      let blockers = ProcessInfo.processInfo.activeProcessorCount
      let started = Counter()
      // Released from a thread of its own, once every blocker runs: this task may never
      // get a pool thread again.
      let proxy = Locked(held.take())
      Thread.detachNewThread {
        while started.load() != blockers { usleep(1_000) }
        proxy.withLock { $0 = nil }  // offered to the checkout's task: it needs a pool thread
      }
      for _ in 0..<blockers {
        Task {
          started.add(1)
          for _ in 0..<1_000 { a.writeNext { $0.write += 1 } }
        }
      }
      _ = await checkout.value
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }
}

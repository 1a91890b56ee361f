import Foundation
import Testing

@testable import SingleWriter

// "The backlog is visible" (`drained()` "at once if none is queued"; "a checkout held by a
// proxy with nothing queued behind it does not hold it up") after a take-back whose
// `withWriter` queued AFTER the task's `checkout()` had been offered the writer: that
// waiter's entry stays in the inbox, withdrawn, while the task holds the proxy it was
// offered again. `queuedWrites` is 0: `drainsAtOnce` goes by the counts, not by an inbox
// that still holds that dead entry.

/// A `checkout()` task held unrun is offered `a`'s writer; then a thread blocks in
/// `withWriter`, queues (its entry lands in the inbox, not in the server's batch), and
/// takes the offer back; its end offers the writer to the task again, which then runs and
/// holds its proxy until `letGo`. Returns once the task holds the proxy.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
func atkLTBTaskHoldsAProxyAfterALateTakeBack(
  _ a: ThreadSafeSingleWriter<Int>, executor: ScheduleExecutor,
  then body: @escaping @Sendable (ThreadSafeWriterProxy<Int>) async -> Void
) -> SharedFlag {
  var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
  let finished = SharedFlag()
  Task(executorPreference: executor) {
    if let proxy = try? await a.checkout() {
      proxy.write += 1
      await body(proxy)
    }
    finished.set()
  }
  coaRun(executor) { a.pendingCount == 1 }  // queued, then not run
  held = nil  // offered to the task, which cannot run; nothing else queued
  _ = held
  coaAwait(60, "the offer was never made") { a.queuedWrites == 0 && a.pendingCount == 0 }
  let blockedDone = SharedFlag()
  Thread.detachNewThread {
    a.withWriter { $0 += 10 }  // queues after 1 ms, then takes the offer back
    blockedDone.set()
  }
  coaAwait(60, "the withWriter never took the offer back") { blockedDone.isSet }
  return finished
}

@Suite(.serialized) struct AttackPassDrainAfterALateTakeBack {
  /// Another task's `drained()` while the task holds the proxy it was offered again after
  /// a late take-back, with nothing queued (`queuedWrites` 0): must return at once.
  @Test func drainedAfterALateTakeBackDoesNotWaitForTheReofferedCheckout() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "drained behind a re-offered checkout")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      let a = ThreadSafeSingleWriter(value: 0)
      let executor = ScheduleExecutor()
      let gotIt = SharedFlag()
      let letGo = SharedFlag()
      let finished = atkLTBTaskHoldsAProxyAfterALateTakeBack(a, executor: executor) { proxy in
        gotIt.set()
        while !letGo.isSet { atkSleep(0.001) }
        withExtendedLifetime(proxy) {}
      }
      // Let the task run (claim, write, then hold its proxy) on a thread of its own.
      Thread.detachNewThread { executor.run(until: { finished.isSet }) }
      coaAwait(60, "the task never got the writer") { gotIt.isSet }
      let queued = a.queuedWrites
      let inbox = coaInboxCount(a)
      let drained = SharedFlag()
      Task.detached {
        await a.drained()
        drained.set()
      }
      let start = attackNow()
      let returned = eventually(atMost: 60) { drained.isSet }
      let ms = (attackNow() - start) / 1_000_000
      letGo.set()
      coaAwait(60, "the task never ended") { finished.isSet }
      coaAwait(60, "drained() never returned after the release") { drained.isSet }
      atkEnd(
        breakingIf: !returned || a.read != 11,
        "drained() with queuedWrites \(queued) (inbox holding \(inbox) entries) was still "
          + "waiting after \(ms) ms for a proxy with nothing queued behind it; value \(a.read)")
    }
    expectNoBreak(result)
  }

  /// The same task drains while it holds that proxy, nothing queued behind it: it must
  /// return at once ("at once if none is queued"), not wait for its own proxy forever.
  @Test func aReofferedCheckoutMayDrainWithNothingBehindIt() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "a task re-offered its checkout drains, nothing queued behind it")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      let a = ThreadSafeSingleWriter(value: 0)
      let executor = ScheduleExecutor()
      let finished = atkLTBTaskHoldsAProxyAfterALateTakeBack(a, executor: executor) { proxy in
        attackErr(
          "holding the proxy: queuedWrites \(a.queuedWrites), inbox \(coaInboxCount(a))\n")
        await a.drained()  // nothing is queued: returns at once
        proxy.write += 100
      }
      Thread.detachNewThread { executor.run(until: { finished.isSet }) }
      let ended = eventually(atMost: 60) { finished.isSet }
      atkEnd(
        breakingIf: !ended,
        "a task holding the proxy it was re-offered after a take-back, with queuedWrites "
          + "\(a.queuedWrites), called drained() and was still waiting 5 s later (for itself)")
    }
    expectNoBreak(result)
  }
}

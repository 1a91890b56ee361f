import Foundation
import Testing

@testable import SingleWriter

// "A checkout is handed over": "A cancellation that wins the race leaves the queue; one
// that loses gets the proxy." `checkout()`'s doc: "a task cancelled once the writer was
// handed to it gets the proxy."
//
// Here the cancellation comes while the task holds an offer (state `offered`: it lost the
// race, `cancel()` moves nothing). A blocked `withWriter` then takes the unclaimed offer
// back, and is still in its closure when the task runs: the task's claim fails and it
// waits again for its entry, whatever its cancellation, and gets the proxy (a handler on
// that second wait let the lost cancellation win, and the task threw).

/// The state of the offer's task, if an offer is outstanding.
func atkCCOOfferState<V>(_ a: ThreadSafeSingleWriter<V>) -> TaskWaiterState? {
  a.lock.withHandOffLock { a.handOff.pointee.offer?.current }
}

@Suite(.serialized) struct AttackPassCheckoutCancelledWhileOffered {
  /// `cancelBeforeTakeBack`: cancel while the offer is outstanding (the race lost), then
  /// let a withWriter take it back; the task must still get the proxy. Without the cancel
  /// (control) it gets the proxy.
  static func run(cancel: Bool) -> Never {
    attackWatchdog(30, "a checkout cancelled while offered, then taken back")
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
    let a = ThreadSafeSingleWriter(value: 0)
    var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
    let executor = ScheduleExecutor()
    let finished = SharedFlag()
    let got = Locked<String?>(nil)
    let checkout = Task(executorPreference: executor) {
      do {
        let proxy = try await a.checkout()
        proxy.write += 1_000
        got.withLock { $0 = "checked out" }
      } catch {
        got.withLock { $0 = "threw \(type(of: error))" }
      }
      finished.set()
    }
    coaRun(executor) { a.pendingCount == 1 }  // queued, then not run
    held = nil  // offered to the task, which cannot run
    _ = held
    coaAwait(60, "the offer was never made") { atkCCOOfferState(a) == .offered }
    var stateAfterCancel: TaskWaiterState? = nil
    if cancel {
      checkout.cancel()  // loses: the writer was handed to the task already
      stateAfterCancel = atkCCOOfferState(a)
    }
    // A blocked withWriter queues after 1 ms and takes the offer back; it stays in its
    // closure until the task has run.
    let inW = SharedFlag()
    let releaseW = SharedFlag()
    let wDone = SharedFlag()
    Thread.detachNewThread {
      a.withWriter {
        $0 += 1
        inW.set()
        _ = eventually(atMost: 60) { releaseW.isSet }
      }
      wDone.set()
    }
    coaAwait(60, "the withWriter never took the offer back") { inW.isSet }
    // The task runs now, while W holds the writer in its place.
    coaRun(executor) { finished.isSet || coaFrontCheckoutWaits(a) }
    releaseW.set()
    coaAwait(60, "W never ended") { wDone.isSet }
    coaRun(executor) { finished.isSet }
    let outcome = got.withLock { $0 } ?? "nothing"
    attackErr(
      "cancel: \(cancel); task state right after cancel(): \(String(describing: stateAfterCancel)); "
        + "outcome: \(outcome); value \(a.read)\n")
    atkEnd(
      breakingIf: outcome != "checked out",
      "a checkout() cancelled while it held an unclaimed offer (state after cancel(): "
        + "\(String(describing: stateAfterCancel)), so the cancellation lost) \(outcome) after a "
        + "withWriter took the offer back; value \(a.read)")
  }

  @Test func aCheckoutCancelledWhileOfferedStillGetsTheProxyAfterATakeBack() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      AttackPassCheckoutCancelledWhileOffered.run(cancel: true)
    }
    expectNoBreak(result)
  }

  @Test func controlACheckoutNotCancelledGetsTheProxyAfterATakeBack() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      AttackPassCheckoutCancelledWhileOffered.run(cancel: false)
    }
    expectNoBreak(result)
  }
}

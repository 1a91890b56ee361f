import Foundation
import Testing

@testable import SingleWriter

// "The backlog is visible": `drained()` returns once every write queued before it has
// run, a `checkout()` once its task has the proxy: "a held proxy never holds a drain up".
// Here the writes queued before the drain are a `checkout()` C whose task cannot run and
// a blocked `withWriter` (or sync `transaction`) W, which takes C's stale offer back and
// runs in its place. W's own entry stays queued, withdrawn, between C and the drain: when
// C's task claims the writer at last, every write before the drain has run, and the
// drain must return then, not when C's proxy is released.

@Suite(.serialized) struct AttackPassAHeldProxyNeverHoldsADrainUp {
  @Test func aDrainBehindAWithWriterThatTookAnOfferBackReturnsOnceTheCheckoutHasTheProxy()
    async
  {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "drained() behind a withdrawn withWriter and a held checkout")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      atkDrainBehindAWithdrawnWaiter(transaction: false)
    }
    expectNoBreak(result)
  }

  @Test func aDrainBehindATransactionThatTookAnOfferBackReturnsOnceTheCheckoutHasTheProxy()
    async
  {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "drained() behind a withdrawn transaction and a held checkout")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      atkDrainBehindAWithdrawnWaiter(transaction: true)
    }
    expectNoBreak(result)
  }
}

/// In a child: C = `checkout()` whose task cannot run, W = a blocked `withWriter` or sync
/// `transaction`, D = `drained()`, queued in that order behind a proxy held elsewhere;
/// the release offers C the writer, W takes it back and runs; then C's task runs and
/// holds its proxy. Ends the child, broken if D waits for that proxy's release.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
func atkDrainBehindAWithdrawnWaiter(transaction: Bool) -> Never {
  let a = ThreadSafeSingleWriter(value: 0)
  var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
  let executor = ScheduleExecutor()
  let gotIt = SharedFlag()
  let letGo = SharedFlag()
  let finished = SharedFlag()
  Task(executorPreference: executor) {
    if let proxy = try? await a.checkout() {
      proxy.write += 1_000
      gotIt.set()
      while !letGo.isSet { atkSleep(0.001) }
      withExtendedLifetime(proxy) {}
    }
    finished.set()
  }
  coaRun(executor) { a.pendingCount == 1 }  // C queued, then not run
  let wDone = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    if transaction { a.transaction { $0 += 1 } } else { a.withWriter { $0 += 1 } }
    wDone.signal()
  }
  coaAwait(60, "W never queued") { coaInboxCount(a) == 2 }
  let drained = SharedFlag()
  Task.detached {
    await a.drained()
    drained.set()
  }
  coaAwait(60, "the drain never queued") { coaInboxCount(a) == 3 }
  held = nil  // offered to C, whose task cannot run: W takes it back after 1 ms
  _ = held
  wDone.wait()
  Thread.detachNewThread { executor.run(until: { finished.isSet }) }
  coaAwait(60, "C never got the writer") { gotIt.isSet }
  let returned = eventually(atMost: 60) { drained.isSet }
  let queued = a.queuedWrites
  letGo.set()
  coaAwait(60, "C never ended") { finished.isSet }
  coaAwait(60, "drained() never returned after the release") { drained.isSet }
  atkEnd(
    breakingIf: !returned,
    "drained(), queued behind C and W (which ran in C's place), still waited for C's "
      + "proxy to be released once C had it (queuedWrites \(queued))")
}

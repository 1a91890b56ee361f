import Foundation
import Testing

@testable import SingleWriter

// "The backlog is visible" against `HandOff.heldByProxy` left set by a proxy that an
// in-place `writeNext` body kept and that was released on the fast path (nothing queued,
// nobody observing), where `checkoutEnded`, which clears it, never runs. A later
// `writeNext` that found the writer busy, queued, and whose enqueue then found it free
// runs in place with `queued` set, nothing in the inbox and every arrival started: a
// stale mark let `drained()` return while that write still ran. The mark is now set only
// with `queued`, whose release always clears it.

/// Leaves `heldByProxy` set: an in-place `writeNext` body keeps its proxy, which is then
/// released with nothing queued (the fast end of a checkout).
func atkDFRLeaveHeldByProxySet(_ a: ThreadSafeSingleWriter<Int>) {
  let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
  a.writeNext { proxy in kept.withLock { $0 = proxy } }
  kept.withLock { $0 = nil }  // fast end: no queued, observed or parked bit
}

/// Runs `body` on a thread of its own while holding `a`'s hand-off lock, which is taken
/// before this returns and released when `release` is signalled.
func atkDFRHoldHandOffLock(_ a: ThreadSafeSingleWriter<Int>, until release: DispatchSemaphore) {
  let taken = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    a.lock.withHandOffLock {
      taken.signal()
      release.wait()
    }
  }
  taken.wait()
}

@Suite(.serialized) struct AttackPassDrainAfterAFastRelease {
  /// A `writeNext` finds the writer busy (a proxy held elsewhere, nothing queued), so it
  /// queues; the proxy is released before its arrival, so its enqueue takes the free
  /// writer and runs the body, which is a queued write (`queuedWrites` counted it). A
  /// `drained()` called while that body runs must wait for it ("drained() returns only
  /// after every write queued before it ran"). The race window between the failed
  /// checkout and the arrival is widened by holding the hand-off's lock.
  ///
  /// `stale`: an earlier, finished checkout left `heldByProxy` set (the break); without
  /// it (the control), the drain waits.
  @Test func drainedWaitsForAWriteWhoseEnqueueFoundTheWriterFreeAfterAKeptProxy() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      await atkDFRDrainBehindAWriteWhoseEnqueueFoundTheWriterFree(stale: true)
    }
    expectNoBreak(result)
  }

  /// The control: no earlier kept proxy; the drain waits for the body.
  @Test func drainedWaitsForAWriteWhoseEnqueueFoundTheWriterFree() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      await atkDFRDrainBehindAWriteWhoseEnqueueFoundTheWriterFree(stale: false)
    }
    expectNoBreak(result)
  }
}

func atkDFRDrainBehindAWriteWhoseEnqueueFoundTheWriterFree(stale: Bool) async -> Never {
  attackWatchdog(30, "drained behind a write whose enqueue took the free writer")
  let a = ThreadSafeSingleWriter(value: 0)
  if stale { atkDFRLeaveHeldByProxySet(a) }
  var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
  let release = DispatchSemaphore(value: 0)
  atkDFRHoldHandOffLock(a, until: release)
  let inBody = SharedFlag()
  let letGo = SharedFlag()
  let bodyEnded = SharedFlag()
  Thread.detachNewThread {
    // Busy, nothing queued: `tryCheckout` fails, and the enqueue waits for the lock.
    a.writeNext { proxy in
      inBody.set()
      while !letGo.isSet { usleep(1_000) }
      proxy.write += 1
      bodyEnded.set()
    }
  }
  usleep(300_000)  // the writeNext is blocked on the hand-off's lock
  held = nil  // the fast end: the writer is free again
  _ = held
  release.signal()
  coaAwait(60, "the queued body never ran") { inBody.isSet }
  let queuedBefore = a.queuedWrites
  let drained = SharedFlag()
  let endedWhenDrained = Locked<Bool?>(nil)
  Task.detached {
    await a.drained()
    endedWhenDrained.withLock { $0 = bodyEnded.isSet }
    drained.set()
  }
  let returnedEarly = eventually(atMost: 1) { drained.isSet }
  letGo.set()
  coaAwait(60, "the drain never returned") { drained.isSet }
  let ended = endedWhenDrained.withLock { $0 } ?? false
  atkEnd(
    breakingIf: returnedEarly || !ended,
    "drained() returned while a write queued before it was still running "
      + "(stale heldByProxy: \(stale), queuedWrites when the body ran: \(queuedBefore), "
      + "a.read now \(a.read))")
}

import Foundation
import Testing

@testable import SingleWriter

// "The backlog is visible" and "A drain behind its own proxy warns" against proxies that
// got the writer through the queue: a `checkout()` handed it at its turn, a `writeNext`
// body that kept it. The hand-off's `queued` stays set while such a proxy holds the
// writer with nothing queued behind it; `drained()` must not wait for it.

@Suite(.serialized) struct AttackPassDrainBehindAProxy {
  /// A task's `checkout()` queues behind a thread's proxy and is handed the writer; it
  /// holds its proxy, with nothing queued behind it (`queuedWrites` is 0). Another task's
  /// `drained()` must return at once ("at once if none is queued"; "a checkout held by a
  /// proxy with nothing queued behind it does not hold it up").
  @Test func drainedDoesNotWaitForACheckoutThatQueuedWithNothingBehindIt() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "drained behind a queued checkout")
      let a = ThreadSafeSingleWriter(value: 0)
      var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let gotIt = SharedFlag()
      let letGo = SharedFlag()
      let holder = Task.detached {
        let proxy = try await a.checkout()
        proxy.write += 1
        gotIt.set()
        while !letGo.isSet { try? await Task.sleep(nanoseconds: 1_000_000) }
        withExtendedLifetime(proxy) {}
      }
      coaAwait(60, "the checkout never queued") { a.pendingCount == 1 }
      held = nil  // hands the writer to the task
      _ = held
      coaAwait(60, "the task never got the writer") { gotIt.isSet }
      let queued = a.queuedWrites
      let drained = SharedFlag()
      Task.detached {
        await a.drained()
        drained.set()
      }
      let start = attackNow()
      let returned = eventually(atMost: 60) { drained.isSet }
      let ms = (attackNow() - start) / 1_000_000
      letGo.set()
      _ = try? await holder.value
      _ = eventually(atMost: 60) { drained.isSet }
      atkEnd(
        breakingIf: !returned,
        "drained() with queuedWrites \(queued) was still waiting after \(ms) ms, for a proxy "
          + "taken by a checkout() that had queued, with nothing queued behind it")
    }
    expectNoBreak(result)
  }

  /// The same task calls `drained()` itself while it holds that proxy, with nothing queued
  /// behind it: it must return at once, not wait for its own proxy forever.
  @Test func aCheckoutThatQueuedMayDrainWithNothingBehindIt() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "a task that queued for its checkout drains, nothing queued behind it")
      let a = ThreadSafeSingleWriter(value: 0)
      var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let task = Task.detached {
        let proxy = try await a.checkout()
        attackErr("checked out; queuedWrites \(a.queuedWrites)\n")
        await a.drained()  // nothing is queued: returns at once
        proxy.write += 1
      }
      coaAwait(60, "the checkout never queued") { a.pendingCount == 1 }
      held = nil
      _ = held
      _ = try? await task.value
      atkEnd(breakingIf: a.read != 1, "the task's write did not run")
    }
    expectNoBreak(result)
  }

  /// The control: a `checkout()` that finds the writer free, then `drained()`, returns.
  @Test func aCheckoutThatFoundTheWriterFreeMayDrain() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "a task that checked out at once drains")
      let a = ThreadSafeSingleWriter(value: 0)
      let task = Task.detached {
        let proxy = try await a.checkout()
        await a.drained()
        proxy.write += 1
      }
      _ = try? await task.value
      atkEnd(breakingIf: a.read != 1, "the task's write did not run")
    }
    expectNoBreak(result)
  }

  /// A `writeNext` body served by another thread keeps its proxy, with nothing queued
  /// behind it: `drained()` returns at once, as for a `checkout()` handed the writer.
  @Test func drainedDoesNotWaitForAProxyAServedBodyKept() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "drained behind a proxy a served body kept")
      let a = ThreadSafeSingleWriter(value: 0)
      var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
      writeNextFromAnotherThread(a) { proxy in
        proxy.write += 1
        kept.withLock { $0 = proxy }
      }
      coaAwait(60, "the write never queued") { a.queuedWrites == 1 }
      held = nil  // serves the write here, which keeps its proxy
      _ = held
      coaAwait(60, "the body never ran") { kept.withLock { $0 != nil } }
      let drained = SharedFlag()
      Task.detached {
        await a.drained()
        drained.set()
      }
      let returned = eventually(atMost: 60) { drained.isSet }
      kept.withLock { $0 = nil }
      _ = eventually(atMost: 60) { drained.isSet }
      atkEnd(breakingIf: !returned, "drained() waited for a proxy a served body kept")
    }
    expectNoBreak(result)
  }

  /// The other side: a `withWriter` that queued and was handed the writer is a queued
  /// write still running: `drained()` waits until its body ends.
  @Test func drainedWaitsForAWithWriterThatQueuedAndRuns() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "drained behind a running withWriter")
      let a = ThreadSafeSingleWriter(value: 0)
      var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let inBody = SharedFlag()
      let letGo = SharedFlag()
      let bodyEnded = SharedFlag()
      Thread.detachNewThread {
        a.withWriter { value in
          inBody.set()
          while !letGo.isSet { usleep(1_000) }
          value += 1
          bodyEnded.set()
        }
      }
      coaAwait(60, "the withWriter never queued") { a.queuedWrites == 1 }
      held = nil  // hands the writer to the withWriter
      _ = held
      coaAwait(60, "the withWriter never ran") { inBody.isSet }
      let drained = SharedFlag()
      let endedFirst = SharedFlag()
      Task.detached {
        await a.drained()
        if bodyEnded.isSet { endedFirst.set() }
        drained.set()
      }
      let early = eventually(atMost: 0.2) { drained.isSet }
      letGo.set()
      coaAwait(60, "drained() never returned") { drained.isSet }
      atkEnd(
        breakingIf: early || !endedFirst.isSet,
        "drained() returned while a withWriter that had queued still ran")
    }
    expectNoBreak(result)
  }
}

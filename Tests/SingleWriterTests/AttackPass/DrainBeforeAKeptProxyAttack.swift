import Foundation
import Testing

@testable import SingleWriter

// Promise "The backlog is visible": `drained()` returns once every write queued before it
// has run, and never waits for a proxy's release. A drain queued before a served body that
// keeps its proxy, or behind a `checkout()` that claims the writer, waited for that
// proxy; in the task the proxy went to, forever.

@Suite(.serialized) struct AttackPassDrainBeforeAKeptProxy {
  /// A body queued behind a held writer keeps its proxy and hands it to a task; that task
  /// called `drained()` (queued after the body, before it ran) and releases the proxy once
  /// the drain returns. The drain waited for the proxy: a silent deadlock.
  @Test func aDrainQueuedBeforeABodyThatKeepsItsProxyReturnsInTheTaskGivenTheProxy() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "a drain queued before a body that kept its proxy")
      let a = ThreadSafeSingleWriter(value: 0)
      var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let handed = Locked<ThreadSafeWriterProxy<Int>?>(nil)
      writeNextFromAnotherThread(a) { proxy in
        proxy.write += 1
        handed.withLock { $0 = proxy }  // kept: handed to the draining task
      }
      let drained = SharedFlag()
      let drainer = Task.detached {
        await a.drained()
        drained.set()
        let proxy = handed.withLock { $0.take() }
        proxy?.write += 10
      }
      coaAwait(5, "the drain never queued") { coaInboxCount(a) == 2 }
      held = nil  // serves the body, which keeps its proxy
      _ = held
      coaAwait(5, "drained() waited for the proxy the body kept, in the task it went to") {
        drained.isSet
      }
      await drainer.value
      atkEnd(breakingIf: a.read != 11, "read \(a.read)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// The same rule for a `checkout()` queued before the drain: once its task has the
  /// proxy, the drain returns, though the task holds the proxy until then.
  @Test func aDrainQueuedBehindACheckoutReturnsOnceTheCheckoutHasItsProxy() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "a drain queued behind a checkout")
      let a = ThreadSafeSingleWriter(value: 0)
      var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let drained = SharedFlag()
      let holder = Task.detached {
        let proxy = try await a.checkout()
        proxy.write += 1
        // Holds the proxy until the drain queued behind its checkout() has returned.
        while !drained.isSet { try? await Task.sleep(nanoseconds: 1_000_000) }
        proxy.write += 10
      }
      coaAwait(5, "the checkout never queued") { a.pendingCount == 1 }
      let drainer = Task.detached {
        await a.drained()
        drained.set()
      }
      coaAwait(5, "the drain never queued") { coaInboxCount(a) == 2 }
      held = nil  // hands the writer to the checkout
      _ = held
      coaAwait(5, "drained() waited for the proxy of the checkout() queued before it") {
        drained.isSet
      }
      _ = try? await holder.value
      await drainer.value
      atkEnd(breakingIf: a.read != 11, "read \(a.read)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// The other side: a write queued between the body and the drain still holds the drain
  /// until the kept proxy's release runs it.
  @Test func aDrainBehindAWriteQueuedAfterTheKeptBodyWaitsForThatWrite() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "a drain behind a write behind a kept proxy")
      let a = ThreadSafeSingleWriter(value: 0)
      var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
      writeNextFromAnotherThread(a) { proxy in kept.withLock { $0 = proxy } }
      writeNextFromAnotherThread(a) { $0.write += 1 }
      let drained = SharedFlag()
      let drainer = Task.detached {
        await a.drained()
        drained.set()
      }
      coaAwait(5, "the drain never queued") { coaInboxCount(a) == 3 }
      held = nil
      _ = held
      coaAwait(5, "the body never ran") { kept.withLock { $0 != nil } }
      let early = eventually(atMost: 0.2) { drained.isSet }
      kept.withLock { $0 = nil }  // runs the write, then the drain
      await drainer.value
      atkEnd(breakingIf: early || a.read != 1, "early \(early), read \(a.read)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }
}

import Foundation
import Testing

@testable import SingleWriter

// Promise "True warnings": a warning says "this same task" or "this same thread" only
// when it is; no false silence when the same task waits behind its own proxy.

/// Each waits behind a proxy past the second after which a wait warns: real time.
@Suite(.tags(.realTime), .unlessRealTimeSkipped) struct AttackPassWarnings {
  /// Found by the attack pass: a task calls writeNext on a free container; its thread runs its
  /// body, then serves a plain thread's queued body, which keeps its proxy and hands it to
  /// that plain thread. `lend` records the serving thread's task as the holder, so the
  /// task's later `await write` warns that "this same task" took the checkout: it never did.
  /// Failed every run before its fix (debug and release).
  @Test func aTaskThatServedAnotherThreadsKeptProxyIsNotToldItHoldsIt() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "false same-task warning")
      let a = ThreadSafeSingleWriter(value: 0)
      let released = await Task.detached {
        let released = atkServeAKeptBodyOfAnotherThread(a)
        // This task's thread served the other body, which kept its proxy.
        await a.write { $0 += 1 }
        return released
      }.value
      released.wait()
      exit(0)
    }
    #expect(!standardError(result).contains("this same task"), "\(exitReport(result))")
  }

  /// The thread variant (pre-existing, kept in `lend`): a plain thread that served another
  /// thread's kept body is told by withWriter that "this same thread or task holds" it.
  /// Failed every run before its fix (debug and release).
  @Test func aThreadThatServedAnotherThreadsKeptProxyIsNotToldItHoldsIt() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "false same-thread warning")
      let a = ThreadSafeSingleWriter(value: 0)
      _ = atkServeAKeptBodyOfAnotherThread(a)
      a.withWriter { $0 += 1 }
      exit(0)
    }
    #expect(!standardError(result).contains("this same thread"), "\(exitReport(result))")
  }

  /// No false silence: a task that holds a proxy from `writer`, then awaits write on the
  /// same container (its own deadlock), is warned, whichever thread it resumed on.
  @Test func aTaskBehindItsOwnWriterAfterHoppingThreadsIsWarned() async {
    let result = await #expect(
      processExitsWith: atkExpect(.failure), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(3, "a task behind its own writer")
      let a = ThreadSafeSingleWriter(value: 0)
      await Task.detached {
        let proxy = a.writer!
        for _ in 0..<20 { try? await Task.sleep(nanoseconds: 100_000) }  // hop threads
        await a.write { $0 += 1 }
        withExtendedLifetime(proxy) {}
      }.value
    }
    #expect(standardError(result).contains("this same task"), "\(exitReport(result))")
  }

  /// A task that held a proxy, released it, and then waits behind another thread's proxy
  /// is not told that it holds it (checkoutHolder must not be stale).
  @Test func aTaskThatReleasedItsProxyIsNotToldItHoldsTheNextOne() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "stale task id")
      let a = ThreadSafeSingleWriter(value: 0)
      await Task.detached {
        for _ in 0..<100 {
          let proxy = try! await a.checkout()
          proxy.write += 1
        }
        do {
          let proxy = a.writer!
          proxy.write += 1
        }
        holdWriterElsewhere(a, for: 1.8)
        await a.write { $0 += 1 }
      }.value
      exit(0)
    }
    #expect(!standardError(result).contains("same task"), "\(exitReport(result))")
  }
}

/// Runs a body on this thread that lets a plain thread queue a body behind it; that body
/// keeps its proxy, so this thread, serving it, lends the proxy to the plain thread, which
/// holds it for 2.5 s. Returns a semaphore signalled once the plain thread has let go.
func atkServeAKeptBodyOfAnotherThread(_ a: ThreadSafeSingleWriter<Int>) -> DispatchSemaphore {
  let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
  let bodyStarted = DispatchSemaphore(value: 0)
  let otherQueued = DispatchSemaphore(value: 0)
  let released = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    bodyStarted.wait()
    a.writeNext { proxy in kept.withLock { $0 = proxy } }
    otherQueued.signal()
    while kept.withLock({ $0 }) == nil { usleep(1_000) }
    atkSleep(2.5)
    kept.withLock { $0 = nil }
    released.signal()
  }
  a.writeNext { proxy in
    bodyStarted.signal()
    otherQueued.wait()  // the plain thread's body is queued behind this one
    proxy.write += 1
  }
  return released
}

import Foundation
import Testing

@testable import SingleWriter

// Promise "True warnings": a warning says "this same task" or "this same thread" only
// when it is; no false silence when the same task waits behind its own proxy.

@Suite struct AttackPassWarnings {
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
      let kept = AtkBox<ThreadSafeWriterProxy<Int>?>(nil)
      let bodyStarted = DispatchSemaphore(value: 0)
      let otherQueued = DispatchSemaphore(value: 0)
      let released = DispatchSemaphore(value: 0)
      // The plain thread: queues a body that keeps its proxy, holds it 2.5 s, releases.
      Thread.detachNewThread {
        bodyStarted.wait()
        a.writeNext { proxy in kept.with { $0 = proxy } }
        otherQueued.signal()
        while kept.with({ $0 }) == nil { usleep(1_000) }
        atkSleep(2.5)
        kept.with { $0 = nil }
        released.signal()
      }
      await Task.detached {
        a.writeNext { proxy in
          bodyStarted.signal()
          otherQueued.wait()  // the plain thread's body is queued behind this one
          proxy.write += 1
        }
        // This task's thread served the other body, which kept its proxy.
        await a.write { $0 += 1 }
      }.value
      released.wait()
      exit(0)
    }
    let standardError = atkStderr(result)
    #expect(!standardError.contains("this same task"), "\(exitReport(result))")
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
      let kept = AtkBox<ThreadSafeWriterProxy<Int>?>(nil)
      let bodyStarted = DispatchSemaphore(value: 0)
      let otherQueued = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        bodyStarted.wait()
        a.writeNext { proxy in kept.with { $0 = proxy } }
        otherQueued.signal()
        while kept.with({ $0 }) == nil { usleep(1_000) }
        atkSleep(2.5)
        kept.with { $0 = nil }
      }
      a.writeNext { proxy in
        bodyStarted.signal()
        otherQueued.wait()
        proxy.write += 1
      }
      a.withWriter { $0 += 1 }
      exit(0)
    }
    #expect(!atkStderr(result).contains("this same thread"), "\(exitReport(result))")
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
    #expect(atkStderr(result).contains("this same task"), "\(exitReport(result))")
  }

  /// A task that held a proxy, released it, and then waits behind another thread's proxy
  /// is not told that it holds it (checkoutTask must not be stale).
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
        let taken = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
          let held = a.writer!
          taken.signal()
          atkSleep(1.8)
          withExtendedLifetime(held) {}
        }
        taken.wait()
        await a.write { $0 += 1 }
      }.value
      exit(0)
    }
    #expect(!atkStderr(result).contains("same task"), "\(exitReport(result))")
  }
}

import Foundation
import SingleWriter
import Testing

// The promise: a wait for the writer behind a proxy that the waiting thread or task holds
// itself warns after a second, and a warning names the holder truly. A proxy taken in a
// task is that task's wherever it resumes: a thread says nothing about which task holds it.

/// Each waits past the second after which a wait warns: real time.
@Suite(.tags(.realTime), .unlessRealTimeSkipped) struct DeadlockWarningTests {
  /// A main-actor task holds `writer`, then awaits a write: the proxy carries the task
  /// that took it, wherever either runs. Another thread releases the proxy once the
  /// warning is out, so the child ends.
  @Test func aMainActorTaskAwaitingAWriteBehindItsOwnWriterIsWarned() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      attackWatchdog(20, "main-actor task behind its own writer")
      let box = ThreadSafeSingleWriter(value: 0)
      await Task { @MainActor in
        releaseAfterAWarning(Locked(box.writer))
        await box.write { $0 += 1 }
      }.value
      precondition(box.read == 1)
    }
    #expect(
      standardError(result).contains("this same task"), "\(exitReport(result))")
  }

  /// The same from a pool task, with `checkout()`'s proxy.
  @Test func aPoolTaskAwaitingAWriteBehindItsOwnCheckoutIsWarned() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      attackWatchdog(20, "pool task behind its own checkout")
      let box = ThreadSafeSingleWriter(value: 0)
      await Task.detached {
        releaseAfterAWarning(Locked<ThreadSafeWriterProxy<Int>?>(try! await box.checkout()))
        await box.write { $0 += 1 }
      }.value
      precondition(box.read == 1)
    }
    #expect(standardError(result).contains("this same task"), "\(exitReport(result))")
  }

  /// `drained()` in a task that holds a proxy it took, with a write queued behind it,
  /// waits for that proxy like any wait, and is warned: the task may have sent the proxy
  /// away (see `drainedAfterSendingTheCheckoutToAnotherTaskWaits`). Another thread
  /// releases it once the warning is out, so the child ends.
  @Test func drainedBehindThisTasksOwnProxyIsWarned() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      attackWatchdog(20, "drained behind its own proxy")
      let box = ThreadSafeSingleWriter(value: 0)
      await Task.detached {
        let held = Locked(box.writer)
        box.writeNext { $0.write += 1 }
        releaseAfterAWarning(held)
        await box.drained()
        precondition(box.read == 1)
      }.value
    }
    #expect(standardError(result).contains("`drained()` has waited 1 s"), "\(exitReport(result))")
    #expect(standardError(result).contains("this same task"), "\(exitReport(result))")
  }

  /// Other pool tasks wait behind one task's `writer`, held across a sleep. With two pool
  /// threads, some of them run on the thread where it was taken; none of them took it, so
  /// none is told "this same task" took it. (They may be told that it was taken on their
  /// thread, which is true.)
  @Test func otherTasksOnTheHoldersThreadAreNotToldTheyTookIt() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      attackWatchdog(30, "other tasks behind a task's writer")
      let box = ThreadSafeSingleWriter(value: 0)
      let holding = DispatchSemaphore(value: 0)
      let holder = Task.detached {
        let held = box.writer
        holding.signal()
        try? await Task.sleep(nanoseconds: 1_600_000_000)
        withExtendedLifetime(held) {}
      }
      holding.wait()
      await withTaskGroup(of: Void.self) { group in
        for _ in 0..<8 {
          group.addTask { await box.write { $0 += 1 } }
        }
      }
      await holder.value
      precondition(box.read == 8)
    }
    #expect(!standardError(result).contains("same task"), "\(exitReport(result))")
  }
}

import Foundation
import Testing

@testable import SingleWriter

// "The backlog is visible" against the gap in `drained()` between its look at the queue
// and its enqueue. `drained()` loads `queuedHint` (a write waits), asks `drainsAtOnce`
// under the hand-off's lock (no: a write waits), and only then, in `waitForTurn`, queues
// its marker under the lock again. Nothing re-checks `queued` there: if, in between, the
// write it followed ran, the queue emptied and the writer was freed, and someone took a
// proxy with `writer` (nothing queued behind it), the marker's arrival sets `queued` behind
// that proxy and the drain waits for its release. The doc of `drained()`: "Only queued
// writes count: a checkout held by a proxy with nothing queued behind it does not hold it
// up"; Promises.md: "drained() returns only after every write queued before it ran ...".
// The write it followed has run; the proxy holds it up.
//
// The gap is a few microseconds of straight-line code (ThreadSafeSingleWriter+Concurrency
// .swift, `drained()`: the `drainsAtOnce` lock, `LockOrderCheck.willWait`, then
// `waitForTurn` -> `enqueue` -> `arrive`). A preemption there is a legal schedule; the
// test holds the task there deterministically with the one piece of user code that runs in
// that gap in debug builds: the `RaceDetector.onRace` handler, called from
// `LockOrderCheck.willWait` when the drain's task holds another container's checkout taken
// in the opposite order. The handler only stands in for the preemption. Whether the marker
// queues is now decided under the lock of its arrival.

#if DEBUG
  @Suite(.serialized) struct AttackPassDrainDecidedAtItsArrival {
    /// A thread holds `a`'s proxy with one write `w` queued behind it. A task (holding
    /// `b`'s checkout, so that its `a.drained()` completes a lock-order inversion and calls
    /// the handler) calls `a.drained()`: it sees `w` queued and decides to wait its turn.
    /// Held in the handler, the task is past that decision and before its enqueue. The
    /// proxy is released (this thread runs `w` and frees the writer), and another thread
    /// takes `a`'s writer with `writer`: nothing is queued (`queuedWrites` 0, `queued`
    /// clear). The task goes on. Its `drained()` must return, since `w` ran and nothing else
    /// is queued; it waits instead for the fresh proxy.
    @Test func drainedCalledWhileAWriteWaitedIsNotHeldUpByAProxyTakenAfterThatWriteRan() async {
      let log = atkChildLog()
      let result = await #expect(processExitsWith: atkExpect(.success)) { [log = log as String] in
        atkSendStandardError(to: log)
        attackWatchdog(30, "drained() held between its look and its enqueue")
        coaOnThread {
          let a = ThreadSafeSingleWriter(value: 0)
          let b = ThreadSafeSingleWriter(value: 0)
          // The order a, then b, recorded on a thread of its own.
          coaOnThread { a.withWriter { _ in b.withWriter { $0 += 1 } } }
          let inHandler = DispatchSemaphore(value: 0)
          let resume = DispatchSemaphore(value: 0)
          let reports = Counter()
          RaceDetector.onRace = { report in
            guard report.kind == .lockOrderInversion, reports.add(1) == 1 else { return }
            inHandler.signal()
            resume.wait()
          }
          var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
          a.writeNext { $0.write += 10 }  // w, queued behind `held`
          if a.queuedWrites != 1 {
            attackErr("SETUP: w is not queued (queuedWrites \(a.queuedWrites))\n")
            exit(4)
          }
          let returned = SharedFlag()
          let drain = Task.detached {
            let bProxy = b.writer()
            precondition(bProxy != nil, "b's writer was not free")
            await a.drained()
            returned.set()
            withExtendedLifetime(bProxy) {}
          }
          if inHandler.wait(timeout: .now() + 60) == .timedOut {
            attackErr(
              "SETUP: drained() called no handler (reports \(reports.load()), returned "
                + "\(returned.isSet))\n")
            exit(4)
          }
          // The task has decided not to return at once, and has not queued yet.
          held = nil  // not its holder: owes nothing, but serves w and frees the writer
          _ = held
          if a.read != 10 || a.queuedWrites != 0 {
            attackErr("SETUP: w did not run (value \(a.read), queued \(a.queuedWrites))\n")
            exit(4)
          }
          var fresh: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)  // nothing queued
          let queuedBefore = a.lock.withHandOffLock { a.handOff.pointee.queued }
          let queuedWritesBefore = a.queuedWrites
          resume.signal()
          let start = attackNow()
          let ok = eventually(atMost: 60) { returned.isSet }
          let ms = (attackNow() - start) / 1_000_000
          let inbox = coaInboxCount(a)
          let queuedAfter = a.lock.withHandOffLock { a.handOff.pointee.queued }
          fresh = nil  // lets the drain go, if it waits behind it
          _ = fresh
          blockUntilDone(drain)
          atkEnd(
            breakingIf: !ok,
            "drained(), called while one write waited, still waited \(ms) ms after that write "
              + "ran, behind a proxy taken afterwards with nothing queued (before it went on: "
              + "queued \(queuedBefore), queuedWrites \(queuedWritesBefore); then: queued "
              + "\(queuedAfter), inbox \(inbox), its own marker); it returned only when that "
              + "proxy was released")
        }
      }
      let childLog = atkTakeChildLog(log)
      #expect(result != nil, "child: \(childLog.prefix(4000))")
      #expect(!childLog.contains("BREAK"), "child: \(childLog.prefix(4000))")
    }
  }
#endif

import Dispatch
import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

// Promise "Lock order reported" against who holds a checkout through a proxy: the lock
// graph knows a holder by the identity the hand-off records (a task's number, a thread's
// serial, never reused), holds through every way a proxy is kept, and orders an
// `await write` that suspends after the task's checkouts only.

#if DEBUG
  /// In a child: counts the lock-order reports from now on, writing each to standard error.
  func atkCountLockReports() -> Counter {
    let reports = Counter()
    RaceDetector.onRace = { report in
      guard report.kind != .race else { return }
      reports.add(1)
      attackErr("REPORT: \(report)\n")
    }
    return reports
  }

  @Suite struct AttackPassLockOrderHolderIdentity {
    // MARK: A reused address is not a holder

    /// A plain thread takes A's writer and exits while the proxy lives on; a new thread
    /// given its address takes B, never having held A. Only B-then-A ever happens after:
    /// no report. An A/B inversion was reported while the graph keyed holders by address.
    @Test func aThreadGivenTheAddressOfAnExitedThreadThatTookAProxyHoldsNothing() async {
      let result = await #expect(
        processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
      ) {
        attackWatchdog(30, "a reused thread address in the lock graph")
        let reports = atkCountLockReports()
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        let (held, stale) = atkWriterFromAnExitedThread(a)
        let took = atkOnAThreadGiven(theID: stale) { () -> Bool in
          b.withWriter { $0 += 1 }
          return true
        }
        guard took != nil else { atkNothingReused() }
        held.withLock { $0 = nil }
        atkOnFreshThread { b.withWriter { _ in a.withWriter { $0 += 1 } } }
        atkEnd(
          breakingIf: reports.load() != 0,
          "\(reports.load()) lock-order reports for one order (B then A) and a stale holder")
      }
      expectNoBreak(result)
      expectExit(result, 0)
    }

    /// The same with tasks: a task takes A's writer and ends while its proxy lives on; a new
    /// task given its address takes B.
    @Test func aTaskGivenTheAddressOfAnEndedTaskThatTookAProxyHoldsNothing() async {
      let result = await #expect(
        processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
      ) {
        attackWatchdog(30, "a reused task address in the lock graph")
        let reports = atkCountLockReports()
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        let (held, stale) = await atkWriterFromAnEndedTask(a)
        // Returns an `Int`, as the task that ended did a pair: a task of about the same
        // size, so that its memory is likely to be the ended task's.
        let took = await atkInATaskGiven(theAddress: stale) { () -> Int in
          b.withWriter { $0 += 1 }
          return 1
        }
        guard took != nil else { atkNothingReused() }
        held.withLock { $0 = nil }
        atkOnFreshThread { b.withWriter { _ in a.withWriter { $0 += 1 } } }
        atkEnd(
          breakingIf: reports.load() != 0,
          "\(reports.load()) lock-order reports for one order (B then A) and a stale holder")
      }
      expectNoBreak(result)
      expectExit(result, 0)
    }

    // MARK: A proxy kept from the caller's own writeNext body

    /// A thread holds A through a proxy kept from its own `writeNext` body (run in place)
    /// and waits for B; later another thread holds B and takes A: one report, as for a
    /// proxy from `writer`. None was made: the kept proxy was missing from the graph.
    @Test func aProxyKeptFromTheCallersOwnBodyOnAThreadIsAHold() async {
      let result = await #expect(
        processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
      ) {
        attackWatchdog(30, "a kept in-place proxy on a thread")
        let reports = atkCountLockReports()
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        _ = atkOnFreshThread { () -> Int in
          let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
          a.writeNext { proxy in kept.withLock { $0 = proxy } }  // runs here, keeps it
          precondition(kept.withLock { $0 != nil }, "the body did not run in place")
          b.withWriter { $0 += 1 }  // holds A, waits for B
          kept.withLock { $0 = nil }
          return 0
        }
        atkOnFreshThread { b.withWriter { _ in a.withWriter { $0 += 1 } } }
        atkEnd(
          breakingIf: reports.load() != 1,
          "\(reports.load()) lock-order reports for A then B (A held by a kept proxy), then "
            + "B then A; expected 1")
      }
      expectNoBreak(result)
      expectExit(result, 0)
    }

    /// The same in a task, which waits for B with `await write`.
    @Test func aProxyKeptFromTheCallersOwnBodyInATaskIsAHold() async {
      let result = await #expect(
        processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
      ) {
        attackWatchdog(30, "a kept in-place proxy in a task")
        let reports = atkCountLockReports()
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        await Task.detached {
          let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
          a.writeNext { proxy in kept.withLock { $0 = proxy } }
          precondition(kept.withLock { $0 != nil }, "the body did not run in place")
          await b.write { $0 += 1 }  // holds A across the wait for B
          kept.withLock { $0 = nil }
        }.value
        atkOnFreshThread { b.withWriter { _ in a.withWriter { $0 += 1 } } }
        atkEnd(
          breakingIf: reports.load() != 1,
          "\(reports.load()) lock-order reports for A then B (A held by a kept proxy), then "
            + "B then A; expected 1")
      }
      expectNoBreak(result)
      expectExit(result, 0)
    }
  }
#endif

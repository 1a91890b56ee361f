import Dispatch
import Foundation
import SingleWriter
import SingleWriterCompanions
import Testing

// Promise "Lock order reported" against who holds a lock across a suspension: an
// `await write` started by a `Task.immediate` inside `ReentrantMutex.with { }` is ordered
// after its task's checkouts only (the rest of the holder-identity attacks are in
// SingleWriterTests).

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
    // MARK: An await write started inline under a mutex

    /// A `Task.immediate` inside `ReentrantMutex.with { }` whose `await write` suspends:
    /// the mutex is let go while the task waits, so mutex-then-container is no order, and a
    /// later container-then-mutex is no inversion.
    @Test func anAwaitWriteThatSuspendsInsideAnInlineTaskHoldsNoLockOfItsThread() async {
      let result = await #expect(
        processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
      ) {
        attackWatchdog(30, "an inline await write under a mutex")
        guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else { exit(0) }
        let reports = atkCountLockReports()
        let mutex = ReentrantMutex()
        let c = ThreadSafeSingleWriter(value: 0)
        var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(c)
        let wrote = SharedFlag()
        _ = atkOnFreshThread { () -> Int in
          mutex.with {
            _ = Task.immediate {
              await c.write { $0 += 1 }  // the writer is held elsewhere: suspends
              wrote.set()
            }
          }
          return 0
        }
        held = nil  // serves the write
        _ = held
        coaAwait(5, "the await write never ran") { wrote.isSet }
        atkOnFreshThread { c.withWriter { _ in mutex.with {} } }
        atkEnd(
          breakingIf: reports.load() != 0,
          "\(reports.load()) lock-order reports: a suspended await write was ordered after "
            + "a mutex its thread let go")
      }
      expectNoBreak(result)
      expectExit(result, 0)
    }
  }
#endif

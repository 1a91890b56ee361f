import Observation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// Serving: a long drain taken over, an observer that writes back, a waiter overtaken
/// only for a bounded time, and the spin budget.
extension ScheduleScenarioTests {
  /// Another thread's writes keep arriving, each slow, while a slow queued write runs:
  /// past about a millisecond of serving, the next thread to queue takes serving over,
  /// or, if the batch in progress outlasts its millisecond of waiting, withdraws and the
  /// server serves on (that timed wait firing is expected). Once every call has returned,
  /// every write has run, once and in order.
  @Test func aLongDrainIsTakenOver() {
    Scheduler.check(pct: 1_000, exhaustive: 5_000, tick: 10_000, allowsTimeouts: true) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      journal.enter("A.0")
      container.writeNext {
        Self.write($0, journal, "Q.1")
        Self.spin(nanoseconds: 1_500_000, yielding: true)
      }
      return Scheduler.Run(
        threads: [
          { Self.writeAndRelease(held, journal) },
          {
            for event in ["B.1", "B.2", "B.3", "B.4"] {
              container.writeNext {
                Self.write($0, journal, event)
                Self.spin(nanoseconds: 500_000, yielding: true)
              }
              Self.spin(nanoseconds: 500_000, yielding: true)
            }
          },
        ],
        check: {
          Self.finalCheck(container, journal, ran: ["A.0", "Q.1", "B.1", "B.2", "B.3", "B.4"])
        })
    }
  }

  /// An observer that writes back: `withObservationTracking` on `trackedRead` calls its
  /// `onChange` on the thread that ends the first checkout that wrote, while that thread
  /// still holds the checkout, and the handler queues a write. It must run once, after
  /// the write that triggered it, with the other threads' writes racing it.
  @Test func anObserverWritesBack() {
    guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
    Scheduler.check(pct: 2_000, exhaustive: 10_000, allowsTimeouts: true) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      withObservationTracking {
        _ = container.trackedRead
      } onChange: {
        Self.queue(container, journal, "O.1")
      }
      return Scheduler.Run(
        threads: [
          {
            container.withWriter {
              journal.enter("A.1")
              $0 += 1
              journal.leave()
            }
          },
          { Self.queue(container, journal, "B.1") },
        ],
        check: {
          if let first = journal.events.first, journal.events.firstIndex(of: "O.1") == 0 {
            return "the observer's write ran before any write it observed: \(first)"
          }
          return Self.finalCheck(container, journal, ran: ["A.1", "B.1", "O.1"])
        })
    }
  }

  /// A `withWriter` against a thread that keeps taking the writer with `tryWrite`, and
  /// gives up its time slice while it holds it (so that the waiter runs and finds the
  /// writer busy, as it would on another core). The waiter may be overtaken while it
  /// spins and sleeps, but after about a millisecond it queues, and is then served
  /// before the other thread's next write: it must get the writer long before the other
  /// thread gives up.
  @Test func aWaiterIsOvertakenOnlyForABoundedTime() {
    Scheduler.check(pct: 200, exhaustive: 200, allowsTimeouts: true) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      return Scheduler.Run(
        threads: [
          {
            container.withWriter {
              journal.enter("W.1")
              $0 += 1
              journal.leave()
            }
          },
          {
            // About 400 writes a millisecond, in virtual time.
            // A failed attempt yields too: a loop that never yields, with one thread
            // running at a time, would starve anyone.
            for _ in 0..<2_000 where !journal.events.contains("W.1") {
              let wrote: Void? = container.tryWrite {
                $0 += 1
                sw_yield_thread()
              }
              if wrote == nil { sw_yield_thread() }
            }
            if !journal.events.contains("W.1") { journal.notes.append("the waiter starved") }
          },
        ],
        check: {
          if let failure = journal.check(ranExactly: ["W.1"]) { return failure }
          return Self.isFreeAndEmpty(container)
        })
    }
  }

  /// A `withWriter` that gets the writer while spinning lengthens the next waiter's spin
  /// by one round; one that has to park shortens it by one; one that finds the writer
  /// free leaves it. Every schedule must end with one of those three. A holder that lets
  /// go at once must let some schedules win while spinning; one that holds on for 20 µs
  /// of virtual time, as a core of its own would, must make some park.
  @Test(arguments: [(UInt64(0), UInt32(4)), (UInt64(20_000), UInt32(2))])
  func theSpinBudgetFollowsHowTheLastWaitEnded(hold: UInt64, somewhere: UInt32) {
    let start: UInt32 = 3
    var seen: Set<UInt32> = []
    Scheduler.check(pct: 500, exhaustive: 2_000) {
      let container = Self.makeContainer()
      sw_store_release(container.lock.spinRounds, start)
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            Self.spin(nanoseconds: hold, yielding: true)
            journal.leave()
            held.strong = nil
          },
          {
            container.withWriter {
              journal.enter("B.1")
              $0 += 1
              journal.leave()
            }
          },
        ],
        check: {
          let rounds = sw_load_acquire(container.lock.spinRounds)
          seen.insert(rounds)
          if !(start - 1...start + 1).contains(rounds) {
            return "spin budget \(rounds) after one wait from \(start)"
          }
          return Self.finalCheck(container, journal, ran: ["A.0", "B.1"])
        })
    }
    #expect(seen.contains(somewhere), "no schedule left the spin budget at \(somewhere)")
  }
}

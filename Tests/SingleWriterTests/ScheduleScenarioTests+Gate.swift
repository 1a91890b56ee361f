import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// The priority gate, and the marks a thread leaves while it holds the checkout.
extension ScheduleScenarioTests {
  /// Two `withWriter` calls and a `writeNext`, with the priority gate wanted: whoever
  /// holds the writer for a closure write or to serve the queue holds the gate, and a
  /// thread that would sleep for the writer sleeps on the gate instead. Every schedule must
  /// finish, with the gate released on the thread that took it (debug builds check that)
  /// and open at the end; and some schedules must reach a sleep on the gate.
  @Test func aWithWriterSleepsOnTheGateOfAClosureWrite() {
    var reached = 0
    Scheduler.check(pct: 1_000, exhaustive: 5_000) {
      let container = Self.makeGatedContainer()
      let journal = ScheduleJournal()
      return Scheduler.Run(
        threads: [
          {
            container.withWriter {
              journal.enter("A.1")
              $0 += 1
              Self.spin(nanoseconds: 2_000, yielding: true)
              journal.leave()
            }
          },
          {
            container.withWriter {
              journal.enter("B.1")
              $0 += 1
              journal.leave()
            }
          },
          { Self.queue(container, journal, "C.1") },
        ],
        check: {
          if sw_load_relaxed(container.lock.gateSleeps) != 0 { reached += 1 }
          return Self.finalCheck(container, journal, ran: ["A.1", "B.1", "C.1"])
        })
    }
    #expect(reached > 0, "no schedule slept on the gate")
  }

  /// A `withWriter` that waits over a millisecond behind a proxy queues behind two
  /// bodies; the release then serves the first holding the gate, and the queued
  /// `withWriter` sleeps on the gate or on its own flag. Either way the server releases
  /// the gate before it grants the writer, and the waiter runs; a kept proxy released on
  /// a third thread ends it all.
  @Test func aQueuedWithWriterAndAKeptProxyPassTheGate() {
    var reached = 0
    // Virtual time moves 10 µs per scheduling point, so that the milliseconds pass in a
    // few hundred points.
    Scheduler.check(pct: 300, exhaustive: 1_000, tick: 10_000, allowsTimeouts: true) {
      let container = Self.makeGatedContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let kept = ScheduleBox<ThreadSafeWriterProxy<Int>>()
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            container.writeNext { proxy in
              Self.write(proxy, journal, "A.1")
              Self.spin(nanoseconds: 3_000_000, yielding: true)  // the waiter polls meanwhile
            }
            container.writeNext { proxy in kept.strong = proxy }
            Self.spin(nanoseconds: 1_500_000, yielding: true)  // past the waiter's millisecond
            journal.leave()
            held.strong = nil  // serves A.1, holding the gate, then keeps a proxy
          },
          {
            container.withWriter {
              journal.enter("B.1")
              $0 += 1
              journal.leave()
            }
          },
          {
            while kept.strong == nil { sw_yield_thread() }
            Self.write(kept.strong!, journal, "C.1")
            kept.strong = nil
          },
        ],
        check: {
          if sw_load_relaxed(container.lock.gateSleeps) != 0 { reached += 1 }
          return Self.finalCheck(container, journal, ran: ["A.0", "A.1", "B.1", "C.1"])
        })
    }
    #expect(reached > 0, "no schedule slept on the gate")
  }

  /// A queued body keeps its proxy and a third thread drops it at once, racing the
  /// gated server's end of the lend, while a `withWriter` waits: the gate must pass
  /// whether the proxy is kept, retired or handed back. The waiter's grant also clears a
  /// handed-back mark, so the mark itself is the subject of
  /// `aCheckoutHandedBackLeavesNoMarkBehind`, which has no waiter.
  @Test func aKeptProxyDroppedElsewhereRacesAGatedServer() {
    Scheduler.check(pct: 500, exhaustive: 2_000, tick: 10_000, allowsTimeouts: true) {
      let container = Self.makeGatedContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let kept = ScheduleBox<ThreadSafeWriterProxy<Int>>()
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            Self.queue(container, journal, "A.1")
            container.writeNext { proxy in kept.strong = proxy }  // last: the run ends with it
            journal.leave()
            held.strong = nil
            if Self.leftMarked(container) {
              journal.notes.append("the release left this thread marked as the writer")
            }
          },
          {
            container.withWriter {
              journal.enter("B.1")
              $0 += 1
              journal.leave()
            }
          },
          {
            while kept.strong == nil { sw_yield_thread() }
            kept.strong = nil
          },
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.0", "A.1", "B.1"]) })
    }
  }

  /// A queued body that runs last keeps its proxy, and another thread drops its own
  /// reference at once: when that goes first, the serving thread's is the last, and the
  /// checkout is handed back to its run, which marks the thread as the closure's for the
  /// release. The run then ends; the mark must end with it. Left set, a later `withWriter`
  /// on that thread that found the writer busy stopped with the self-deadlock message
  /// (chaos mode: 2 runs in 40).
  @Test func aCheckoutHandedBackLeavesNoMarkBehind() {
    Scheduler.check(pct: 1_000, exhaustive: 5_000) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let kept = ScheduleBox<ThreadSafeWriterProxy<Int>>()
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            Self.queue(container, journal, "A.1")
            container.writeNext { proxy in kept.strong = proxy }
            journal.leave()
            held.strong = nil  // serves A.1, then the body that keeps its proxy
            if Self.leftMarked(container) {
              journal.notes.append("the run left this thread marked as the writer's closure")
            }
          },
          {
            while kept.strong == nil { sw_yield_thread() }
            kept.strong = nil
          },
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.0", "A.1"]) })
    }
  }

  /// A closure write holds the gate while a `withWriter` sleeps on it; as the write ends
  /// and opens the gate, the sleeper takes it on its way through, and a `tryWrite` that
  /// gets the writer just then finds the gate busy and writes without it, as it must:
  /// the gate is a hint, never a wait for a closure write. The window is two scheduling
  /// points long: every schedule with one preemption is run.
  @Test func aClosureWriteGoesWithoutAGateThatASleeperPassesThrough() {
    var wrote = 0
    Scheduler.check(
      pct: 500, exhaustive: 5_000, preemptions: 1,
      reaches: [.gateSleep, .gateCloseBusy, .gateOpen]
    ) {
      let container = Self.makeGatedContainer()
      let journal = ScheduleJournal()
      let tried = ScheduleBox<ScheduleJournal>()
      let ended = ScheduleScenarioSelfTests.Words()
      return Scheduler.Run(
        threads: [
          {
            container.withWriter {
              journal.enter("A.1")
              $0 += 1
              Self.spin(nanoseconds: 1_000, yielding: true)  // the sleeper arrives meanwhile
              journal.leave()
            }
            sw_store_release(ended.flag, 1)
            sw_wake_all(ended.flag)
          },
          {
            container.withWriter {
              journal.enter("B.1")
              $0 += 1
              journal.leave()
            }
          },
          {
            while sw_load_acquire(ended.flag) == 0 { sw_wait(ended.flag, 0) }
            let done: Void? = container.tryWrite {
              journal.enter("C.1")
              $0 += 1
              journal.leave()
            }
            if done != nil { tried.strong = journal }
          },
        ],
        check: {
          if tried.strong != nil { wrote += 1 }
          let expected = ["A.1", "B.1"] + (tried.strong == nil ? [] : ["C.1"])
          return Self.finalCheck(container, journal, ran: expected)
        })
    }
    #expect(wrote > 0, "no schedule's tryWrite got the writer")
  }
}

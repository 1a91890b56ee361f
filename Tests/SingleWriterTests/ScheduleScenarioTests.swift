import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// The hand-off's races, run under the deterministic scheduler over many interleavings
/// (build with `-Xcc -DSINGLEWRITER_SCHED`; skipped otherwise). Each scenario starts from
/// a fresh container per schedule and checks, once all its threads have ended, that the
/// writer is free with nothing queued, that every write ran exactly once and in order per
/// producer, that no write ran inside another checkout, and that no timed wait fired on
/// the plain clock (a jump of the clock to a deadline ends waits by design).
///
/// The async paths run their tasks on a `ScheduleExecutor`, whose jobs run on one of the
/// schedule's threads (ScheduleScenarioTests+Async.swift).
///
/// Each scenario names the rows of the tables in "How the hand-off works" that it must
/// reach (`TransitionRow`, counted in debug builds); once the suite has run, it prints
/// which scenarios reached each row, and fails if it ran whole and a row was not reached.
@Suite(
  .enabled(if: Scheduler.isAvailable, "needs -Xcc -DSINGLEWRITER_SCHED"), .serialized,
  .rowCoverage(enforced: true))
struct ScheduleScenarioTests {
  typealias Container = ThreadSafeSingleWriter<Int>

  /// A new container whose words carry their names in deadlock reports.
  static func makeContainer() -> Container {
    let container = Container(value: 0)
    let lock = container.lock
    sw_sched_name_word(lock.state, "the state word")
    sw_sched_name_word(lock.parkSequence, "the park sequence")
    sw_sched_name_word(lock.handOffLock, "the hand-off lock")
    sw_sched_name_word(lock.lendWord, "the lend word")
    sw_sched_name_word(container.hub.mutex, "the change hub's mutex")
    sw_sched_name_word(lock.gate, "the priority gate")
    return container
  }

  /// A new container whose closure writes take the priority gate, and whose `withWriter`
  /// parks at once (its spin budget is nothing: spinning hands the baton on every pause).
  static func makeGatedContainer() -> Container {
    let container = makeContainer()
    sw_store_release(container.lock.spinRounds, 0)
    container.lock.wantGate()
    return container
  }

  /// Whether the calling thread is still marked as running a closure of `container`: once
  /// its calls have returned, a mark left would make its next `withWriter` take itself
  /// for the holder.
  static func leftMarked(_ container: Container) -> Bool {
    sw_uptr_load(container.lock.checkoutThread) == scoped(sw_current_thread())
  }

  /// Nothing queued, the gate open, and the writer can be checked out (and is released
  /// again).
  /// The thread that held the writer from the setup (`journal` entered for it): leaves
  /// its journal entry, writes once through the proxy and releases it, ending the checkout
  /// (and so serving what queued behind it) on this thread.
  @Sendable static func writeAndRelease(
    _ held: ScheduleBox<ThreadSafeWriterProxy<Int>>, _ journal: ScheduleJournal
  ) {
    var proxy = held.strong.take()
    journal.leave()
    proxy?.write += 1
    proxy = nil
  }

  static func isFreeAndEmpty(_ container: Container) -> String? {
    let pending = container.pendingCount
    if pending != 0 { return "\(pending) write(s) still queued" }
    if let failure = gateIdleFailure(container) { return failure }
    guard let writer = container.writer else { return "the writer is still checked out" }
    withExtendedLifetime(writer) {}
    return nil
  }

  static func finalCheck(
    _ container: Container, _ journal: ScheduleJournal, ran expected: [String]
  ) -> String? {
    if let failure = journal.check(ranExactly: expected) { return failure }
    if let failure = isFreeAndEmpty(container) { return failure }
    let value = container.read
    return value == expected.count ? nil : "value \(value), not \(expected.count)"
  }

  /// A write through `proxy` recorded as `event`.
  static func write(
    _ proxy: ThreadSafeWriterProxy<Int>, _ journal: ScheduleJournal, _ event: String
  ) {
    journal.enter(event)
    proxy.write += 1
    journal.leave()
  }

  /// Busy for `nanoseconds` of virtual time, which each clock read moves on. With
  /// `yielding`, other threads run meanwhile, as they would on other cores.
  static func spin(nanoseconds: UInt64, yielding: Bool = false) {
    let start = sw_monotonic_ns()
    while sw_monotonic_ns() &- start < nanoseconds {
      if yielding { sw_yield_thread() }
    }
  }

  /// A `writeNext` recorded as `event` when its body runs.
  static func queue(_ container: Container, _ journal: ScheduleJournal, _ event: String) {
    container.writeNext { write($0, journal, event) }
  }

  /// A held proxy whose release ends a checkout with a write already queued, racing two
  /// more `writeNext` calls: a release racing an enqueue. The proxy is released right
  /// after a write through it, as `held?.write += 1; held = nil` does, which release
  /// builds once compiled into a release before the write was stored.
  @Test func releaseRacesEnqueue() {
    Scheduler.check(pct: 2_000, exhaustive: 10_000) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      journal.enter("A.0")
      Self.queue(container, journal, "Q.1")
      return Scheduler.Run(
        threads: [
          { Self.writeAndRelease(held, journal) },
          {
            Self.queue(container, journal, "B.1")
            Self.queue(container, journal, "B.2")
          },
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.0", "Q.1", "B.1", "B.2"]) })
    }
  }

  /// `withWriter`, two `writeNext` and a `tryWrite` from three threads. Timeouts are
  /// allowed: a `withWriter` woken and beaten to the writer sleeps out its millisecond,
  /// by design.
  @Test func closureWritesRaceQueuedWrites() {
    Scheduler.check(pct: 2_000, exhaustive: 10_000, allowsTimeouts: true) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let tried = ScheduleBox<ScheduleJournal>()
      return Scheduler.Run(
        threads: [
          {
            container.withWriter {
              journal.enter("A.1")
              $0 += 1
              journal.leave()
            }
          },
          {
            Self.queue(container, journal, "B.1")
            Self.queue(container, journal, "B.2")
          },
          {
            let done: Void? = container.tryWrite {
              journal.enter("C.1")
              $0 += 1
              journal.leave()
            }
            if done != nil { tried.strong = journal }
          },
        ],
        check: {
          let expected = ["A.1", "B.1", "B.2"] + (tried.strong == nil ? [] : ["C.1"])
          return Self.finalCheck(container, journal, ran: expected)
        })
    }
  }

  /// A `withWriter` that parks (its spin budget adapted down to nothing: spinning hands
  /// the baton to the holder at every pause, so it would never park before the release)
  /// while the holder releases. Whatever the interleaving, and with a spurious wake-up
  /// among them, the release must wake it: a timed wait that fires is a lost wake-up.
  @Test func parkedWithWriterIsWokenByTheRelease() {
    Scheduler.check(pct: 2_000, exhaustive: 10_000) {
      let container = Self.makeContainer()
      sw_store_release(container.lock.spinRounds, 0)
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
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
        check: { Self.finalCheck(container, journal, ran: ["A.0", "B.1"]) })
    }
  }

  /// A `writeNext` body leaves a weak reference to its proxy, which another thread makes
  /// strong (and drops) while the lend ends, and a third thread queues behind it. The
  /// proxy is then kept or retired; either way the checkout must end and the queue run.
  @Test func weakProxyMadeStrongWhileItsLendEnds() {
    Scheduler.check(pct: 2_000, exhaustive: 10_000) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let box = ScheduleBox<ThreadSafeWriterProxy<Int>>()
      return Scheduler.Run(
        threads: [
          {
            container.writeNext {
              Self.write($0, journal, "A.1")
              box.weak = $0
            }
          },
          {
            // Made strong and dropped without an access: a retired proxy stops the program.
            if let proxy = box.weak { withExtendedLifetime(proxy) { sw_yield_thread() } }
          },
          { Self.queue(container, journal, "C.1") },
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.1", "C.1"]) })
    }
  }

  /// Another thread makes a lent proxy strong while the lend's body runs, then writes
  /// through it just as the lend ends (its timed wait lets the lender run on). That
  /// write waits for the lend to be resolved; with unfair yields, the writer keeps the
  /// CPU while it waits, as a high-priority thread would on one core, so a wait that
  /// only spins never ends (a livelock): it must spin briefly, then sleep.
  @Test func aWriteWaitingForALendToBeResolvedSleeps() {
    Scheduler.check(pct: 2_000, exhaustive: 10_000, unfairYields: true, allowsTimeouts: true) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let box = ScheduleBox<ThreadSafeWriterProxy<Int>>()
      let bodyEnded = ScheduleBox<ScheduleJournal>()
      let never = ScheduleScenarioSelfTests.Words()
      let wrote = ScheduleBox<ScheduleJournal>()
      return Scheduler.Run(
        threads: [
          {
            container.writeNext {
              Self.write($0, journal, "A.1")
              box.weak = $0
              sw_yield_thread()  // a scheduling point: the other thread may take it now
              bodyEnded.strong = journal
            }
          },
          {
            // Made strong before the body ended, the proxy is kept, so writing is allowed.
            guard let proxy = box.weak, bodyEnded.strong == nil else { return }
            _ = sw_wait_for(never.flag, 0, 100)  // runnable again one step later
            Self.write(proxy, journal, "B.1")
            wrote.strong = journal
          },
        ],
        check: {
          let expected = ["A.1"] + (wrote.strong == nil ? [] : ["B.1"])
          return Self.finalCheck(container, journal, ran: expected)
        })
    }
  }

  /// A queued write keeps its proxy, and another thread releases it while the thread
  /// that ran it is still draining the queue, with a third thread queueing more.
  @Test func proxyReleasedOnAnotherThreadDuringADrain() {
    Scheduler.check(pct: 2_000, exhaustive: 10_000) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let kept = ScheduleBox<ThreadSafeWriterProxy<Int>>()
      journal.enter("A.0")
      container.writeNext {
        // Its checkout lasts until the other thread releases the proxy.
        journal.enter("Q.1")
        $0.write += 1
        kept.strong = $0
      }
      Self.queue(container, journal, "Q.2")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            journal.leave()
            held.strong = nil
          },
          {
            while kept.strong == nil { sw_yield_thread() }
            journal.leave()
            kept.strong = nil
          },
          { Self.queue(container, journal, "C.1") },
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.0", "Q.1", "Q.2", "C.1"]) })
    }
  }

  /// Two producers queue behind a held proxy while it is released.
  @Test func twoProducersQueueBehindARelease() {
    Scheduler.check(pct: 2_000, exhaustive: 10_000) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            journal.leave()
            held.strong = nil
          },
          {
            Self.queue(container, journal, "B.1")
            Self.queue(container, journal, "B.2")
          },
          {
            Self.queue(container, journal, "C.1")
            Self.queue(container, journal, "C.2")
          },
        ],
        check: {
          Self.finalCheck(container, journal, ran: ["A.0", "B.1", "B.2", "C.1", "C.2"])
        })
    }
  }

  /// Writes that queued bodies queue run before the release that started the queue
  /// returns, however long the bodies take: only writes from other threads go to a
  /// helper thread after about a millisecond of serving. A body that takes longer than
  /// that (in virtual time) queues a nested write. One thread only: another thread's
  /// writes in the queue would let a helper take over, as documented.
  @Test func nestedWritesRunBeforeTheReleaseReturns() {
    Scheduler.check(pct: 200, exhaustive: 1_000, tick: 10_000) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      journal.enter("A.0")
      container.writeNext {
        Self.write($0, journal, "Q.1")
        Self.spin(nanoseconds: 2_000_000)
        Self.queue(container, journal, "Q.2")
      }
      return Scheduler.Run(
        threads: [
          {
            Self.writeAndRelease(held, journal)
            if !journal.events.contains("Q.2") {
              journal.notes.append("the release returned before the nested write ran")
            }
          }
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.0", "Q.1", "Q.2"]) })
    }
  }

  /// "`writer` is nil while writes are queued": a held proxy is released with a write
  /// queued, a second `writeNext` returns, and a newcomer asks for the writer. The
  /// design before the hand-off's state machine cleared `writer|queued` before it looked
  /// at the inbox, and a newcomer could take the checkout in between, ahead of the
  /// queued write; `queued` now changes only under the hand-off's lock.
  @Test func newcomerNeverTakesTheWriterWhileWritesAreQueued() {
    Scheduler.check(pct: 2_000, exhaustive: 10_000) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let returned = ScheduleBox<ScheduleJournal>()
      let took = ScheduleBox<ScheduleJournal>()
      journal.enter("A.0")
      Self.queue(container, journal, "Q.1")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            journal.leave()
            held.strong = nil
          },
          {
            Self.queue(container, journal, "B.1")
            returned.strong = journal
          },
          {
            // Only a `writeNext` that returned before this call began is known to be
            // queued ahead of it; one that returns after may have queued behind it.
            let queuedBefore = returned.strong != nil
            guard let writer = container.writer else { return }
            took.strong = journal
            if queuedBefore, !journal.events.contains("B.1") {
              journal.notes.append("a newcomer took the writer while B.1 was queued")
            }
            Self.write(writer, journal, "C.1")
          },
        ],
        check: {
          let expected = ["A.0", "Q.1", "B.1"] + (took.strong == nil ? [] : ["C.1"])
          return Self.finalCheck(container, journal, ran: expected)
        })
    }
  }
}

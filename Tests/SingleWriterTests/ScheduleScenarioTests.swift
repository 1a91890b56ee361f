import Dispatch
import Observation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// The hand-off's races, run under the deterministic scheduler over many interleavings
/// (build with `-Xcc -DSINGLEWRITER_SCHED`; skipped otherwise). Each scenario starts from
/// a fresh container per schedule and checks, once all its threads have ended, that the
/// writer is free with nothing queued, that every write ran exactly once and in order per
/// producer, that no write ran inside another checkout, and that no timed wait fired.
///
/// The async paths (`await write`, `checkout()`, `changes()` and observers that consume
/// them) run on Swift's executor, which the scheduler cannot drive: they are not here.
@Suite(.enabled(if: Scheduler.isAvailable, "needs -Xcc -DSINGLEWRITER_SCHED"), .serialized)
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
          {
            var proxy = held.strong.take()
            journal.leave()
            proxy?.write += 1
            proxy = nil
          },
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
            var proxy = held.strong.take()
            journal.leave()
            proxy?.write += 1
            proxy = nil
            if !journal.events.contains("Q.2") {
              journal.notes.append("the release returned before the nested write ran")
            }
          }
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.0", "Q.1", "Q.2"]) })
    }
  }

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
          {
            var proxy = held.strong.take()
            journal.leave()
            proxy?.write += 1
            proxy = nil
          },
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

/// The scheduler's own checks, on hand-written protocols whose bugs are known: a
/// scenario that cannot fail would prove nothing.
@Suite(.enabled(if: Scheduler.isAvailable, "needs -Xcc -DSINGLEWRITER_SCHED"), .serialized)
struct ScheduleScenarioSelfTests {
  /// Words for the threads of one schedule; never freed, since a failed schedule's
  /// threads stay blocked on them.
  final class Words: @unchecked Sendable {
    // Sendable: only touched through the C atomics.
    let flag = UnsafeMutablePointer<sw_atomic_u32>.allocate(capacity: 1)
    let sequence = UnsafeMutablePointer<sw_atomic_u32>.allocate(capacity: 1)
    init() {
      flag.initialize(to: sw_atomic_u32())
      sequence.initialize(to: sw_atomic_u32())
    }
  }

  /// An event: the setter raises the flag, bumps the sequence and wakes; the waiter
  /// sleeps on the sequence while the flag is down. Read in the wrong order (flag, then
  /// sequence), a set in between is missed and the waiter sleeps forever.
  static func event(sequenceFirst: Bool) -> Scheduler.Run {
    let words = Words()
    sw_sched_name_word(words.sequence, "the event's sequence")
    return Scheduler.Run(
      threads: [
        {
          while true {
            var sequence = sequenceFirst ? sw_load_acquire(words.sequence) : 0
            if sw_load_acquire(words.flag) != 0 { return }
            if !sequenceFirst { sequence = sw_load_acquire(words.sequence) }
            sw_wait(words.sequence, sequence)
          }
        },
        {
          sw_store_release(words.flag, 1)
          sw_fetch_add(words.sequence, 1)
          sw_wake_all(words.sequence)
        },
      ],
      check: { nil })
  }

  @Test func aMissedWakeUpIsADeadlockFoundByBothSearches() {
    for strategy in [Scheduler.Strategy.pct(depth: 3), .exhaustive(preemptions: 2)] {
      let outcome = Scheduler.explore(strategy, limit: 1_000, spuriousWakes: 0) {
        Self.event(sequenceFirst: false)
      }
      #expect(outcome.failure?.contains("deadlock") == true, "\(strategy)")
      #expect(
        outcome.failure?.contains("thread 0 waits on the event's sequence") == true,
        "\(outcome.failure ?? "")")
      let fixed = Scheduler.explore(strategy, limit: 1_000) { Self.event(sequenceFirst: true) }
      #expect(fixed.failure == nil, "\(strategy): \(fixed.failure ?? "")")
    }
    let exhaustive = Scheduler.explore(.exhaustive(preemptions: 2), limit: 100_000) {
      Self.event(sequenceFirst: true)
    }
    #expect(exhaustive.exhausted)
  }

  @Test func aSpinThatNeverEndsIsALivelock() {
    let outcome = Scheduler.explore(.pct(depth: 2), limit: 1) {
      let words = Words()
      return Scheduler.Run(
        threads: [{ while sw_load_relaxed(words.flag) == 0 { sw_yield_cpu() } }],
        check: { nil })
    }
    #expect(outcome.failure?.contains("livelock") == true)
  }

  /// A thread that blocks outside the scheduler keeps the baton: the watchdog reports it.
  @Test func aWaitThatBypassesTheSchedulerIsAHang() {
    let outcome = Scheduler.explore(.pct(depth: 2), limit: 1, watchdogSeconds: 1) {
      let never = DispatchSemaphore(value: 0)
      return Scheduler.Run(threads: [{ never.wait() }], check: { nil })
    }
    #expect(outcome.failure?.contains("hang") == true)
  }

  /// A wait nobody ends fires at its deadline, in virtual time, and is counted.
  @Test func timedWaitsFireInVirtualTime() {
    let outcome = Scheduler.explore(.exhaustive(preemptions: 2), limit: 10, spuriousWakes: 0) {
      let words = Words()
      let elapsed = ScheduleBox<ScheduleJournal>()
      return Scheduler.Run(
        threads: [
          {
            let start = sw_monotonic_ns()
            let woken = sw_wait_for(words.sequence, 0, 5_000_000_000)
            if !woken, sw_monotonic_ns() &- start >= 5_000_000_000 {
              elapsed.strong = ScheduleJournal()
            }
          }
        ],
        check: { elapsed.strong == nil ? "the wait did not time out after 5 s" : nil })
    }
    #expect(outcome.failure?.contains("1 timed wait(s) fired") == true)
  }
}

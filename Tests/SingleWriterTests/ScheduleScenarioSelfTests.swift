import Dispatch
import SingleWriterAtomics
import Testing

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

  /// An offer racing a withdrawal, as a server's hand-over races its successor's: the
  /// taker waits up to 1 ms for the offer, then withdraws; the offerer works for 50 µs,
  /// then offers with a compare-and-exchange, and leaves it to the taker if that succeeds.
  /// A taker that withdraws with a load and then a store misses an offer made between
  /// them, and each side believes the other took it.
  static func offer(withdrawingWithCAS: Bool) -> Scheduler.Run {
    let words = Words()  // the flag: 0 open, 1 offered, 2 withdrawn
    let taken = ScheduleBox<ScheduleJournal>()
    let withdrew = ScheduleBox<ScheduleJournal>()
    return Scheduler.Run(
      threads: [
        {
          let deadline = sw_monotonic_ns() &+ 1_000_000
          while sw_load_acquire(words.flag) == 0 {
            let now = sw_monotonic_ns()
            if now < deadline {
              _ = sw_wait_for(words.flag, 0, Int64(deadline &- now))
              continue
            }
            var expected: UInt32 = 0
            if withdrawingWithCAS {
              if sw_cas(words.flag, &expected, 2) { withdrew.strong = ScheduleJournal() }
            } else if sw_load_acquire(words.flag) == 0 {
              sw_store_release(words.flag, 2)
              withdrew.strong = ScheduleJournal()
            }
            return
          }
        },
        {
          ScheduleScenarioTests.spin(nanoseconds: 50_000, yielding: true)
          var expected: UInt32 = 0
          if sw_cas(words.flag, &expected, 1) {
            taken.strong = ScheduleJournal()
            sw_wake_all(words.flag)
          }
        },
      ],
      check: {
        taken.strong != nil && withdrew.strong != nil
          ? "offered and withdrawn: both sides believe the other took it" : nil
      })
  }

  /// The taker's deadline is a millisecond away, twenty times the offerer's work, and no
  /// preemption lets it pass while the taker sleeps: only a jump of the clock to it makes
  /// the two deadlines meet. Both searches find the load-then-store withdrawal with one
  /// jump, neither without, and the compare-and-exchange holds.
  @Test func aJumpToTheNextDeadlineLetsTwoDeadlinesMeet() {
    for strategy in [Scheduler.Strategy.pct(depth: 3), .exhaustive(preemptions: 2)] {
      let found = Scheduler.explore(strategy, limit: 2_000, tick: 10_000, allowsTimeouts: true) {
        Self.offer(withdrawingWithCAS: false)
      }
      #expect(found.failure?.contains("both sides") == true, "\(strategy): not found")
      print("\(strategy): the load-then-store withdrawal found in \(found.schedules) schedules")
      let plain = Scheduler.explore(
        strategy, limit: 2_000, deadlineJumps: 0, tick: 10_000, allowsTimeouts: true
      ) { Self.offer(withdrawingWithCAS: false) }
      #expect(plain.failure == nil, "\(strategy) without jumps: \(plain.failure ?? "")")
      let fixed = Scheduler.explore(strategy, limit: 2_000, tick: 10_000, allowsTimeouts: true) {
        Self.offer(withdrawingWithCAS: true)
      }
      #expect(fixed.failure == nil, "\(strategy): \(fixed.failure ?? "")")
    }
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

import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// Runs scenarios under the C layer's deterministic scheduler (sw_sched.h), which exists
/// only in builds with `-Xcc -DSINGLEWRITER_SCHED`; `sw_sched_available()` says so.
///
/// Only registered threads are scheduled: a task runs under the scheduler when its jobs
/// run on one of them, through a `ScheduleExecutor`.
enum Scheduler {
  static var isAvailable: Bool { sw_sched_available() }

  enum Strategy: CustomStringConvertible {
    /// PCT with `depth - 1` priority change points.
    case pct(depth: Int32)
    /// Every schedule with at most `preemptions` preemptions.
    case exhaustive(preemptions: Int32)

    var description: String {
      switch self {
      case .pct(let depth): "PCT depth \(depth)"
      case .exhaustive(let preemptions): "exhaustive, \(preemptions) preemptions"
      }
    }
  }

  /// One schedule's work: the bodies of its threads, and the check of what they left,
  /// which returns a failure message or `nil`.
  struct Run {
    var threads: [@Sendable () -> Void]
    var check: () -> String?
  }

  struct Outcome {
    /// Schedules run, the failing one included.
    var schedules: Int
    /// The first failure, with the schedule that produced it.
    var failure: String?
    /// The exhaustive search ran every schedule within its bound.
    var exhausted: Bool
    /// Schedules in which the C layer started a thread of its own (none does today).
    var spawning = 0
  }

  /// CI's budgets are multiplied by SINGLEWRITER_SCHED_SCALE, for longer runs by hand.
  static var scale: Int {
    ProcessInfo.processInfo.environment["SINGLEWRITER_SCHED_SCALE"].flatMap(Int.init) ?? 1
  }

  /// PCT's depth, 3 unless SINGLEWRITER_SCHED_PCT_DEPTH says otherwise: a bug that
  /// needs more ordering constraints needs a deeper search.
  static var pctDepth: Int32 {
    ProcessInfo.processInfo.environment["SINGLEWRITER_SCHED_PCT_DEPTH"].flatMap(Int32.init) ?? 3
  }

  /// PCT's seed for a whole search, SINGLEWRITER_SCHED_SEARCH_SEED, so that searches
  /// with other seeds can be run by hand.
  static var searchSeed: UInt64 {
    ProcessInfo.processInfo.environment["SINGLEWRITER_SCHED_SEARCH_SEED"].flatMap(UInt64.init)
      ?? 1
  }

  /// Runs a fresh `make()` under each schedule until one fails, `limit` schedules have
  /// run, or the exhaustive search is over. Virtual time moves `tick` nanoseconds per
  /// scheduling point; a schedule with no scheduling point for `watchdogSeconds` of real
  /// time has a thread blocked outside the scheduler, and fails; `unfairYields` lets a
  /// spinning thread keep running (see `sw_sched_explorer_set_unfair_yields`). Up to
  /// `deadlineJumps` times per schedule the search may jump the clock to the earliest
  /// deadline a blocked thread waits for (see `sw_sched_explorer_set_jumps`), so that a
  /// wait that gives up can race the thread about to end it. Timed waits that fire count
  /// as failures unless `allowsTimeouts`, or the schedule jumped: in these short scenarios
  /// nobody holds the writer long, so one that fires on the plain clock means a wake-up
  /// was lost.
  static func explore(
    _ strategy: Strategy, seed: UInt64 = 1, limit: Int, spuriousWakes: Int32 = 1,
    deadlineJumps: Int32 = 1, tick: UInt64 = 100, watchdogSeconds: Int32 = 30,
    unfairYields: Bool = false, allowsTimeouts: Bool = false, _ make: () -> Run
  ) -> Outcome {
    let explorer: OpaquePointer
    switch strategy {
    case .pct(let depth):
      explorer = sw_sched_explorer_new(Int32(SW_SCHED_PCT), depth, seed)!
    case .exhaustive(let preemptions):
      explorer = sw_sched_explorer_new(Int32(SW_SCHED_EXHAUSTIVE), preemptions, seed)!
    }
    sw_sched_explorer_configure(explorer, tick, 200_000, spuriousWakes, watchdogSeconds)
    sw_sched_explorer_set_unfair_yields(explorer, unfairYields)
    sw_sched_explorer_set_jumps(explorer, deadlineJumps)
    var schedules = 0
    var spawning = 0
    while true {
      let run = make()
      let bodies = Unmanaged.passRetained(Bodies(run.threads))
      let ended = sw_sched_run_one(
        explorer, Int32(run.threads.count),
        { context, index in
          Unmanaged<Bodies>.fromOpaque(context!).takeUnretainedValue().list[Int(index)]()
        }, bodies.toOpaque())
      schedules += 1
      if sw_sched_threads(explorer) > run.threads.count { spawning += 1 }
      let schedule = String(cString: sw_sched_describe(explorer))
      guard ended else {
        // The schedule's threads never return: leak what they use (and `explorer`).
        let failure = String(cString: sw_sched_failure(explorer))
        return Outcome(schedules: schedules, failure: "\(schedule): \(failure)", exhausted: false)
      }
      bodies.release()
      var failure = run.check()
      let timeouts = sw_sched_timeouts(explorer)
      if failure == nil, !allowsTimeouts, timeouts != 0, sw_sched_jumps(explorer) == 0 {
        failure = "\(timeouts) timed wait(s) fired: a wake-up was lost"
      }
      if let failure {
        sw_sched_explorer_free(explorer)
        return Outcome(schedules: schedules, failure: "\(schedule): \(failure)", exhausted: false)
      }
      if schedules >= limit {
        sw_sched_explorer_free(explorer)
        return Outcome(schedules: schedules, failure: nil, exhausted: false, spawning: spawning)
      }
      if !sw_sched_next(explorer) {
        sw_sched_explorer_free(explorer)
        return Outcome(schedules: schedules, failure: nil, exhausted: true, spawning: spawning)
      }
    }
  }

  /// Explores with both strategies (the exhaustive one within `preemptions`), and records
  /// the first failure of each as an issue:
  /// both run even when the first fails, so that each one's reach shows in the log.
  /// Where rows are counted (debug builds), records the rows of the hand-off's tables the
  /// two searches reached (see `RowCoverage`), and an issue for each of `reaches` that
  /// neither did.
  static func check(
    pct: Int, exhaustive: Int, preemptions: Int32 = 2, spuriousWakes: Int32 = 1,
    deadlineJumps: Int32 = 1,
    tick: UInt64 = 100, unfairYields: Bool = false, allowsTimeouts: Bool = false,
    reaches: [TransitionRow] = [], sourceLocation: SourceLocation = #_sourceLocation,
    _ make: () -> Run
  ) {
    let before = RowCoverage.snapshot()
    let searches: [(Strategy, Int)] = [
      (.pct(depth: pctDepth), pct * scale),
      (.exhaustive(preemptions: preemptions), exhaustive * scale),
    ]
    for (strategy, limit) in searches where limit > 0 {
      let outcome = explore(
        strategy, seed: searchSeed, limit: limit, spuriousWakes: spuriousWakes,
        deadlineJumps: deadlineJumps, tick: tick, unfairYields: unfairYields,
        allowsTimeouts: allowsTimeouts,
        make)
      // One line per search, so that CI's log shows how much of each was covered.
      print(
        "\(sourceLocation.fileID):\(sourceLocation.line) \(strategy): \(outcome.schedules)"
          + " schedules\(outcome.exhausted ? ", all within the bound" : "")"
          + (outcome.spawning == 0 ? "" : ", \(outcome.spawning) with a helper thread")
          + (outcome.failure == nil ? "" : ", failed"))
      if let failure = outcome.failure {
        Issue.record(
          "\(strategy), after \(outcome.schedules) schedules: \(failure)",
          sourceLocation: sourceLocation)
      }
    }
    guard RowCoverage.isCounting else { return }
    let reached = RowCoverage.reached(since: before)
    let name = Test.current?.name ?? "\(sourceLocation.fileID):\(sourceLocation.line)"
    RowCoverage.shared.record(name, reached)
    for row in reaches where !reached.contains(row) {
      Issue.record("no schedule reached \(row)", sourceLocation: sourceLocation)
    }
  }

  private final class Bodies: @unchecked Sendable {
    // Sendable: never changed after init.
    let list: [@Sendable () -> Void]
    init(_ list: [@Sendable () -> Void]) { self.list = list }
  }
}

/// What a scenario's threads record. Not locked: the scheduler runs one registered thread
/// at a time, and its hand-offs go through a mutex, which orders these accesses.
final class ScheduleJournal: @unchecked Sendable {
  var events: [String] = []
  /// Checkouts held now, counted by the scenarios' bodies; more than one is a failure.
  var holders = 0
  var overlaps = 0
  var notes: [String] = []

  func enter(_ event: String) {
    holders += 1
    if holders > 1 { overlaps += 1 }
    events.append(event)
  }

  func leave() { holders -= 1 }

  /// `nil` if every event in `expected` happened exactly once and the events of each
  /// producer (the prefix before a dot) came in the order given.
  func check(ranExactly expected: [String]) -> String? {
    if overlaps != 0 { return "a write ran while another checkout was held: \(events)" }
    for event in expected where events.filter({ $0 == event }).count != 1 {
      return "\(event) did not run exactly once: \(events)"
    }
    if events.count != expected.count { return "unexpected writes: \(events)" }
    func producer(_ event: String) -> Substring { event.prefix { $0 != "." } }
    for name in Set(expected.map(producer)) {
      let want = expected.filter { producer($0) == name }
      let got = events.filter { producer($0) == name }
      if want != got { return "\(name)'s writes out of order: \(got)" }
    }
    return notes.isEmpty ? nil : notes.joined(separator: "; ")
  }
}

/// Somewhere for one thread to leave a reference for another.
final class ScheduleBox<Object: AnyObject>: @unchecked Sendable {
  // Sendable: the scheduler orders every access, as for ScheduleJournal.
  var strong: Object?
  weak var weak: Object?
  init(_ object: Object? = nil) { strong = object }
}

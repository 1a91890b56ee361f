// One sample: `tasks` tasks on the default pool use one container until a stop flag, set
// by the main thread (not a pool thread) after the sample's length.

import BenchmarkSupport
import Dispatch
import Foundation
import Synchronization

/// Set once by the main thread; every task checks it once per use.
final class StopFlag: Sendable {
  private let flag = Atomic(false)
  @inline(__always) var isSet: Bool { flag.load(ordering: .relaxed) }
  func set() { flag.store(true, ordering: .relaxed) }
}

/// What one sample did.
struct Sample {
  /// Uses the tasks completed, and the uses the container counted.
  let uses: Int
  let counted: Int
  /// From the first task's first use to the last task's last.
  let seconds: Double
  /// The part of `seconds` during which every task was running: from the last task's first
  /// use to the first task's last.
  let overlap: Double
  /// Tasks that completed no use.
  let idleTasks: Int
  /// The flight log's counts: fetches, the most in flight at once, writes made during one.
  let refreshes: Int
  let maxInFlight: Int
  let staleWrites: Int
  /// `checkout()` calls, or awaits of the actor's fetch in flight.
  let refreshWaitCount: Int
  let latencies = LatencyHistogram()
  let refreshWaits = LatencyHistogram()
  let writeWaits = LatencyHistogram()

  var usesPerSecond: Double { Double(uses) / seconds }
  var lost: Int { uses - counted }
  /// Every task ran during at least half of the sample and completed a use.
  func isValid(minOverlap: Double) -> Bool { idleTasks == 0 && overlap >= minOverlap }
  /// Nothing lost, no use with the old token, one fetch at a time.
  var isCorrect: Bool { lost == 0 && staleWrites == 0 && maxInFlight <= 1 }
}

/// `tasks` tasks each use the container until the stop flag, timing each use, and yield
/// after each, as a request handler that awaits anything else would: so that all of them
/// get to run on the pool's threads, however many there are.
func runSample<W: Workload>(
  _: W.Type, tasks: Int, milliseconds: Double, terms: TokenTerms
) -> Sample {
  let log = FlightLog()
  let workload = W(terms, log)
  let stop = StopFlag()
  let records = (0..<tasks).map { _ in TaskRecord() }
  let done = DispatchGroup()
  for record in records {
    done.enter()
    Task.detached {
      record.start = now()
      while !stop.isSet {
        let before = now()
        await workload.use(record)
        let after = now()
        record.latencies.record(after &- before)
        record.uses += 1
        record.end = after
        await Task.yield()
      }
      done.leave()
    }
  }
  usleep(useconds_t(milliseconds * 1_000))
  stop.set()
  done.wait()
  let counted = blockingAwait { await workload.uses() }
  let first = records.map(\.start).min()!
  let last = records.map(\.end).max()!
  let window = Double(records.map(\.end).min()!) - Double(records.map(\.start).max()!)
  let span = Double(last &- first)
  let sample = Sample(
    uses: records.map(\.uses).reduce(0, +), counted: counted, seconds: span / 1e9,
    overlap: max(0, window) / span, idleTasks: records.filter { $0.uses == 0 }.count,
    refreshes: log.refreshes.load(ordering: .relaxed),
    maxInFlight: log.maxInFlight.load(ordering: .relaxed),
    staleWrites: log.staleWrites.load(ordering: .relaxed),
    refreshWaitCount: records.map(\.refreshWaitCount).reduce(0, +))
  for record in records {
    sample.latencies.merge(record.latencies)
    sample.refreshWaits.merge(record.refreshWaits)
    sample.writeWaits.merge(record.writeWaits)
  }
  return sample
}

// The two workloads, each over the containers it is measured with. A use is one call of
// `use(_:)`; the sample around it times it, counts it and yields.

import BenchmarkSupport
import Dispatch
import SingleWriter
import Synchronization

/// Nanoseconds on the monotonic clock.
@inline(__always)
func now() -> UInt64 {
  DispatchTime.now().uptimeNanoseconds
}

/// What one task saw, written only by that task while it runs and read by the main thread
/// after `DispatchGroup.wait()`, which orders the writes.
final class TaskRecord: @unchecked Sendable {
  // Unchecked: see above; one task at a time writes it.
  /// When the task began its first use and ended its last.
  var start: UInt64 = 0
  var end: UInt64 = 0
  /// Uses completed.
  var uses = 0
  /// Every use, from asking to done.
  let latencies = LatencyHistogram()
  /// The refresh case only: each wait for the refresh (`checkout()`, or awaiting the
  /// actor's fetch in flight), and, for `ThreadSafeSingleWriter`, each `await write`.
  let refreshWaits = LatencyHistogram()
  let writeWaits = LatencyHistogram()
  /// The refresh case: `checkout()` calls (or awaits of the actor's fetch).
  var refreshWaitCount = 0
}

/// How long a token lives and how long fetching one takes.
struct TokenTerms: Sendable {
  let lifetimeNs: UInt64
  let fetchMicroseconds: Int
}

/// A container under one workload.
protocol Workload: Sendable {
  init(_ terms: TokenTerms, _ log: FlightLog)
  /// One use.
  func use(_ record: TaskRecord) async
  /// The uses the container counted.
  func uses() async -> Int
}

// MARK: - The token refresh

/// Whichever use finds the token expired checks out the writer and holds it across the
/// fetch; the others' `checkout()` and `await write` queue behind it and run with the new
/// token. Finding it fresh costs a `read`, which never waits.
final class SingleWriterRefresh: Workload {
  let session = ThreadSafeSingleWriter(value: Session())
  let terms: TokenTerms
  let log: FlightLog

  init(_ terms: TokenTerms, _ log: FlightLog) {
    self.terms = terms
    self.log = log
  }

  func use(_ record: TaskRecord) async {
    var state = session.read
    while state.expiresAt <= now() {
      let asked = now()
      let writer = try! await session.checkout()
      record.refreshWaits.record(now() &- asked)
      record.refreshWaitCount += 1
      // Whoever checked out first refreshed it; the others find it fresh.
      if writer.write.expiresAt <= now() {
        log.beginRefresh()
        let token = await fetchToken(
          after: writer.write.token, microseconds: terms.fetchMicroseconds)
        writer.write.token = token
        writer.write.expiresAt = now() + terms.lifetimeNs
        log.endRefresh()
      }
      state = writer.write
    }
    let log = self.log
    let asked = now()
    await session.write { log.countUse(in: &$0) }
    record.writeWaits.record(now() &- asked)
  }

  func uses() async -> Int { session.read.uses }
}

/// An actor is reentrant at every `await`: without a guard, uses would run with the old
/// token during the fetch and every expired caller would start its own. So it keeps the
/// fetch in flight as a stored task that every caller awaits (as Tools/Transactions does).
actor ActorRefresh: Workload {
  var session = Session()
  var inFlight: Task<Int, Never>?
  nonisolated let terms: TokenTerms
  nonisolated let log: FlightLog

  init(_ terms: TokenTerms, _ log: FlightLog) {
    self.terms = terms
    self.log = log
  }

  func use(_ record: TaskRecord) async {
    // After each `await` another caller may have started the next fetch: look again.
    while true {
      if let fetch = inFlight {
        await awaitFetch(fetch, record)
        continue
      }
      if session.expiresAt <= now() {
        log.beginRefresh()
        let previous = session.token
        let microseconds = terms.fetchMicroseconds
        let fetch = Task { await fetchToken(after: previous, microseconds: microseconds) }
        inFlight = fetch
        await awaitFetch(fetch, record)
        continue
      }
      break
    }
    log.countUse(in: &session)
  }

  /// Waits for `fetch` and installs its token unless a newer one already is.
  private func awaitFetch(_ fetch: Task<Int, Never>, _ record: TaskRecord) async {
    let asked = now()
    let token = await fetch.value
    record.refreshWaits.record(now() &- asked)
    record.refreshWaitCount += 1
    guard token > session.token else { return }
    session.token = token
    session.expiresAt = now() + terms.lifetimeNs
    inFlight = nil
    log.endRefresh()
  }

  func uses() async -> Int { session.uses }
}

// MARK: - Small writes only

/// `await write` of one field.
final class SingleWriterWrites: Workload {
  let session = ThreadSafeSingleWriter(value: Session())
  init(_: TokenTerms, _: FlightLog) {}
  func use(_: TaskRecord) async { await session.write { $0.uses += 1 } }
  func uses() async -> Int { session.read.uses }
}

/// An actor method that writes one field, awaited.
actor ActorWrites: Workload {
  var session = Session()
  init(_: TokenTerms, _: FlightLog) {}
  func use(_: TaskRecord) { session.uses += 1 }
  func uses() -> Int { session.uses }
}

/// `Mutex.withLock` around the same write, called from the task.
final class MutexWrites: Workload {
  let session = Mutex(Session())
  init(_: TokenTerms, _: FlightLog) {}
  func use(_: TaskRecord) async { session.withLock { $0.uses += 1 } }
  func uses() async -> Int { session.withLock { $0.uses } }
}

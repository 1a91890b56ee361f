// Single-flight token refresh: tasks use a token; when it has expired, one task fetches a
// new one across an `await` while the others wait for it, and no use may take the old
// token while the new one is being fetched. Two workloads: each use is a short write (a
// use count), or a read.

import BenchmarkSupport
import Foundation
import SingleWriter
import Synchronization

/// What a token store is made with: where it logs the flights, how long a token lives, and
/// how long a fetch takes.
struct TokenTerms: Sendable {
  let log: FlightLog
  let lifetimeNs: UInt64
  let fetchMicroseconds: Int
}

protocol TokenStore: Sendable {
  init(_ terms: TokenTerms)
  var terms: TokenTerms { get }
  /// Refreshes the token if it has expired (once, whoever else asks), then uses it in a
  /// write or in a read.
  func useToken(write: Bool) async throws
  func uses() async -> Int
}

extension TokenStore {
  var log: FlightLog { terms.log }
  var lifetimeNs: UInt64 { terms.lifetimeNs }
  var fetchMicroseconds: Int { terms.fetchMicroseconds }
}

/// `checkout()` holds the writer across the fetch; the others' `checkout()` and `await
/// write` queue behind it and run, in order, with the new token. Reads never wait: a
/// reader that finds the token expired queues like a writer.
final class SingleWriterStore: TokenStore {
  let session = ThreadSafeSingleWriter(value: Session())
  let terms: TokenTerms

  init(_ terms: TokenTerms) { self.terms = terms }

  func useToken(write: Bool) async throws {
    var state = session.read
    while state.expiresAt <= now() {
      let writer = try await session.checkout()
      // Whoever checked out first refreshed it; the others find it fresh.
      if writer.write.expiresAt <= now() {
        log.beginRefresh()
        let token = await fetchToken(after: writer.write.token, microseconds: fetchMicroseconds)
        writer.write.token = token
        writer.write.expiresAt = now() + lifetimeNs
        log.endRefresh()
      }
      state = writer.write
    }
    if log.refreshing { log.waitedForRefresh.add(1, ordering: .relaxed) }
    if write {
      let log = self.log
      await session.write { log.countUse(in: &$0) }
    } else {
      sink(state.token)
    }
  }

  func uses() async -> Int { session.read.uses }
}

/// An actor is reentrant at every `await`: without a guard, writes would run with the old
/// token during the fetch and every expired caller would start its own. So it keeps the
/// fetch in flight as a stored task that every caller awaits.
actor ActorStore: TokenStore {
  var session = Session()
  var inFlight: Task<Int, Never>?
  nonisolated let terms: TokenTerms

  init(_ terms: TokenTerms) { self.terms = terms }

  func useToken(write: Bool) async throws {
    // After each `await` another caller may have started the next fetch: look again. The
    // token comes from the fetch's value, installed by whichever waiter resumes first;
    // waiting for the refresher to install it instead spins: a completed fetch's `value`
    // returns without giving the actor up, so the refresher never gets back on.
    while true {
      if let fetch = inFlight {
        install(await fetch.value)
        continue
      }
      if session.expiresAt <= now() {
        log.beginRefresh()
        let previous = session.token
        let microseconds = fetchMicroseconds
        let fetch = Task { await fetchToken(after: previous, microseconds: microseconds) }
        inFlight = fetch
        install(await fetch.value)
        continue
      }
      break
    }
    if write {
      log.countUse(in: &session)
    } else {
      sink(session.token)
    }
  }

  /// Installs `token` unless a newer one already is: tokens only grow.
  private func install(_ token: Int) {
    guard token > session.token else { return }
    session.token = token
    session.expiresAt = now() + lifetimeNs
    inFlight = nil
    log.endRefresh()
  }

  func uses() async -> Int { session.uses }
}

/// What one sample of the refresh case did: its uses, its flight log's counts (fetches,
/// the most in flight at once, writes made during one, uses that found one in flight), the
/// writes lost and every use's latency.
struct RefreshSample {
  let uses: Int
  let seconds: Double
  let refreshes: Int
  let maxInFlight: Int
  let staleWrites: Int
  let waited: Int
  let lost: Int
  let latencies: LatencyHistogram

  var usesPerSecond: Double { Double(uses) / seconds }
}

/// Per-task results of one refresh sample.
final class TaskSlots: @unchecked Sendable {
  // Unchecked: slot i is written only by task i, read after `DispatchGroup.wait()`.
  var counts: [Int]
  let histograms: [LatencyHistogram]
  init(_ tasks: Int) {
    counts = Array(repeating: 0, count: tasks)
    histograms = (0..<tasks).map { _ in LatencyHistogram() }
  }
}

/// `tasks` tasks use the token until the stop flag; each yields between uses, as a
/// request handler would, so that all of them get to run on the pool's threads.
func runRefreshSample<S: TokenStore>(
  _: S.Type, write: Bool, tasks: Int, milliseconds: Double, lifetimeNs: UInt64,
  fetchMicroseconds: Int
) -> RefreshSample {
  let log = FlightLog()
  let store = S(TokenTerms(log: log, lifetimeNs: lifetimeNs, fetchMicroseconds: fetchMicroseconds))
  let stop = StopFlag()
  let slots = TaskSlots(tasks)
  let done = DispatchGroup()
  let start = now()
  for index in 0..<tasks {
    done.enter()
    Task.detached {
      let histogram = slots.histograms[index]
      var count = 0
      while !stop.isSet {
        let before = now()
        try! await store.useToken(write: write)
        histogram.recordLeavingOutLimit(now() - before)
        count += 1
        await Task.yield()
      }
      slots.counts[index] = count
      done.leave()
    }
  }
  usleep(useconds_t(milliseconds * 1_000))
  stop.set()
  done.wait()
  let seconds = Double(now() - start) / 1e9
  let final = blockingAwait { await store.uses() }
  let uses = slots.counts.reduce(0, +)
  let latencies = LatencyHistogram()
  for histogram in slots.histograms { latencies.merge(histogram) }
  return RefreshSample(
    uses: uses, seconds: seconds, refreshes: log.refreshes.load(ordering: .relaxed),
    maxInFlight: log.maxInFlight.load(ordering: .relaxed),
    staleWrites: log.staleWrites.load(ordering: .relaxed),
    waited: log.waitedForRefresh.load(ordering: .relaxed), lost: write ? uses - final : final,
    latencies: latencies)
}

enum RefreshVariant: String, CaseIterable {
  case actor = "actor with a stored in-flight Task"
  case singleWriter = "ThreadSafeSingleWriter, checkout() held across the fetch"
}

/// A variant in one workload.
struct RefreshRow: Hashable {
  let variant: RefreshVariant
  let write: Bool
}

func runRefresh(_ options: Options) -> CaseResult {
  let tasks = 8
  let lifetimeNs: UInt64 = 5_000_000
  let fetchMicroseconds = 1_000
  let started = Date()
  let rows = [true, false].flatMap { write in
    RefreshVariant.allCases.map { RefreshRow(variant: $0, write: write) }
  }
  var samples = Dictionary(uniqueKeysWithValues: rows.map { ($0, [RefreshSample]()) })
  let latencies = Dictionary(uniqueKeysWithValues: rows.map { ($0, LatencyHistogram()) })
  for round in 0..<options.rounds {
    for row in rows.rotated(by: round) {
      if debugSamples { FileHandle.standardError.write(Data("refresh \(row)\n".utf8)) }
      let sample =
        switch row.variant {
        case .actor:
          runRefreshSample(
            ActorStore.self, write: row.write, tasks: tasks, milliseconds: options.sampleMs,
            lifetimeNs: lifetimeNs, fetchMicroseconds: fetchMicroseconds)
        case .singleWriter:
          runRefreshSample(
            SingleWriterStore.self, write: row.write, tasks: tasks,
            milliseconds: options.sampleMs, lifetimeNs: lifetimeNs,
            fetchMicroseconds: fetchMicroseconds)
        }
      samples[row]!.append(sample)
      latencies[row]!.merge(sample.latencies)
    }
  }
  let elapsed = Date().timeIntervalSince(started)

  print("## Token refresh: one fetch in flight, every use after it\n")
  print(
    "\(tasks) tasks each use a token, then yield; the token lives "
      + String(format: "%.0f ms", Double(lifetimeNs) / 1e6) + ", and a fetch is a "
      + "\(fetchMicroseconds) µs sleep. A use is a write (`await write`, or an actor method "
      + "that counts it) or a read (`read`, or an actor method that returns the token). "
      + "\(options.rounds) rounds, interleaved, in " + String(format: "%.0f s", elapsed)
      + "; throughput is the median over the rounds, latency (from asking to having used "
      + "the token, a fetch included) over every use.\n")
  var jsonRows: [[String: Any]] = []
  var lost = false
  var singleFlight = true
  let ratio = { (value: Double?, base: Double?) -> Double? in
    guard let value, let base, base > 0 else { return nil }
    return value / base
  }
  MarkdownTable(
    [
      "Variant", "use", "uses/s", "p50", "p99", "max", "p50", "p99", "max", "fetches",
      "max in flight", "uses that found a fetch in flight", "writes during a fetch", "lost writes",
    ],
    ["---", "---"] + Array(repeating: "---:", count: 12),
    rows.map { row in
      let reference = RefreshRow(variant: .actor, write: row.write)
      let all = samples[row]!
      let histogram = latencies[row]!
      let uses = all.map(\.usesPerSecond).median()
      let referenceUses = samples[reference]!.map(\.usesPerSecond).median()
      let quantiles = [0.5, 0.99].map { Double(histogram.quantile($0)) } + [Double(histogram.max)]
      let references =
        [0.5, 0.99].map { Double(latencies[reference]!.quantile($0)) }
        + [Double(latencies[reference]!.max)]
      let refreshes = all.map(\.refreshes).reduce(0, +)
      let maxInFlight = all.map(\.maxInFlight).max() ?? 0
      let stale = all.map(\.staleWrites).reduce(0, +)
      let waited = all.map(\.waited).reduce(0, +)
      let lostWrites = all.map(\.lost).reduce(0, +)
      lost = lost || lostWrites != 0 || stale != 0
      singleFlight = singleFlight && maxInFlight <= 1
      jsonRows.append([
        "variant": row.variant.rawValue, "use": row.write ? "write" : "read",
        "usesPerSecond": uses ?? 0, "usesRatio": ratio(uses, referenceUses) ?? 0,
        "p50Ns": quantiles[0], "p99Ns": quantiles[1], "maxNs": quantiles[2],
        "p50Ratio": ratio(quantiles[0], references[0]) ?? 0,
        "p99Ratio": ratio(quantiles[1], references[1]) ?? 0,
        "maxRatio": ratio(quantiles[2], references[2]) ?? 0,
        "refreshes": refreshes, "maxInFlight": maxInFlight, "staleUses": stale,
        "foundFetchInFlight": waited, "lost": lostWrites,
      ])
      return [
        row.variant.rawValue, row.write ? "write" : "read",
        Format.ratio(ratio(uses, referenceUses)),
        Format.ratio(ratio(quantiles[0], references[0])),
        Format.ratio(ratio(quantiles[1], references[1])),
        Format.ratio(ratio(quantiles[2], references[2])),
        Format.duration(quantiles[0]), Format.duration(quantiles[1]), Format.duration(quantiles[2]),
        "\(refreshes)", "\(maxInFlight)", "\(waited)",
        !row.write ? "" : stale == 0 ? "0" : "**\(stale)**",
        lostWrites == 0 ? "0" : "**\(lostWrites)**",
      ]
    }
  ).print()
  let actorUses = { (write: Bool) in
    samples[RefreshRow(variant: .actor, write: write)]!.map(\.usesPerSecond).median() ?? 0
  }
  print(
    "\nRatios are to the actor in the same workload: uses/s above 1 is faster, latencies "
      + "below 1 are shorter. The actor here: "
      + String(format: "%.0f uses/s (writes), %.0f (reads)", actorUses(true), actorUses(false))
      + ".\n")
  if !singleFlight { print("**More than one fetch was in flight at once.**\n") }
  if lost { print("**A write ran during a fetch, or was lost.**\n") }
  return CaseResult(
    json: [
      "tasks": tasks, "lifetimeNs": lifetimeNs, "fetchMicroseconds": fetchMicroseconds,
      "rounds": options.rounds, "sampleMs": options.sampleMs, "rows": jsonRows,
    ],
    goalsPass: singleFlight, lost: lost)
}

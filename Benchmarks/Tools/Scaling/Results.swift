// What a run keeps of its samples, as JSON: scaling.sh runs the tool once per condition
// (quiet, busy) and then has it print one report from both files.

import BenchmarkSupport
import Foundation

/// The two workloads.
enum WorkloadKind: String, Codable, CaseIterable {
  case refresh
  case writes

  var title: String {
    switch self {
    case .refresh: "token refresh"
    case .writes: "small writes"
    }
  }
}

/// The containers.
enum Container: String, Codable, CaseIterable {
  case actor
  case mutex
  case singleWriter

  var title: String {
    switch self {
    case .actor: "actor"
    case .mutex: "`Mutex`"
    case .singleWriter: "`ThreadSafeSingleWriter`"
    }
  }
}

/// One container under one workload at one task count.
struct RowKey: Hashable, Codable {
  var workload: WorkloadKind
  var container: Container
  var tasks: Int
}

/// The containers each workload runs: `Mutex` cannot be held across the fetch.
func containers(_ workload: WorkloadKind) -> [Container] {
  switch workload {
  case .refresh: [.actor, .singleWriter]
  case .writes: [.actor, .mutex, .singleWriter]
  }
}

/// A histogram as the report shows it: percentiles, and counts between the bounds below.
struct Waits: Codable {
  var total: Int
  var p50: Double
  var p99: Double
  var p999: Double
  var max: Double
  /// Counts below `Waits.bounds[0]`, between each two, from the last up to 10 ms, and over.
  var counts: [Int]

  /// Powers of two of ns (1 µs = 1,024 ns), then exactly 10 ms (`LatencyHistogram.limit`).
  static let bounds: [UInt64] = [
    1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22, 1 << 23,
  ]
  static let labels = [
    "< 1 µs", "1–4 µs", "4–16 µs", "16–64 µs", "64–256 µs", "256–512 µs", "512 µs–1 ms",
    "1–2 ms", "2–4 ms", "4–8 ms", "8–10 ms", "> 10 ms",
  ]

  init(_ histogram: LatencyHistogram) {
    total = histogram.total
    p50 = Double(histogram.quantile(0.5))
    p99 = Double(histogram.quantile(0.99))
    p999 = Double(histogram.quantile(0.999))
    max = Double(histogram.max)
    counts = histogram.counts(splitAt: Self.bounds)
  }
}

/// One row's figures over the run's rounds.
struct RowResult: Codable {
  var key: RowKey
  /// Median over the valid samples; `nil` if none was valid.
  var usesPerSecond: Double?
  /// Over every use of the valid samples.
  var latency: Waits
  /// The refresh case: waits for the refresh (`checkout()`, or the actor's fetch in
  /// flight), and `ThreadSafeSingleWriter`'s `await write` alone.
  var refreshWaits: Waits?
  var writeWaits: Waits?
  var validSamples: Int
  var samples: Int
  /// The smallest overlap among the valid samples.
  var minOverlap: Double
  /// Totals over every sample, valid or not.
  var uses: Int
  var lost: Int
  var staleWrites: Int
  var maxInFlight: Int
  var refreshes: Int
  var refreshWaitCount: Int
}

/// One run of the tool: one condition.
struct RunResult: Codable {
  var condition: String
  var date: String
  var cores: Int
  var loadBefore: String
  var loadAfter: String
  var rounds: Int
  var sampleMs: Double
  var lifetimeMs: Double
  var fetchMs: Double
  var minOverlap: Double
  var rows: [RowResult]

  func row(_ workload: WorkloadKind, _ container: Container, _ tasks: Int) -> RowResult? {
    rows.first { $0.key == RowKey(workload: workload, container: container, tasks: tasks) }
  }
  var taskCounts: [Int] { Array(Set(rows.map(\.key.tasks))).sorted() }
  var workloads: [WorkloadKind] {
    WorkloadKind.allCases.filter { kind in rows.contains { $0.key.workload == kind } }
  }
  /// Every sample counted exactly, with one fetch at a time and no use of an old token.
  var isCorrect: Bool {
    rows.allSatisfy { $0.lost == 0 && $0.staleWrites == 0 && $0.maxInFlight <= 1 }
  }
  /// Every row had valid samples in most rounds.
  var isValid: Bool { rows.allSatisfy { $0.validSamples * 2 > $0.samples } }
}

/// Collects the samples of one row: the totals straight into its result, the figures of
/// the valid samples until `result`.
final class RowAccumulator {
  private var row: RowResult
  var rates: [Double] = []
  let latencies = LatencyHistogram()
  let refreshWaits = LatencyHistogram()
  let writeWaits = LatencyHistogram()

  init(_ key: RowKey) {
    let none = Waits(LatencyHistogram())
    row = RowResult(
      key: key, usesPerSecond: nil, latency: none, refreshWaits: nil, writeWaits: nil,
      validSamples: 0, samples: 0, minOverlap: 1, uses: 0, lost: 0, staleWrites: 0,
      maxInFlight: 0, refreshes: 0, refreshWaitCount: 0)
  }

  func add(_ sample: Sample, valid: Bool) {
    row.samples += 1
    row.uses += sample.uses
    row.lost += sample.lost
    row.staleWrites += sample.staleWrites
    row.maxInFlight = max(row.maxInFlight, sample.maxInFlight)
    row.refreshes += sample.refreshes
    row.refreshWaitCount += sample.refreshWaitCount
    guard valid else { return }
    rates.append(sample.usesPerSecond)
    row.minOverlap = min(row.minOverlap, sample.overlap)
    latencies.merge(sample.latencies)
    refreshWaits.merge(sample.refreshWaits)
    writeWaits.merge(sample.writeWaits)
  }

  var result: RowResult {
    let refresh = row.key.workload == .refresh
    var result = row
    result.usesPerSecond = rates.median()
    result.latency = Waits(latencies)
    result.refreshWaits = refresh ? Waits(refreshWaits) : nil
    result.writeWaits = refresh && row.key.container == .singleWriter ? Waits(writeWaits) : nil
    result.validSamples = rates.count
    if rates.isEmpty { result.minOverlap = 0 }
    return result
  }
}

// Contended increments of one shared counter at 2, 4 and 8 threads, measured so that the
// threads really overlap, with the checks of issue 16 printed as PASS/FAIL.
//
//   swift run -c release --package-path Benchmarks Contended            # 5 rounds
//   swift run -c release --package-path Benchmarks Contended --rounds 3 --threads 2,4
//   swift run -c release --package-path Benchmarks Contended --json out.json --condition quiet
//
// Every sample starts all threads from one spin barrier. Only the window in which all of
// them were inside their loops counts: ns/op is its length over the increments made in
// it, and a sample is valid only if that window is at least `--min-overlap` of the time
// from the first start to the first end (threads run until a stop flag, --sample-ms).
// A run is valid only if Mutex contended is slower than Mutex alone: if it is not, the
// threads took turns on one core instead of contending. See Benchmarks/README.md.
//
// The queued writes and their baselines are also measured as a request handler makes them
// (issue 37): each thread calls `--calls` times in a plain loop, and the time runs until
// every write has run. Same start line, same overlap check.

import BenchmarkSupport
import Foundation

struct Options {
  var rounds = 5
  var threads = [2, 4, 8]
  var sampleMs = 100.0
  var minOverlap = 0.5
  var strict = false
  var calls = 1_000_000
  /// Not 8 by default: `Mutex` with more threads than cores takes microseconds per call,
  /// and a fixed count of them takes minutes.
  var plainThreads = [2, 4]
  var json: String?
  var condition = "as it is"
}

func parseOptions() -> Options {
  var options = Options()
  var arguments = ArgumentReader(
    tool: "Contended",
    usage: """
      usage: Contended [--rounds 5] [--threads 2,4,8] [--sample-ms 100] [--min-overlap 0.5]
                       [--calls 1000000 (per thread, in the plain-loop shape)]
                       [--plain-threads 2,4 (thread counts of the plain-loop shape)]
                       [--json PATH] [--condition LABEL (recorded in the JSON)]
                       [--strict (exit 1 unless the run is valid and every goal passes)]
      """)
  while let argument = arguments.next() {
    switch argument {
    case "--rounds": options.rounds = Int(arguments.value(of: argument)) ?? 0
    case "--threads": options.threads = arguments.list(of: argument) { Int($0) }
    case "--sample-ms": options.sampleMs = Double(arguments.value(of: argument)) ?? 0
    case "--min-overlap": options.minOverlap = Double(arguments.value(of: argument)) ?? 2
    case "--strict": options.strict = true
    case "--calls": options.calls = Int(arguments.value(of: argument)) ?? 0
    case "--plain-threads": options.plainThreads = arguments.list(of: argument) { Int($0) }
    case "--json": options.json = arguments.value(of: argument)
    case "--condition": options.condition = arguments.value(of: argument)
    default: arguments.fail("unknown argument \(argument)")
    }
  }
  guard options.rounds >= 1, !options.threads.isEmpty, options.threads.allSatisfy({ $0 >= 2 }),
    options.sampleMs > 0, (0...1).contains(options.minOverlap), options.calls >= 1_000,
    options.plainThreads.allSatisfy({ $0 >= 2 })
  else { arguments.fail("bad value") }
  return options
}

/// How a sample's threads call and what its figure counts.
enum Shape: String {
  /// Until a stop flag; the figure is the increments done while all threads ran.
  case window = "stop flag, overlap window"
  /// `--calls` calls each in a plain loop; the figure is the time until every write ran.
  case plain = "plain loop, until every write ran"
}

/// One line of the table: a way of writing, a thread count, whether each wait is timed,
/// and the shape of the threads' calls.
struct Row: Hashable {
  let kind: Kind
  let threads: Int
  let timed: Bool
  var shape = Shape.window

  var name: String {
    let base = threads == 1 ? "\(kind.rawValue), uncontended" : kind.rawValue
    return timed ? "\(base), wait timed" : base
  }
}

/// Samples of one row, over all rounds.
struct Measured {
  var valid: [Sample] = []
  var attempts = 0
  var overlaps: [Double] = []
  var lost = 0
  var waits = LatencyHistogram()
  /// ns/op of the valid sample of each round, to pair rows round by round.
  var byRound: [Int: Double] = [:]

  var nsPerOp: Double? { valid.map(\.nsPerOp).median() }
}

let options = parseOptions()
let maxAttempts = 3
/// `CONTENDED_ONLY=writeNext,NSLock`: only these rows (and the uncontended `Mutex`), to
/// look at one row without the others' samples between its own.
let onlyKind = getenv("CONTENDED_ONLY").map { String(cString: $0) }.flatMap {
  $0.isEmpty ? nil : $0
}
let allRows: [Row] =
  [Row(kind: .mutex, threads: 1, timed: false)]
  + options.threads.flatMap { n in Kind.allCases.map { Row(kind: $0, threads: n, timed: false) } }
  + options.threads.flatMap { n in
    [Kind.withWriter, .nslock].map { Row(kind: $0, threads: n, timed: true) }
  }
  + options.threads.filter(options.plainThreads.contains).flatMap { n in
    Kind.plainKinds.map { Row(kind: $0, threads: n, timed: false, shape: .plain) }
  }
let rows: [Row] = allRows.filter { row in
  onlyKind == nil || onlyKind!.split(separator: ",").contains(Substring(row.kind.rawValue))
    || row.threads == 1
}

/// A sample is valid if the threads all ran at once for long enough: ns/op counts only
/// that window, so a shorter one does not bias it, but it must hold enough increments.
func isValid(_ sample: Sample) -> Bool {
  sample.overlap >= options.minOverlap && sample.windowOps >= 1_000
}

/// What one clock read costs, for reading the timed rows (two reads per call).
func clockCost() -> Double {
  let count = 1_000_000
  var sink: UInt64 = 0
  let start = now()
  for _ in 0..<count { sink &+= now() }
  let ns = Double(now() - start) / Double(count)
  return sink == 42 ? 0 : ns
}

let started = Date()
let loadBefore = Machine.loadAverage
let clockNs = clockCost()
var results: [Row: Measured] = [:]
for row in rows { results[row] = Measured() }

// Rounds interleave the rows, each round in a rotated order, so a burst of load from
// elsewhere lands on different rows in different rounds.
for round in 0..<options.rounds {
  for row in rows.rotated(by: round) {
    var measured = results[row]!
    for _ in 0..<maxAttempts {
      let sample =
        row.shape == .plain
        ? runPlainSample(row.kind, threads: row.threads, calls: options.calls)
        : runSample(
          row.kind, threads: row.threads, milliseconds: options.sampleMs, timed: row.timed)
      measured.attempts += 1
      measured.overlaps.append(sample.overlap)
      measured.lost += sample.lost
      if isValid(sample) {
        measured.valid.append(sample)
        measured.byRound[round] = sample.nsPerOp
        if let waits = sample.waits { measured.waits.merge(waits) }
        break
      }
    }
    results[row] = measured
  }
}
let loadAfter = Machine.loadAverage
let elapsed = Date().timeIntervalSince(started)

// MARK: Report

let neededValid = (options.rounds + 1) / 2
@MainActor
func result(_ kind: Kind, _ threads: Int, timed: Bool = false, shape: Shape = .window)
  -> Measured?
{
  results[Row(kind: kind, threads: threads, timed: timed, shape: shape)]
}
@MainActor
func usable(_ measured: Measured?) -> Double? {
  guard let measured, measured.valid.count >= neededValid, measured.lost == 0 else { return nil }
  return measured.nsPerOp
}
/// Throughput of `kind` over the throughput of `reference`, both at `threads`.
@MainActor
func speedup(_ kind: Kind, over reference: Kind, threads: Int, shape: Shape = .window)
  -> Double?
{
  guard let ns = usable(result(kind, threads, shape: shape)),
    let ref = usable(result(reference, threads, shape: shape))
  else { return nil }
  return ref / ns
}
/// The same ratio in each round where both rows had a valid sample: its spread.
@MainActor
func roundSpeedups(_ kind: Kind, over reference: Kind, threads: Int, shape: Shape) -> [Double] {
  guard let rows = result(kind, threads, shape: shape)?.byRound,
    let refs = result(reference, threads, shape: shape)?.byRound
  else { return [] }
  return rows.keys.sorted().compactMap { round in refs[round].map { $0 / rows[round]! } }
}

let uncontended = usable(result(.mutex, 1))
let sanity: [Int: Double?] = Dictionary(
  uniqueKeysWithValues: options.threads.map { n in
    (n, usable(result(.mutex, n)).flatMap { ns in uncontended.map { ns / $0 } })
  })
let runValid = sanity.values.allSatisfy { ($0 ?? 0) > 1 }
let totalLost = results.values.reduce(0) { $0 + $1.lost }

print("## Contended\n")
print(
  "\(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(loadBefore) before "
    + "and \(loadAfter) after; \(options.rounds) rounds, interleaved, in "
    + String(format: "%.0f s", elapsed) + "; every thread runs for "
    + String(format: "%.0f ms", options.sampleMs)
    + " after the start; ns/op counts only the window in which all "
    + "threads ran, and a sample is valid if that window is ≥ "
    + "\(Int(options.minOverlap * 100))% of the time from the first start to the first end and holds ≥ 1,000 increments; "
    + "every figure is the median of "
    + "the valid samples, and a row needs \(neededValid). One clock read: "
    + String(format: "%.0f ns", clockNs) + ".\n")
if !runValid {
  print(
    "**INVALID RUN: Mutex contended is not slower than Mutex uncontended at every thread count,"
      + " so the threads did not really contend. The figures below are not results.**\n")
}

MarkdownTable(
  [
    "Row", "threads", "increments/sample", "ns/op (median)", "min–max", "M ops/s", "× NSLock",
    "× Mutex", "× serial queue", "overlap (median)", "valid/samples", "lost writes",
  ],
  ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"],
  rows.filter { !$0.timed && $0.shape == .window }.map { row in
    let measured = results[row]!
    let ns = measured.nsPerOp
    let range = measured.valid.map(\.nsPerOp)
    let contended = row.threads > 1
    let versus = { (reference: Kind) -> String in
      guard contended, row.kind != reference,
        let ratio = speedup(row.kind, over: reference, threads: row.threads)
      else { return "" }
      return Format.ratio(ratio, suffix: "×")
    }
    return [
      row.name, "\(row.threads)",
      measured.valid.map { Double($0.ops) }.median().map { String(format: "%.2fM", $0 / 1e6) }
        ?? "",
      Format.number(ns),
      range.isEmpty ? "" : "\(Format.number(range.min()))–\(Format.number(range.max()))",
      ns.map { String(format: "%.1f", 1e3 / $0) } ?? "", versus(.nslock), versus(.mutex),
      versus(.serialQueue), measured.overlaps.median().map { String(format: "%.2f", $0) } ?? "",
      "\(measured.valid.count)/\(measured.attempts)",
      measured.lost == 0 ? "0" : "**\(measured.lost)**",
    ]
  }
).print()
print(
  "\n× NSLock, × Mutex and × serial queue are throughput ratios at the same thread count: "
    + "above 1 is faster.\n")

// The request-handler shape (issue 37): what a user waiting for the work gets.
print("### As a request handler writes them: \(options.calls) calls per thread, plain loop\n")
print(
  "Each thread makes its calls in a plain loop; ns/op is the time from the first start until "
    + "every write has run (the last thread's return, then the value read behind any write "
    + "still queued) over all calls. A sample counts if the last thread started within the "
    + "first \(100 - Int(options.minOverlap * 100))% of the first one's run.\n")
MarkdownTable(
  [
    "Row", "threads", "ns/op (median)", "min–max", "M ops/s", "× NSLock", "× Mutex",
    "× serial queue", "overlap (median)", "valid/samples", "lost writes",
  ],
  ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"],
  rows.filter { $0.shape == .plain }.map { row in
    let measured = results[row]!
    let ns = measured.nsPerOp
    let range = measured.valid.map(\.nsPerOp)
    let versus = { (reference: Kind) -> String in
      guard row.kind != reference,
        let ratio = speedup(row.kind, over: reference, threads: row.threads, shape: .plain)
      else { return "" }
      let rounds = roundSpeedups(row.kind, over: reference, threads: row.threads, shape: .plain)
      let spread =
        rounds.isEmpty
        ? ""
        : " (\(Format.ratio(rounds.min()!, suffix: ""))–\(Format.ratio(rounds.max()!, suffix: "")))"
      return Format.ratio(ratio, suffix: "×") + spread
    }
    return [
      row.name, "\(row.threads)", Format.number(ns),
      range.isEmpty ? "" : "\(Format.number(range.min()))–\(Format.number(range.max()))",
      ns.map { String(format: "%.1f", 1e3 / $0) } ?? "", versus(.nslock), versus(.mutex),
      versus(.serialQueue), measured.overlaps.median().map { String(format: "%.2f", $0) } ?? "",
      "\(measured.valid.count)/\(measured.attempts)",
      measured.lost == 0 ? "0" : "**\(measured.lost)**",
    ]
  }
).print()
print("\nRatios: of the medians, and in brackets the least and greatest of the rounds' own.\n")

print("Sanity, Mutex contended / Mutex uncontended (must be > 1): ", terminator: "")
print(
  options.threads.map { n in
    "\(n) threads " + (sanity[n]!.map { String(format: "%.2f", $0) } ?? "n/a")
  }.joined(separator: ", ") + (runValid ? ": valid.\n" : ": **INVALID**.\n"))

// Wait histograms: one pass per thread count in which each call reads the clock before
// calling and first thing inside the critical section (one clock read more held time).
let timedRows = rows.filter(\.timed)
let histogramRows = timedRows.filter { $0.kind == .withWriter }
print("### withWriter: wait from the call to entering the closure\n")
let powersOfTwo: [UInt64] = (10...23).map { 1 << $0 }
let displayBounds = powersOfTwo + [LatencyHistogram.limit]
let counts = histogramRows.map { results[$0]!.waits.counts(splitAt: powersOfTwo) }
MarkdownTable(
  ["wait"] + histogramRows.map { "\($0.threads) threads" },
  ["---"] + histogramRows.map { _ in "---:" },
  (0...displayBounds.count).compactMap { bucket in
    guard counts.contains(where: { $0[bucket] > 0 }) else { return nil }
    return [bucketLabel(bucket, displayBounds)]
      + zip(histogramRows, counts).map { row, count in
        let all = max(results[row]!.waits.total, 1)
        let percent = String(format: "%.3g", 100 * Double(count[bucket]) / Double(all))
        return "\(count[bucket]) (\(percent)%)"
      }
  }
).print()
print(
  "\nBuckets are powers of two of ns (1 µs = 1,024 ns, 8 ms = 8,389 µs here), and the last "
    + "two split at exactly 10 ms.\n")
MarkdownTable(
  ["timed row", "threads", "calls", "ns/op", "p50", "p99", "p99.9", "max", "valid/samples"],
  ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"],
  timedRows.map { row in
    let measured = results[row]!
    let tail = ["\(measured.valid.count)/\(measured.attempts)"]
    guard measured.waits.total > 0 else {
      return [row.kind.rawValue, "\(row.threads)", "0", "", "", "", "", ""] + tail
    }
    return [
      row.kind.rawValue, "\(row.threads)", "\(measured.waits.total)",
      Format.number(measured.nsPerOp),
    ] + [0.5, 0.99, 0.999, 1.0].map { Format.duration(Double(measured.waits.quantile($0))) } + tail
  }
).print()
print(
  "\nPercentiles are rounded up to the edge of their bucket (at most 6.25% wide); max is exact.\n"
)

// MARK: Goals (issue 16, contended part)

var goals: [(goal: String, threads: String, measured: String, pass: Bool, stretch: Bool)] = []
goals.append(
  (
    "sanity: Mutex contended / uncontended > 1", "all",
    options.threads.map { sanity[$0]!.map { String(format: "%.2f", $0) } ?? "n/a" }
      .joined(separator: ", "), runValid, false
  ))
goals.append(("0 lost writes in every sample", "all", "\(totalLost) lost", totalLost == 0, false))
for n in options.threads {
  for (kind, reference, stretch) in [
    (Kind.withWriter, Kind.nslock, false), (.writeNext, .nslock, false), (.writeNext, .mutex, true),
  ] {
    let ratio = speedup(kind, over: reference, threads: n)
    goals.append(
      (
        "\(kind.rawValue) throughput ≥ \(reference.rawValue)", "\(n)",
        ratio.map { Format.ratio($0, suffix: "×") } ?? "no valid samples", (ratio ?? 0) >= 1,
        stretch
      ))
  }
  let timed = results[Row(kind: .withWriter, threads: n, timed: true)]
  let enough = (timed?.valid.count ?? 0) >= neededValid
  let p999 = timed.flatMap { $0.waits.total > 0 ? $0.waits.quantile(0.999) : nil }
  goals.append(
    (
      "withWriter p99.9 wait ≤ 10 ms", "\(n)", p999.map { Format.duration(Double($0)) } ?? "n/a",
      enough && (p999 ?? .max) <= 10_000_000, false
    ))
}

print("### Goals\n")
MarkdownTable(
  ["Goal", "threads", "Measured", "Result"], ["---", "---:", "---:", ":---:"],
  goals.map { goal in
    let verdict =
      !runValid && goal.threads != "all"
      ? "INVALID" : goal.pass ? "PASS" : goal.stretch ? "FAIL (stretch)" : "FAIL"
    return [goal.goal + (goal.stretch ? " (stretch)" : ""), goal.threads, goal.measured, verdict]
  }
).print()
let required = goals.filter { !$0.stretch }
let verdict = !runValid ? "INVALID" : required.allSatisfy(\.pass) ? "PASS" : "FAIL"
print("\nContended goals: **\(verdict)**")

// MARK: JSON (issue 37's results file reads it)

/// Three decimals: the JSON is read by people and by the docs' figure check.
func rounded(_ value: Double?) -> Any {
  value.map { ($0 * 1_000).rounded() / 1_000 } ?? NSNull()
}
if let path = options.json {
  let rowObjects: [[String: Any]] = rows.filter { !$0.timed }.map { row in
    let measured = results[row]!
    let range = measured.valid.map(\.nsPerOp)
    return [
      "shape": row.shape.rawValue, "kind": row.kind.rawValue, "threads": row.threads,
      "ns_per_op": rounded(usable(measured)), "ns_min": rounded(range.min()),
      "ns_max": rounded(range.max()), "valid": measured.valid.count,
      "samples": measured.attempts, "overlap": rounded(measured.overlaps.median()),
      "lost": measured.lost,
    ]
  }
  let pairs: [(Shape, Kind, Kind)] =
    [Kind.nslock, .mutex, .serialQueue].flatMap { reference in
      [(Shape.window, Kind.writeNext, reference), (.plain, .writeNext, reference)]
    } + [(.window, .withWriter, .nslock), (.window, .withWriter, .mutex)]
  let ratioObjects: [[String: Any]] = options.threads.flatMap { n in
    pairs.compactMap { shape, kind, reference -> [String: Any]? in
      guard results[Row(kind: kind, threads: n, timed: false, shape: shape)] != nil else {
        return nil
      }
      let rounds = roundSpeedups(kind, over: reference, threads: n, shape: shape)
      return [
        "shape": shape.rawValue, "kind": kind.rawValue, "over": reference.rawValue,
        "threads": n,
        "throughput_ratio": rounded(speedup(kind, over: reference, threads: n, shape: shape)),
        "round_min": rounded(rounds.min()), "round_max": rounded(rounds.max()),
        "rounds_paired": rounds.count,
      ]
    }
  }
  let object: [String: Any] = [
    "tool": "Contended", "condition": options.condition, "cores": Machine.cores,
    "load_before": loadBefore, "load_after": loadAfter, "rounds": options.rounds,
    "calls_per_thread": options.calls, "sample_ms": options.sampleMs,
    "min_overlap": options.minOverlap, "valid_run": runValid,
    "sanity": Dictionary(
      uniqueKeysWithValues: options.threads.map { ("\($0)", rounded(sanity[$0]!)) }),
    "rows": rowObjects, "ratios": ratioObjects,
  ]
  let data = try! JSONSerialization.data(
    withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
  guard FileManager.default.createFile(atPath: path, contents: data) else {
    fatalError("cannot write \(path)")
  }
}

if totalLost > 0 { exit(3) }
if options.strict && verdict != "PASS" { exit(1) }

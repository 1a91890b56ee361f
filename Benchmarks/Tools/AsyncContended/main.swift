// Contended increments from tasks on the cooperative pool: `await write`, against
// `Mutex.withLock` and an actor called from the same tasks. Every task yields every 256
// increments, as async code that awaits anything does, so that all of them progress even
// with more tasks than pool threads. A round counts only if every task was running during
// most of it (the window from the last task's start to the first task's end). Each is
// measured twice: written in the task's loop, and as a client writes it, one call inside
// an async function of its own that the loop calls. And as a request handler writes them
// (issue 37): `await write`, the actor and `Mutex` in a plain loop of `--plain-ops` calls per
// task, with no clock read per call and no yield, compared with each other.
//
//   swift run -c release --package-path Benchmarks AsyncContended [--rounds N] [--ops N]
//       [--plain-ops N] [--json PATH] [--condition LABEL]

import BenchmarkSupport
import Dispatch
import Foundation
import SingleWriter
import Synchronization

@inline(__always) func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

enum Kind: String, CaseIterable {
  case mutex = "Mutex.withLock"
  case actor = "actor"
  case awaitWrite = "await write"
  case withWriter = "withWriter, from the same tasks"
  case mutexInFunction = "Mutex.withLock, in a function"
  case actorInFunction = "actor, in a function"
  case awaitWriteInFunction = "await write, in a function"
  case mutexPlain = "Mutex.withLock, plain loop"
  case actorPlain = "actor, plain loop"
  case awaitWritePlain = "await write, plain loop"

  /// Whether the task's loop makes only the calls: no clock read per call, no yield.
  var plain: Bool { [.mutexPlain, .actorPlain, .awaitWritePlain].contains(self) }

  /// Whether each call is made inside an async function of its own.
  var inFunction: Bool {
    switch self {
    case .mutex, .actor, .awaitWrite, .withWriter: return false
    case .mutexInFunction, .actorInFunction, .awaitWriteInFunction: return true
    case .mutexPlain, .actorPlain, .awaitWritePlain: return false
    }
  }
  /// What this row is compared with: the same shape of call.
  var mutex: Kind { plain ? .mutexPlain : inFunction ? .mutexInFunction : .mutex }
  var actor: Kind { plain ? .actorPlain : inFunction ? .actorInFunction : .actor }
}

actor CounterActor {
  var value = 0
  func increment() { value += 1 }
}

final class SharedMutex: Sendable { let mutex = Mutex(0) }

// One call each, out of line, as a client's request handler or model method makes it.
@inline(never) func incrementInFunction(_ mutex: SharedMutex) async {
  mutex.mutex.withLock { $0 += 1 }
}
@inline(never) func incrementInFunction(_ actor: CounterActor) async { await actor.increment() }
@inline(never) func incrementInFunction(_ box: ThreadSafeSingleWriter<Int>) async {
  await box.write { $0 += 1 }
}

/// What one task saw: its running window and each call's latency.
struct TaskRecord: Sendable {
  var start: UInt64 = 0
  var end: UInt64 = 0
  var latencies = LatencyHistogram()
}

/// One round of `tasks` tasks making `ops` increments each.
func runRound(_ kind: Kind, tasks: Int, ops: Int) async -> (
  seconds: Double, overlap: Double, records: [TaskRecord], total: Int
) {
  let mutex = SharedMutex()
  let actor = CounterActor()
  let box = ThreadSafeSingleWriter(value: 0)
  let records = await withTaskGroup(of: TaskRecord.self) { group in
    for _ in 0..<tasks {
      group.addTask {
        var record = TaskRecord()
        record.start = now()
        if kind.plain {
          // A request handler's loop: the calls and nothing else. Each returns once its
          // write has run, so the last task's end is when every write had run.
          switch kind {
          case .mutexPlain: for _ in 0..<ops { mutex.mutex.withLock { $0 += 1 } }
          case .actorPlain: for _ in 0..<ops { await actor.increment() }
          default: for _ in 0..<ops { await box.write { $0 += 1 } }
          }
          record.end = now()
          return record
        }
        for index in 0..<ops {
          let called = now()
          switch kind {
          case .mutex: mutex.mutex.withLock { $0 += 1 }
          case .actor: await actor.increment()
          case .awaitWrite: await box.write { $0 += 1 }
          case .withWriter: box.withWriter { $0 += 1 }
          case .mutexInFunction: await incrementInFunction(mutex)
          case .actorInFunction: await incrementInFunction(actor)
          case .awaitWriteInFunction: await incrementInFunction(box)
          case .mutexPlain, .actorPlain, .awaitWritePlain: break
          }
          record.latencies.record(now() &- called)
          if index & 255 == 255 { await Task.yield() }
        }
        record.end = now()
        return record
      }
    }
    var all: [TaskRecord] = []
    for await record in group { all.append(record) }
    return all
  }
  let first = records.map(\.start).min()!
  let last = records.map(\.end).max()!
  let window = Double(Int64(records.map(\.end).min()!) - Int64(records.map(\.start).max()!))
  let total: Int
  switch kind {
  case .mutex, .mutexInFunction, .mutexPlain: total = mutex.mutex.withLock { $0 }
  case .actor, .actorInFunction, .actorPlain: total = await actor.value
  case .awaitWrite, .withWriter, .awaitWriteInFunction, .awaitWritePlain: total = box.read
  }
  return (Double(last - first) / 1e9, max(0, window) / Double(last - first), records, total)
}

let arguments = CommandLine.arguments
func option(_ name: String, _ fallback: Int) -> Int {
  arguments.firstIndex(of: name).flatMap { Int(arguments[$0 + 1]) } ?? fallback
}
func text(_ name: String) -> String? {
  arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
let rounds = option("--rounds", 5)
let ops = option("--ops", 100_000)
let plainOps = option("--plain-ops", 500_000)
let loadBefore = Machine.loadAverage

print(
  "Contended increments from tasks on the cooperative pool (\(Machine.cores) cores, load average \(loadBefore)), \(rounds) interleaved rounds of \(ops) per task (plain loops: \(plainOps))"
)
var valid = true
var rowObjects: [[String: Any]] = []
var ratioObjects: [[String: Any]] = []
/// Three decimals: the JSON is read by people and by the docs' figure check.
func rounded(_ value: Double?) -> Any {
  value.map { ($0 * 1_000).rounded() / 1_000 } ?? NSNull()
}
for tasks in [2, 4] {
  // Increments/s of each valid round, by round, to pair rows round by round.
  var rates: [Kind: [Int: Double]] = [:]
  var overlaps: [Kind: [Double]] = [:]
  let latencies = Dictionary(uniqueKeysWithValues: Kind.allCases.map { ($0, LatencyHistogram()) })
  for index in 0..<rounds {
    for kind in Kind.allCases {
      let round = await runRound(kind, tasks: tasks, ops: kind.plain ? plainOps : ops)
      overlaps[kind, default: []].append(round.overlap)
      let calls = tasks * (kind.plain ? plainOps : ops)
      guard round.total == calls else {
        print("LOST WRITES: \(kind.rawValue) counted \(round.total) of \(calls)")
        valid = false
        continue
      }
      guard round.overlap >= 0.5 else {
        print(
          "round skipped: \(kind.rawValue) tasks overlapped for \(Int(round.overlap * 100))% of it")
        continue
      }
      rates[kind, default: [:]][index] = Double(calls) / round.seconds
      for record in round.records { latencies[kind]!.merge(record.latencies) }
    }
  }
  func median(_ kind: Kind) -> Double? { rates[kind].flatMap { Array($0.values).median() } }
  func ratio(_ kind: Kind, _ reference: Kind) -> Double? {
    guard let rate = median(kind), let base = median(reference) else { return nil }
    return rate / base
  }
  /// The ratio in each round where both rows were valid: its spread.
  func roundRatios(_ kind: Kind, _ reference: Kind) -> [Double] {
    guard let mine = rates[kind], let theirs = rates[reference] else { return [] }
    return mine.keys.sorted().compactMap { round in theirs[round].map { mine[round]! / $0 } }
  }
  func spread(_ kind: Kind, _ reference: Kind) -> String {
    guard kind != reference, let value = ratio(kind, reference) else { return "" }
    let each = roundRatios(kind, reference)
    return String(format: "%.2fx", value)
      + (each.isEmpty ? "" : String(format: " (%.2f–%.2f)", each.min()!, each.max()!))
  }
  // Rows in a function are compared with `Mutex` and the actor in a function, plain loops
  // with plain loops.
  print(
    "\n\(tasks) tasks | increments/s | × Mutex | × actor | valid rounds | latency p50 | p99 | p99.9 | max"
  )
  print("--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---:")
  for kind in Kind.allCases {
    let waits = latencies[kind]!
    let quantiles =
      kind.plain
      ? ["", "", "", ""]
      : [0.5, 0.99, 0.999, 1].map { Format.duration(Double(waits.quantile($0))) }
    print(
      "\(kind.rawValue) | \(median(kind).map { String(format: "%.2f M", $0 / 1e6) } ?? "none valid") | "
        + spread(kind, kind.mutex) + " | " + spread(kind, kind.actor)
        + " | \(rates[kind]?.count ?? 0)/\(rounds) | " + quantiles.joined(separator: " | "))
    rowObjects.append([
      "kind": kind.rawValue, "tasks": tasks, "increments_per_s": rounded(median(kind)),
      "valid_rounds": rates[kind]?.count ?? 0, "rounds": rounds,
      "overlap": rounded(overlaps[kind]?.median()),
    ])
    for reference in [kind.mutex, kind.actor] where reference != kind {
      let each = roundRatios(kind, reference)
      ratioObjects.append([
        "kind": kind.rawValue, "over": reference.rawValue, "tasks": tasks,
        "throughput_ratio": rounded(ratio(kind, reference)), "round_min": rounded(each.min()),
        "round_max": rounded(each.max()), "rounds_paired": each.count,
      ])
    }
  }
  // Powers of two of ns (1 µs = 1,024 ns), then exactly 10 ms.
  let names = ["< 1 µs", "1–16 µs", "16 µs–1 ms", "1–10 ms", "> 10 ms"]
  for kind in [Kind.awaitWrite, .awaitWriteInFunction] {
    let counts = latencies[kind]!.counts(splitAt: [1 << 10, 1 << 14, 1 << 20])
    print("\n`\(kind.rawValue)` waits at \(tasks) tasks:", terminator: "")
    for (name, count) in zip(names, counts) { print(" \(name): \(count)", terminator: ";") }
  }
  print()
}
let loadAfter = Machine.loadAverage
print(valid ? "\nvalid: every round exact" : "\nINVALID: writes were lost")
print("Load average after: \(loadAfter)")
print(
  "Ratios: of the medians over valid rounds, and in brackets the least and greatest of the "
    + "rounds' own; a round counts if every task ran during at least half of it.")

if let path = text("--json") {
  let object: [String: Any] = [
    "tool": "AsyncContended", "condition": text("--condition") ?? "as it is",
    "cores": Machine.cores, "load_before": loadBefore, "load_after": loadAfter,
    "rounds": rounds, "ops_per_task": ops, "plain_ops_per_task": plainOps, "exact": valid,
    "rows": rowObjects,
    "ratios": ratioObjects,
  ]
  let data = try! JSONSerialization.data(
    withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
  guard FileManager.default.createFile(atPath: path, contents: data) else {
    fatalError("cannot write \(path)")
  }
}
if !valid { exit(3) }

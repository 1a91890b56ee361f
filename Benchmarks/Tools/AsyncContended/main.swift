// Contended increments from tasks on the cooperative pool: `await write`, against
// `Mutex.withLock` and an actor called from the same tasks. Every task yields every 256
// increments, as async code that awaits anything does, so that all of them progress even
// with more tasks than pool threads. A round counts only if every task was running during
// most of it (the window from the last task's start to the first task's end). Each is
// measured twice: written in the task's loop, and as a client writes it, one call inside
// an async function of its own that the loop calls.
//
//   swift run -c release --package-path Benchmarks AsyncContended [--rounds N] [--ops N]

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

  /// Whether each call is made inside an async function of its own.
  var inFunction: Bool {
    switch self {
    case .mutex, .actor, .awaitWrite, .withWriter: return false
    case .mutexInFunction, .actorInFunction, .awaitWriteInFunction: return true
    }
  }
  /// What this row is compared with: the same shape of call.
  var mutex: Kind { inFunction ? .mutexInFunction : .mutex }
  var actor: Kind { inFunction ? .actorInFunction : .actor }
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
  case .mutex, .mutexInFunction: total = mutex.mutex.withLock { $0 }
  case .actor, .actorInFunction: total = await actor.value
  case .awaitWrite, .withWriter, .awaitWriteInFunction: total = box.read
  }
  return (Double(last - first) / 1e9, max(0, window) / Double(last - first), records, total)
}

let arguments = CommandLine.arguments
func option(_ name: String, _ fallback: Int) -> Int {
  arguments.firstIndex(of: name).flatMap { Int(arguments[$0 + 1]) } ?? fallback
}
let rounds = option("--rounds", 5)
let ops = option("--ops", 100_000)

print(
  "Contended increments from tasks on the cooperative pool (\(ProcessInfo.processInfo.activeProcessorCount) cores), \(rounds) interleaved rounds of \(ops) per task"
)
var valid = true
for tasks in [2, 4] {
  var rates: [Kind: [Double]] = [:]
  let latencies = Dictionary(uniqueKeysWithValues: Kind.allCases.map { ($0, LatencyHistogram()) })
  for _ in 0..<rounds {
    for kind in Kind.allCases {
      let round = await runRound(kind, tasks: tasks, ops: ops)
      guard round.total == tasks * ops else {
        print("LOST WRITES: \(kind.rawValue) counted \(round.total) of \(tasks * ops)")
        valid = false
        continue
      }
      guard round.overlap >= 0.5 else {
        print(
          "round skipped: \(kind.rawValue) tasks overlapped for \(Int(round.overlap * 100))% of it")
        continue
      }
      rates[kind, default: []].append(Double(tasks * ops) / round.seconds)
      for record in round.records { latencies[kind]!.merge(record.latencies) }
    }
  }
  func median(_ kind: Kind) -> Double { (rates[kind] ?? [0]).median()! }
  // Rows in a function are compared with `Mutex` and the actor in a function.
  print("\n\(tasks) tasks | increments/s | × Mutex | × actor | latency p50 | p99 | p99.9 | max")
  print("--- | ---: | ---: | ---: | ---: | ---: | ---: | ---:")
  for kind in Kind.allCases {
    let waits = latencies[kind]!
    let quantiles = [0.5, 0.99, 0.999, 1].map { Format.duration(Double(waits.quantile($0))) }
    print(
      "\(kind.rawValue) | \(String(format: "%.2f M", median(kind) / 1e6)) | "
        + String(
          format: "%.2fx | %.2fx", median(kind) / median(kind.mutex),
          median(kind) / median(kind.actor))
        + " | " + quantiles.joined(separator: " | "))
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
print(valid ? "\nvalid: every round exact" : "\nINVALID: writes were lost")

// What saving state to a file costs: PersistedState against the same container unsaved,
// and the same value kept in SQLite through GRDB, as a user would.
//
//   swift run -c release --package-path Benchmarks Persistence [--rounds 5] [--writes 1000000]
//     [--samples 500] [--folder DIR] [--json FILE]
//
// Rows (see Benchmarks/README.md, Persistence):
// - A tight loop of small writes (`tryWrite`, then `writeNext`) on a
//   ThreadSafeSingleWriter<Settings> unsaved, and on a PersistedState's (its default
//   minimumSaveInterval, and .zero: saving flat out): ns per write and the ratio of
//   throughputs (persisted / unpersisted), rounds alternating, medians.
// - The storm those loops make: saves per second and writes per save.
// - Time from a write to its save: one write, then `saved()`, quiet; and the same while
//   another thread writes as fast as it can. p50 and p99. Also, with no `saved()`, the
//   time from a write to the start of the background save that has it (its `encode`),
//   after a quiet spell and beside the writing thread: what minimumSaveInterval costs.
// - GRDB 7, a DatabaseQueue file with one row updated per write (its default journal and
//   `synchronous`, so each write is durable when it returns): writes per second, and the
//   time of one write, which is its time to durable. p50 and p99.
// With --json, the same figures (ratios included) go to FILE too, for the docs to quote
// (Scripts/check-figures.sh reads Benchmarks/Results/*.json).

import BenchmarkSupport
import Dispatch
import Foundation
import GRDB
import SingleWriter
import SingleWriterPersistence

struct Settings: Codable, Sendable {
  var fontSize = 12
  var theme = "light"
  var counter = 0
}

struct Options: Sendable {
  var rounds = 5
  var writes = 1_000_000
  var samples = 500
  var folder = FileManager.default.temporaryDirectory
    .appendingPathComponent("SingleWriterPersistenceBenchmark-\(getpid())")
  var json: String?
}

let options: Options = {
  var options = Options()
  var arguments = CommandLine.arguments.dropFirst().makeIterator()
  while let argument = arguments.next() {
    guard let value = arguments.next() else { fatalError("\(argument) needs a value") }
    switch argument {
    case "--rounds": options.rounds = Int(value)!
    case "--writes": options.writes = Int(value)!
    case "--samples": options.samples = Int(value)!
    case "--folder": options.folder = URL(fileURLWithPath: value)
    case "--json": options.json = value
    default: fatalError("unknown argument \(argument)")
    }
  }
  return options
}()
try? FileManager.default.removeItem(at: options.folder)
try FileManager.default.createDirectory(at: options.folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: options.folder) }

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// The `q` quantile of `values`, from `LatencyHistogram` like every tool's percentiles.
func percentile(_ values: [UInt64], _ q: Double) -> Double {
  let histogram = LatencyHistogram()
  for value in values { histogram.record(value) }
  return Double(histogram.quantile(q))
}

/// Counts the saves a PersistedState makes: its `encode` runs once per save. Also keeps
/// the newest `counter` a save took.
final class SaveCounter: @unchecked Sendable {
  // Sendable: `count` and `newest` are only touched under `lock`.
  let lock = NSLock()
  var count = 0
  var newest = 0
  func saving(_ value: Settings) {
    lock.withLock {
      count += 1
      newest = max(newest, value.counter)
    }
  }
  var current: Int { lock.withLock { count } }
  var newestCounter: Int { lock.withLock { newest } }
}

func makeStore(
  _ counter: SaveCounter, interval: Duration = .milliseconds(10)
) throws -> PersistedState<Settings> {
  let encoder = JSONEncoder()
  encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
  return try PersistedState(
    file: options.folder.appendingPathComponent("settings-\(UUID().uuidString).json"),
    default: Settings(),
    encode: { value in
      counter.saving(value)
      return try encoder.encode(value)
    },
    decode: { try JSONDecoder().decode(Settings.self, from: $0) },
    minimumSaveInterval: interval)
}

enum Kind: String, CaseIterable {
  case tryWrite, writeNext
}

/// The CPU time this process has used, user and system, in ns: every thread's, the
/// saver's flushes included.
func processCPU() -> Double {
  var usage = rusage()
  getrusage(0, &usage)  // RUSAGE_SELF, 0 everywhere, spelled differently by each libc
  let user = Double(usage.ru_utime.tv_sec) * 1e9 + Double(usage.ru_utime.tv_usec) * 1e3
  let system = Double(usage.ru_stime.tv_sec) * 1e9 + Double(usage.ru_stime.tv_usec) * 1e3
  return user + system
}

/// ns per write of a tight loop of `options.writes` small writes.
@inline(never)
func loop(_ box: ThreadSafeSingleWriter<Settings>, _ kind: Kind) -> Double {
  let start = now()
  switch kind {
  case .tryWrite:
    for _ in 0..<options.writes { _ = box.tryWrite { $0.counter &+= 1 } }
  case .writeNext:
    for _ in 0..<options.writes { box.writeNext { $0.write.counter &+= 1 } }
  }
  return Double(now() - start) / Double(options.writes)
}

/// What `--json` writes.
var report: [String: Any] = [
  "rounds": options.rounds, "writes": options.writes, "samples": options.samples,
  "date": ISO8601DateFormatter().string(from: Date()),
  "loadavgBefore": shell("cat /proc/loadavg"),
]
var loopRows: [[String: Any]] = []

print("# Persistence")
print()
print("`uptime` before: \(shell("uptime"))")
print()
print(
  "\(options.rounds) rounds of \(Format.grouped(Double(options.writes))) writes per row; "
    + "medians over rounds.")
print()

// MARK: Tight loop, persisted against unpersisted

var persistedWritesPerSecond: [(Kind, Double)] = []
print(
  "| Loop | unpersisted | observed by an idle `changes()` | persisted "
    + "| persisted / unpersisted throughput | saves/s | writes per save "
    + "| process CPU per write, unpersisted / persisted "
    + "| persisted, saving flat out (interval 0) | its throughput ratio | its saves/s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for kind in Kind.allCases {
  var plain: [Double] = []
  var observed: [Double] = []
  var persisted: [Double] = []
  var savesPerSecond: [Double] = []
  var writesPerSave: [Double] = []
  var plainCPU: [Double] = []
  var persistedCPU: [Double] = []
  var flatOut: [Double] = []
  var flatOutSavesPerSecond: [Double] = []
  for round in 0..<options.rounds {
    for variant in [0, 1, 2, 3].rotated(by: round) {
      switch variant {
      case 0:
        let cpu = processCPU()
        plain.append(loop(ThreadSafeSingleWriter(value: Settings()), kind))
        plainCPU.append((processCPU() - cpu) / Double(options.writes))
      case 1:
        // What any observer costs a writer: the stream is subscribed and never iterated.
        let box = ThreadSafeSingleWriter(value: Settings())
        let stream = box.changes()
        observed.append(loop(box, kind))
        withExtendedLifetime(stream) {}
      case 2:
        let counter = SaveCounter()
        let store = try makeStore(counter)
        let cpu = processCPU()
        let perWrite = loop(store.state, kind)
        persistedCPU.append((processCPU() - cpu) / Double(options.writes))
        persisted.append(perWrite)
        let saves = counter.current
        savesPerSecond.append(Double(saves) / (perWrite * Double(options.writes) / 1e9))
        writesPerSave.append(Double(options.writes) / Double(max(saves, 1)))
        try await store.saved()
      default:
        let counter = SaveCounter()
        let store = try makeStore(counter, interval: .zero)
        let perWrite = loop(store.state, kind)
        flatOut.append(perWrite)
        flatOutSavesPerSecond.append(
          Double(counter.current) / (perWrite * Double(options.writes) / 1e9))
        try await store.saved()
      }
    }
  }
  let ratio = plain.median()! / persisted.median()!
  let flatOutRatio = plain.median()! / flatOut.median()!
  persistedWritesPerSecond.append((kind, 1e9 / persisted.median()!))
  loopRows.append([
    "loop": kind.rawValue, "unpersistedNs": plain.median()!, "observedNs": observed.median()!,
    "persistedNs": persisted.median()!, "persistedOverUnpersisted": ratio,
    "observedOverUnpersisted": plain.median()! / observed.median()!,
    "savesPerSecond": savesPerSecond.median()!, "writesPerSave": writesPerSave.median()!,
    "goalPass": ratio >= 0.9, "flatOutNs": flatOut.median()!,
    "flatOutOverUnpersisted": flatOutRatio,
    "flatOutSavesPerSecond": flatOutSavesPerSecond.median()!,
  ])
  print(
    "| `\(kind.rawValue)` | \(Format.duration(plain.median()!))/write "
      + "| \(Format.duration(observed.median()!))/write "
      + "| \(Format.duration(persisted.median()!))/write | \(Format.ratio(ratio)) "
      + "| \(Format.grouped(savesPerSecond.median()!)) | \(Format.grouped(writesPerSave.median()!)) "
      + "| \(Format.duration(plainCPU.median()!)) / \(Format.duration(persistedCPU.median()!)) "
      + "| \(Format.duration(flatOut.median()!))/write | \(Format.ratio(flatOutRatio)) "
      + "| \(Format.grouped(flatOutSavesPerSecond.median()!)) |")
}
print()

// MARK: Time from a write to its save

/// Another thread writing `store` as fast as it can, from its start until `stop()`.
final class Storm: Sendable {
  let stopped = Locked(false)
  let done = DispatchSemaphore(value: 0)

  init(_ store: PersistedState<Settings>) {
    Thread.detachNewThread { [stopped, done] in
      while !stopped.value { store.state.writeNext { $0.write.fontSize &+= 1 } }
      done.signal()
    }
  }

  func stop() {
    stopped.value = true
    done.wait()
  }
}

/// `options.samples` times: one write, then `saved()`; while `storm`, another thread
/// writes as fast as it can throughout.
/// Also returns the process CPU time per sample (write, save, flush), quiet only.
func writeToSave(storm: Bool) async throws -> (samples: [UInt64], cpu: Double) {
  let store = try makeStore(SaveCounter())
  let writer = storm ? Storm(store) : nil
  var samples: [UInt64] = []
  let cpu = processCPU()
  for sample in 1...options.samples {
    let start = now()
    store.state.writeNext { $0.write.counter &+= 1 }
    try await store.saved()
    samples.append(now() - start)
    // A sanity check, outside the time: the file holds this write.
    let saved = try JSONDecoder().decode(Settings.self, from: Data(contentsOf: store.file))
    precondition(saved.counter >= sample, "saved() returned before its write was saved")
  }
  let cpuPerSample = (processCPU() - cpu) / Double(options.samples)
  writer?.stop()
  return (samples, cpuPerSample)
}

/// `options.samples` times, with no `saved()`: one write of a new `counter`, then the time
/// until a background save takes a value that has it (its `encode` runs). Quiet, the
/// samples are a save interval and a millisecond apart, so that each write comes after
/// a quiet spell; beside a storm, back to back.
func writeToBackgroundSave(storm: Bool) async throws -> [UInt64] {
  let counter = SaveCounter()
  let store = try makeStore(counter)
  let writer = storm ? Storm(store) : nil
  var samples: [UInt64] = []
  for sample in 1...options.samples {
    if !storm { try await Task.sleep(for: .milliseconds(11)) }
    let start = now()
    store.state.writeNext { $0.write.counter = sample }
    while counter.newestCounter < sample { await Task.yield() }
    samples.append(now() - start)
  }
  writer?.stop()
  try await store.saved()
  return samples
}

final class Locked<Value: Sendable>: @unchecked Sendable {
  // Sendable: `stored` is only touched under `lock`.
  let lock = NSLock()
  var stored: Value
  init(_ value: Value) { stored = value }
  var value: Value {
    get { lock.withLock { stored } }
    set { lock.withLock { stored = newValue } }
  }
}

print("| Time from a write to durable | p50 | p99 | samples | process CPU per sample |")
print("| --- | --- | --- | --- | --- |")
var durableRows: [[String: Any]] = []
for storm in [false, true] {
  let (samples, cpu) = try await writeToSave(storm: storm)
  durableRows.append([
    "storm": storm, "p50Ns": percentile(samples, 0.5), "p99Ns": percentile(samples, 0.99),
  ])
  print(
    "| PersistedState, write then `saved()`\(storm ? ", beside a thread writing flat out" : ", quiet") "
      + "| \(Format.duration(percentile(samples, 0.5))) | \(Format.duration(percentile(samples, 0.99))) "
      + "| \(samples.count) | \(storm ? "" : Format.duration(cpu)) |")
}

for storm in [false, true] {
  let samples = try await writeToBackgroundSave(storm: storm)
  durableRows.append([
    "storm": storm, "backgroundSaveStart": true, "p50Ns": percentile(samples, 0.5),
    "p99Ns": percentile(samples, 0.99),
  ])
  print(
    "| PersistedState, write with no `saved()` to the start of its background save"
      + "\(storm ? ", beside a thread writing flat out" : ", after a quiet spell") "
      + "| \(Format.duration(percentile(samples, 0.5))) | \(Format.duration(percentile(samples, 0.99))) "
      + "| \(samples.count) |  |")
}

// MARK: GRDB

let database = try DatabaseQueue(
  path: options.folder.appendingPathComponent("settings.sqlite").path)
try database.write { db in
  try db.execute(
    sql: """
      CREATE TABLE settings (id INTEGER PRIMARY KEY, fontSize INTEGER, theme TEXT, counter INTEGER);
      INSERT INTO settings VALUES (1, 12, 'light', 0);
      """)
}
let journal = try database.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") ?? "?" }
let synchronous = try database.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 }
var grdb: [UInt64] = []
let grdbCPU = processCPU()
let grdbStart = now()
for _ in 0..<options.samples {
  let start = now()
  try database.write { db in
    try db.execute(sql: "UPDATE settings SET counter = counter + 1 WHERE id = 1")
  }
  grdb.append(now() - start)
}
let grdbSeconds = Double(now() - grdbStart) / 1e9
let grdbCPUPerWrite = (processCPU() - grdbCPU) / Double(options.samples)
print(
  "| GRDB `DatabaseQueue.write`, one row updated (journal \(journal), synchronous \(synchronous)): "
    + "durable when it returns | \(Format.duration(percentile(grdb, 0.5))) "
    + "| \(Format.duration(percentile(grdb, 0.99))) | \(grdb.count) | \(Format.duration(grdbCPUPerWrite)) |"
)
print()
print("| Writes per second | |")
print("| --- | --- |")
for (kind, rate) in persistedWritesPerSecond {
  print("| PersistedState, `\(kind.rawValue)` in a tight loop | \(Format.grouped(rate)) |")
}
print(
  "| GRDB, one write (a transaction) per update "
    + "| \(Format.grouped(Double(options.samples) / grdbSeconds)) |")
print()
print("`uptime` after: \(shell("uptime"))")

if let path = options.json {
  report["loops"] = loopRows
  report["writeToDurable"] = durableRows
  report["grdb"] = [
    "p50Ns": percentile(grdb, 0.5), "p99Ns": percentile(grdb, 0.99),
    "writesPerSecond": Double(options.samples) / grdbSeconds,
  ]
  report["loadavgAfter"] = shell("cat /proc/loadavg")
  let data = try JSONSerialization.data(
    withJSONObject: report, options: [.prettyPrinted, .sortedKeys])
  guard FileManager.default.createFile(atPath: path, contents: data) else {
    FileHandle.standardError.write(Data("Persistence: cannot write \(path)\n".utf8))
    exit(2)
  }
}

func shell(_ command: String) -> String {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/bin/sh")
  process.arguments = ["-c", command]
  let pipe = Pipe()
  process.standardOutput = pipe
  try? process.run()
  process.waitUntilExit()
  return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    .trimmingCharacters(in: .whitespacesAndNewlines)
}

// Many tasks on the default cooperative pool, quiet or beside other processes that want
// the CPU (issue 30): a token refresh and small writes, at 8, 64 and 256 tasks, over
// `ThreadSafeSingleWriter`, an actor and (small writes) `Mutex`, in interleaved rounds.
//
//   swift run -c release --package-path Benchmarks Scaling [--rounds 5] [--tasks 8,64,256]
//     [--sample-ms 300] [--only refresh|writes] [--condition quiet] [--json FILE] [--strict]
//   Scaling report [--strict] FILE...     # one report from the runs' JSON files
//
// Benchmarks/scaling.sh runs it quiet, then beside one busy loop per core, and prints the
// report of both. See Benchmarks/README.md, Scaling.

import BenchmarkSupport
import Foundation

struct Options {
  var rounds = 5
  var tasks = [8, 64, 256]
  var sampleMs = 300.0
  var workloads = WorkloadKind.allCases
  var condition = "quiet"
  var json: String?
  var minOverlap = 0.5
  var strict = false
  /// `report` mode: the JSON files to report on.
  var reportFiles: [String]?
}

let usage = """
  usage: Scaling [--rounds 5] [--tasks 8,64,256] [--sample-ms 300] [--only refresh|writes]
                 [--condition NAME] [--json FILE] [--min-overlap 0.5]
                 [--strict (exit 1 unless valid and every goal passes)]
         Scaling report [--strict] FILE...   (one report from the runs' --json files)
  exit status: 3 if a write was lost, ran during a fetch, or two fetches overlapped
  """

func parseOptions() -> Options {
  var options = Options()
  var arguments = ArgumentReader(tool: "Scaling", usage: usage)
  while let argument = arguments.next() {
    switch argument {
    case "report" where options.reportFiles == nil: options.reportFiles = []
    case "--rounds": options.rounds = Int(arguments.value(of: argument)) ?? 0
    case "--tasks": options.tasks = arguments.list(of: argument) { Int($0) }
    case "--sample-ms": options.sampleMs = Double(arguments.value(of: argument)) ?? 0
    case "--only":
      options.workloads = arguments.list(of: argument) { WorkloadKind(rawValue: String($0)) }
    case "--condition": options.condition = arguments.value(of: argument)
    case "--json": options.json = arguments.value(of: argument)
    case "--min-overlap": options.minOverlap = Double(arguments.value(of: argument)) ?? -1
    case "--strict": options.strict = true
    default:
      guard options.reportFiles != nil, !argument.hasPrefix("-") else {
        arguments.fail("unknown argument \(argument)")
      }
      options.reportFiles!.append(argument)
    }
  }
  guard options.rounds >= 1, !options.tasks.isEmpty, options.tasks.allSatisfy({ $0 >= 1 }),
    options.sampleMs > 0, !options.workloads.isEmpty, (0...1).contains(options.minOverlap),
    options.reportFiles?.isEmpty != true
  else { arguments.fail("bad value") }
  return options
}

/// Runs every row once a round, in an order rotated by one each round, each task count in
/// turn.
func measure(_ options: Options) -> RunResult {
  let terms = TokenTerms(lifetimeNs: 5_000_000, fetchMicroseconds: 1_000)
  let loadBefore = Machine.loadAverage
  let keys = options.tasks.map { tasks in
    options.workloads.flatMap { workload in
      containers(workload).map { RowKey(workload: workload, container: $0, tasks: tasks) }
    }
  }
  let rows = Dictionary(uniqueKeysWithValues: keys.joined().map { ($0, RowAccumulator($0)) })
  for round in 0..<options.rounds {
    for key in keys.flatMap({ $0.rotated(by: round) }) {
      let (tasks, ms) = (key.tasks, options.sampleMs)
      // Each call names its type, so that every sample runs code specialized for it.
      let sample =
        switch (key.workload, key.container) {
        case (.refresh, .singleWriter):
          runSample(SingleWriterRefresh.self, tasks: tasks, milliseconds: ms, terms: terms)
        case (.refresh, _):
          runSample(ActorRefresh.self, tasks: tasks, milliseconds: ms, terms: terms)
        case (.writes, .singleWriter):
          runSample(SingleWriterWrites.self, tasks: tasks, milliseconds: ms, terms: terms)
        case (.writes, .actor):
          runSample(ActorWrites.self, tasks: tasks, milliseconds: ms, terms: terms)
        case (.writes, .mutex):
          runSample(MutexWrites.self, tasks: tasks, milliseconds: ms, terms: terms)
        }
      let valid = sample.isValid(minOverlap: options.minOverlap)
      rows[key]!.add(sample, valid: valid)
      if !sample.isCorrect {
        print(
          "**\(key.workload.title), \(key.tasks) tasks, \(key.container.title):** "
            + "\(sample.lost) lost, \(sample.staleWrites) during a fetch, "
            + "at most \(sample.maxInFlight) fetches in flight")
      }
    }
    FileHandle.standardError.write(Data("Scaling: round \(round + 1) of \(options.rounds)\n".utf8))
  }
  return RunResult(
    condition: options.condition, date: ISO8601DateFormatter().string(from: Date()),
    cores: Machine.cores, loadBefore: loadBefore, loadAfter: Machine.loadAverage,
    rounds: options.rounds, sampleMs: options.sampleMs,
    lifetimeMs: Double(terms.lifetimeNs) / 1e6, fetchMs: Double(terms.fetchMicroseconds) / 1e3,
    minOverlap: options.minOverlap, rows: keys.joined().map { rows[$0]!.result })
}

let options = parseOptions()
let runs: [RunResult]
if let files = options.reportFiles {
  runs = files.map { file in
    guard let data = FileManager.default.contents(atPath: file),
      let run = try? JSONDecoder().decode(RunResult.self, from: data)
    else {
      FileHandle.standardError.write(Data("Scaling: cannot read a run from \(file)\n".utf8))
      exit(2)
    }
    return run
  }
} else {
  let run = measure(options)
  runs = [run]
  if let path = options.json {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    guard FileManager.default.createFile(atPath: path, contents: try! encoder.encode(run)) else {
      FileHandle.standardError.write(Data("Scaling: cannot write \(path)\n".utf8))
      exit(2)
    }
  }
}
let goalsPass = printReport(runs)
if !runs.allSatisfy(\.isCorrect) { exit(3) }
if options.strict && !(goalsPass && runs.allSatisfy(\.isValid)) { exit(1) }

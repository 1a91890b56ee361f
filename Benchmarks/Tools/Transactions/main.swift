// Long transactions while others read: the job ThreadSafeSingleWriter is built for.
//
//   swift run -c release --package-path Benchmarks Transactions [--rounds 5] [--readers 1,2]
//     [--read-gap-ns 0,1000] [--pinned yes,no] [--sample-ms 300] [--json FILE] [--strict]
//
// A writer thread runs transactions of 100 increments with about 5 µs of work between
// them, and stays the only writer throughout each one; 1 or 2 reader threads read the
// field as fast as they can, or with some work between reads. Every variant runs in every round, in a rotated order, and
// every figure is a ratio to `Mutex` (held for the transaction) from the same run. See
// Benchmarks/README.md, Transactions.

import BenchmarkSupport
import Foundation

struct Options {
  var rounds = 5
  var readers = [1, 2]
  /// Work each reader does between two reads, in ns: none (as fast as it can), or about
  /// what a request handler does around its read.
  var readGapsNs = [0.0, 1_000.0]
  /// Pin the writer to a core of its own and the readers to the others (Linux), as on a
  /// machine with a free core for each; and not, as on a machine whose cores are shared.
  var pinned = [true, false]
  var sampleMs = 300.0
  var writes = 100
  var workNs = 5_000.0
  var json: String?
  var strict = false
  var cases: Set<String> = ["transactions", "refresh", "cost"]
}

func parseOptions() -> Options {
  var options = Options()
  var arguments = ArgumentReader(
    tool: "Transactions",
    usage: """
      usage: Transactions [--rounds 5] [--readers 1,2] [--read-gap-ns 0,1000] [--pinned yes,no]
                          [--sample-ms 300] [--writes 100]
                          [--work-ns 5000] [--json FILE] [--only transactions|refresh|cost]
                          [--strict (exit 1 unless every goal passes)]
      """)
  while let argument = arguments.next() {
    switch argument {
    case "--rounds": options.rounds = Int(arguments.value(of: argument)) ?? 0
    case "--readers": options.readers = arguments.list(of: argument) { Int($0) }
    case "--pinned":
      options.pinned = arguments.list(of: argument) {
        $0 == "yes" ? true : $0 == "no" ? false : nil
      }
    case "--read-gap-ns": options.readGapsNs = arguments.list(of: argument) { Double($0) }
    case "--sample-ms": options.sampleMs = Double(arguments.value(of: argument)) ?? 0
    case "--writes": options.writes = Int(arguments.value(of: argument)) ?? 0
    case "--work-ns": options.workNs = Double(arguments.value(of: argument)) ?? -1
    case "--json": options.json = arguments.value(of: argument)
    case "--strict": options.strict = true
    case "--only": options.cases = [arguments.value(of: argument)]
    default: arguments.fail("unknown argument \(argument)")
    }
  }
  guard options.rounds >= 1, !options.readers.isEmpty, options.readers.allSatisfy({ $0 >= 1 }),
    !options.readGapsNs.isEmpty, !options.pinned.isEmpty,
    options.readGapsNs.allSatisfy({ $0 >= 0 }),
    options.sampleMs > 0, options.writes >= 1, options.workNs >= 0,
    options.cases.isSubset(of: ["transactions", "refresh", "cost"])
  else { arguments.fail("bad value") }
  return options
}

let options = parseOptions()
var report: [String: Any] = [
  "date": ISO8601DateFormatter().string(from: Date()),
  "cores": ProcessInfo.processInfo.activeProcessorCount,
]
var allGoalsPass = true
var anyLost = false

if options.cases.contains("transactions") {
  let result = runTransactions(options)
  report["transactions"] = result.json
  allGoalsPass = allGoalsPass && result.goalsPass
  anyLost = anyLost || result.lost
}
if options.cases.contains("refresh") {
  let result = runRefresh(options)
  report["refresh"] = result.json
  allGoalsPass = allGoalsPass && result.goalsPass
  anyLost = anyLost || result.lost
}

if options.cases.contains("cost") {
  let result = runCost(options)
  report["cost"] = result.json
  allGoalsPass = allGoalsPass && result.goalsPass
}

if let path = options.json {
  let data = try! JSONSerialization.data(
    withJSONObject: report, options: [.prettyPrinted, .sortedKeys])
  guard FileManager.default.createFile(atPath: path, contents: data) else {
    FileHandle.standardError.write(Data("Transactions: cannot write \(path)\n".utf8))
    exit(2)
  }
  print("\nwrote \(path)")
}
if anyLost { exit(3) }
if options.strict && !allGoalsPass { exit(1) }

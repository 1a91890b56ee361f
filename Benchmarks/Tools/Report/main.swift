// Turns what the benchmarks wrote into what README.md shows:
//
//   Report table RESULTS_DIR... [--check BASELINE | --update BASELINE] [--tolerance 0.5]
//   Report chart TRANSACTIONS_JSON SVG [--readers 1]
//
// `table` reads package-benchmark's `--format histogramSamples` export of one or more runs
// (one directory per run), takes each row's median sample, divides it by the operations in a
// sample, and prints ns/op and ratios against references measured in the same run; with
// several runs, every figure is the median over them. `--check` exits 1 when a checked ratio
// grew past the tolerance (RATIO_TOLERANCE, default 0.5: +50%) or an allocation count grew;
// `--update` rewrites the baseline. `chart` draws Results/where-it-wins.svg from
// Tools/Transactions' JSON. compare.sh runs both; see Benchmarks/README.md.

import BenchmarkSupport
import Foundation

let usage = """
  usage: Report table RESULTS_DIR... [--check BASELINE | --update BASELINE] [--tolerance 0.5]
         Report chart TRANSACTIONS_JSON SVG [--readers 1]
  """

/// The baseline file: the checked rows' ratios to their suite's Mutex and mallocs/op.
struct Baseline: Codable {
  var about: String?
  var rows: [String: BaselineRow]
}

func table(_ arguments: [String]) throws -> Int32 {
  var reader = ArgumentReader(tool: "Report", usage: usage, arguments: arguments)
  var directories: [String] = []
  var check: String?
  var update: String?
  var tolerance = Double(ProcessInfo.processInfo.environment["RATIO_TOLERANCE"] ?? "") ?? 0.5
  while let argument = reader.next() {
    switch argument {
    case "--check": check = reader.value(of: argument)
    case "--update": update = reader.value(of: argument)
    case "--tolerance":
      tolerance = Double(reader.value(of: argument)) ?? -1
    default:
      if argument.hasPrefix("--") { reader.fail("unknown argument \(argument)") }
      directories.append(argument)
    }
  }
  guard !directories.isEmpty, tolerance >= 0 else { reader.fail("bad value") }

  let runs = try directories.map(loadRun)
  guard runs.contains(where: { !$0.isEmpty }) else {
    FileHandle.standardError.write(
      Data("no \(sampleFileSuffix) files in \(directories.joined(separator: " "))\n".utf8))
    return 1
  }
  let ratios = RatioTable(runs: runs)
  print(ratios.text, terminator: "")

  var status: Int32 = 0
  if let check {
    let baseline = try JSONDecoder().decode(
      Baseline.self, from: Data(contentsOf: URL(fileURLWithPath: check)))
    let failures = ratios.regressions(against: baseline.rows, tolerance: tolerance)
    let percent = String(format: "%.0f%%", tolerance * 100)
    print()
    if failures.isEmpty {
      print(
        "Ratios within +\(percent) of \(URL(fileURLWithPath: check).lastPathComponent); "
          + "allocation counts unchanged.")
    } else {
      print("REGRESSED (tolerance +\(percent) on ratios):")
      for failure in failures { print("- \(failure)") }
      status = 1
    }
  }
  if let update {
    let baseline = Baseline(
      about: "Ratios to the Mutex.withLock increment of the same suite and run, and mallocs "
        + "per operation, from Benchmarks/compare.sh --update. compare.sh --check fails when "
        + "a ratio grows by more than the tolerance (default +50%) or an allocation count "
        + "grows.",
      rows: ratios.current)
    try baselineJSON(baseline).write(toFile: update, atomically: true, encoding: .utf8)
    print("\nwrote \(update)")
  }
  return status
}

/// `baseline` as the file has always been written (by Python's `json.dump` with `indent=2`
/// and sorted keys), so that an update changes only the figures that moved.
func baselineJSON(_ baseline: Baseline) -> String {
  func string(_ text: String) -> String {
    var quoted = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": quoted += "\\\""
      case "\\": quoted += "\\\\"
      case "\n": quoted += "\\n"
      case "\t": quoted += "\\t"
      case _ where scalar.value < 0x20: quoted += String(format: "\\u%04x", scalar.value)
      default: quoted.unicodeScalars.append(scalar)
      }
    }
    return quoted + "\""
  }
  let rows = baseline.rows.sorted { codePointOrder($0.key, $1.key) }.map { name, row in
    var fields = [(String, Double)]()
    if let mallocs = row.mallocsPerOp { fields.append(("mallocsPerOp", mallocs)) }
    fields.append(("ratioToMutex", row.ratioToMutex))
    let body = fields.map { "      \(string($0.0)): \($0.1)" }.joined(separator: ",\n")
    return "    \(string(name)): {\n\(body)\n    }"
  }
  return "{\n  \"about\": \(string(baseline.about ?? "")),\n  \"rows\": {\n"
    + rows.joined(separator: ",\n") + "\n  }\n}\n"
}

func drawChart(_ arguments: [String]) throws -> Int32 {
  var reader = ArgumentReader(tool: "Report", usage: usage, arguments: arguments)
  var paths: [String] = []
  var readers = 1
  while let argument = reader.next() {
    switch argument {
    case "--readers": readers = Int(reader.value(of: argument)) ?? 0
    default:
      if argument.hasPrefix("--") { reader.fail("unknown argument \(argument)") }
      paths.append(argument)
    }
  }
  guard paths.count == 2, readers >= 1 else { reader.fail("bad value") }
  let report = try JSONDecoder().decode(
    TransactionsReport.self, from: Data(contentsOf: URL(fileURLWithPath: paths[0])))
  try chart(report, readers: readers).write(toFile: paths[1], atomically: true, encoding: .utf8)
  return 0
}

let command = CommandLine.arguments.dropFirst().first
let rest = Array(CommandLine.arguments.dropFirst(2))
do {
  switch command {
  case "table": exit(try table(rest))
  case "chart": exit(try drawChart(rest))
  case "-h", "--help": ArgumentReader(tool: "Report", usage: usage).fail(nil)
  default:
    ArgumentReader(tool: "Report", usage: usage).fail(
      command.map { "unknown command \($0)" } ?? "table or chart?")
  }
} catch {
  FileHandle.standardError.write(Data("Report: \(error)\n".utf8))
  exit(1)
}

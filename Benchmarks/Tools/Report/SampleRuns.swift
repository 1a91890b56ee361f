// Reading package-benchmark's `--format histogramSamples` export: one TSV per benchmark
// and metric, one line per sample.

import BenchmarkSupport
import Foundation

/// package-benchmark's `.mega`: every row runs 1M operations per sample unless its name
/// says otherwise with "(N ops/sample)".
let defaultOpsPerSample = 1_000_000.0
let sampleFileSuffix = ".histogram.samples.tsv"

/// The metrics the table reads, by the name package-benchmark gives their files.
enum Metric: String {
  case wallClock
  case mallocCountTotal
}

/// Units package-benchmark writes at the end of a samples file's header, e.g.
/// "Malloc (total) (K)".
let unitScales: [String: Double] = [
  "ns": 1, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9, "K": 1e3, "M": 1e6, "G": 1e9,
]

/// One benchmark of one run: each sample divided by the operations in a sample.
struct SampleRow {
  var target = ""
  var perOp: [Metric: [Double]] = [:]
}

/// The "(N ops/sample)" tag of a row name, with the spaces before it.
var opsTag: Regex<(Substring, Substring)> { /\s*\((\d+) ops\/sample\)/ }

/// The row name without its "(N ops/sample)" tag.
func displayName(_ name: String) -> String {
  name.replacing(opsTag, with: "")
}

/// Every benchmark's samples in one run's directory, by row name.
func loadRun(_ directory: String) throws -> [String: SampleRow] {
  var rows: [String: SampleRow] = [:]
  let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
  for file in files where file.hasSuffix(sampleFileSuffix) {
    // <baseline>.<target>.<name>.<metric>; the name may contain dots.
    let stem = file.dropLast(sampleFileSuffix.count)
    let parts = stem.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
    guard parts.count == 3, let dot = parts[2].lastIndex(of: "."),
      let metric = Metric(rawValue: String(parts[2][parts[2].index(after: dot)...]))
    else { continue }
    // package-benchmark turns spaces and slashes into "_"; names here have no "_", and
    // their only "/" is in "ops/sample".
    let name = parts[2][..<dot].replacingOccurrences(of: "_", with: " ")
      .replacingOccurrences(of: "ops sample)", with: "ops/sample)")
    let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    let scale = unit(ofHeader: String(lines.first ?? "")).flatMap { unitScales[$0] } ?? 1
    let samples = lines.dropFirst().compactMap { line in
      Double(line.trimmingCharacters(in: .whitespaces)).map { $0 * scale }
    }
    let ops = name.firstMatch(of: opsTag).flatMap { Double($0.1) } ?? defaultOpsPerSample
    rows[name, default: SampleRow()].perOp[metric] = samples.map { $0 / ops }
    rows[name]!.target = String(parts[1])
  }
  return rows
}

/// The unit in the last parentheses of a header line, as in "Time (wall clock) (ns)".
func unit(ofHeader header: String) -> String? {
  header.firstMatch(of: /\(([^()]*)\)\s*$/).map { String($0.1) }
}

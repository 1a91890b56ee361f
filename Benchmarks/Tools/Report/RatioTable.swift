// The suites' table: ns/op and ratios against references measured in the same run, the
// design's goals, and the regression check against ratios-baseline.json.

import BenchmarkSupport
import Foundation

/// Sections in the order the table shows them.
let sections = ["Write", "Read", "Queue", "Append", "Reentrant", "Store", "Confined", "Ref"]

/// The Mutex increment of the Write suite. Every other suite measures its own, named
/// "Ref: Mutex.withLock (<Suite> suite)", and its rows' "× Mutex" divides by that one: a
/// reference from the same process, moments apart, moves with the same load.
let writeMutex = "Write: Mutex.withLock"
let alloc = "Write: alloc+free of a small class"
let mutexRead = "Read: Mutex.withLock { $0 }"

/// The suite named in a "Ref: Mutex.withLock (<Suite> suite)" row.
func suiteOfMutexReference(_ name: String) -> String? {
  name.wholeMatch(of: /Ref: Mutex\.withLock \((\w+) suite\)/).map { String($0.1) }
}

/// Rows in the order the table shows them; rows not listed follow in name order.
let order = [
  writeMutex,
  "Write: NSLock",
  "Write: NSRecursiveLock",
  "Write: DispatchQueue.sync (serial)",
  "Write: actor method, awaited from one Task",
  alloc,
  "Write: alloc+free with a weak store+load",
  "Write: SingleWriter checkout+write+release",
  "Write: SingleWriter writeNext (free)",
  "Write: SingleWriter tryWrite",
  "Write: ThreadSafeSingleWriter checkout+write+release",
  "Write: ThreadSafeSingleWriter writeNext (free)",
  "Write: ThreadSafeSingleWriter tryWrite",
  "Write: ThreadSafeSingleWriter withWriter",
  "Write: ThreadSafeSingleWriter await write, one Task",
  "Write: article checkout+write+release",
  "Write: article writeNext (free)",
  mutexRead,
  "Read: SingleWriter.read",
  "Read: ThreadSafeSingleWriter.read",
  "Read: article read",
]

/// The row each row is compared with in the "× ref" column (time ratio, lower is better),
/// by pattern on the row name.
func reference(for name: String) -> String? {
  let section = String(name.split(separator: ":", maxSplits: 1)[0])
  if name.contains("(reference)") || section == "Ref" { return nil }
  switch section {
  case "Write": return writeMutex
  case "Read": return mutexRead
  case "Queue": return "Queue: SingleWriter 1M writeNext queued, one release"
  case "Append":
    guard let size = name.firstMatch(of: /(\d+[kM]) elements/)?.1 else { return nil }
    return "Append: Mutex.withLock, \(size) elements"
  case "Reentrant":
    guard let depth = name.firstMatch(of: /(\d) deep/)?.1 else { return nil }
    return "Reentrant: NSRecursiveLock, \(depth) deep"
  case "Store":
    // The operation follows the backing, whose name contains "read".
    let operation =
      name.contains("BarrierStore(")
      ? String(name.split(separator: ")", maxSplits: 1, omittingEmptySubsequences: false).last!)
      : name
    if operation.trimmingCharacters(in: .whitespaces) == "value(forKey:)"
      || operation.hasSuffix("read")
    {
      return "Store: NSLock + Dictionary read"
    }
    return "Store: NSLock + Dictionary write"
  case "Confined":
    if name.hasPrefix("Confined: tell") { return "Confined: actor method, awaited (reference)" }
    return "Confined: actor get, awaited from a Task (reference)"
  default: return nil
  }
}

/// What follows the section, as "Mutex.withLock { $0 }" in "Read: Mutex.withLock { $0 }".
func afterSection(_ name: String) -> String {
  name.range(of: ": ").map { String(name[$0.upperBound...]) } ?? name
}

/// A goal from the design: `row` time over `reference` time at most `limit`. The contended
/// goals are checked by Tools/Contended, which compare.sh runs after the table.
struct Goal {
  let label: String
  let row: String
  let reference: String
  let limit: Double
}

/// The goals from the design, per operation: the reference, then the limits for SingleWriter
/// and ThreadSafeSingleWriter where the design sets one; `%@` in the row stands for the type.
let goals: [Goal] =
  [
    ("checkout", "Write: %@ checkout+write+release", alloc, "one alloc+free", 1.0, nil),
    ("writeNext (free)", "Write: %@ writeNext (free)", writeMutex, "Mutex", 1.0, 1.2),
    ("read", "Read: %@.read", mutexRead, "Mutex read", 0.5, 0.6),
    ("tryWrite", "Write: %@ tryWrite", writeMutex, "Mutex", 0.5, 1.3),
    ("withWriter", "Write: %@ withWriter", writeMutex, "Mutex", nil, 1.3),
  ].flatMap { (operation: String, row: String, reference, referenceLabel, plain, threadSafe) in
    [("", "SingleWriter", plain), ("thread-safe ", "ThreadSafeSingleWriter", threadSafe)]
      .compactMap { prefix, type, limit -> Goal? in
        guard let limit else { return nil }
        return Goal(
          label: "\(prefix)\(operation) ≤ \(String(format: "%g", limit))× \(referenceLabel)",
          row: row.replacingOccurrences(of: "%@", with: type), reference: reference, limit: limit)
      }
  }
  + ["1k", "100k", "1M"].flatMap { size in
    [("", "SingleWriter"), ("thread-safe ", "ThreadSafeSingleWriter")].map { prefix, type in
      Goal(
        label: "\(prefix)append \(size) ≤ 1× Mutex append",
        row: "Append: \(type) held writer, \(size) elements",
        reference: "Append: Mutex.withLock, \(size) elements", limit: 1.0)
    }
  }

/// Rows the regression check covers: this package's own types. References and the article's
/// code are context, shown but not checked. (Contended figures come from Tools/Contended,
/// with their own validity checks, and are not in the baseline.)
func isChecked(_ name: String) -> Bool {
  ["SingleWriter", "ReentrantMutex", "BarrierStore", "Confined: tell", "Confined: ask"]
    .contains { name.contains($0) }
}

/// Checked for allocations only: each `ask` waits for a queue thread to wake up, so its time
/// follows the scheduler more than the code.
let allocationsOnly: Set = ["Confined: ask"]

/// One figure of the baseline file: a row's ratio to its suite's Mutex, and its mallocs/op.
struct BaselineRow: Codable {
  var ratioToMutex: Double
  var mallocsPerOp: Double?
}

/// The runs' figures: per run, the median sample of each row; over runs, the median of those,
/// so one disturbed run cannot move the table much.
struct RatioTable {
  let perRunNs: [[String: Double]]
  let ns: [String: Double]
  let mallocs: [String: Double]
  let targets: [String: String]
  let mutexOfTarget: [String: String]

  init(runs: [[String: SampleRow]]) {
    func runMedians(_ rows: [String: SampleRow], _ metric: Metric) -> [String: Double] {
      rows.compactMapValues { $0.perOp[metric]?.median() }
    }
    func overRuns(_ perRun: [[String: Double]]) -> [String: Double] {
      let names = Set(perRun.flatMap(\.keys))
      return Dictionary(
        uniqueKeysWithValues: names.map { name in
          (name, perRun.compactMap { $0[name] }.median()!)
        })
    }
    perRunNs = runs.map { runMedians($0, .wallClock) }
    ns = overRuns(perRunNs)
    mallocs = overRuns(runs.map { runMedians($0, .mallocCountTotal) })
    var targets: [String: String] = [:]
    for run in runs {
      for (name, row) in run.sorted(by: { codePointOrder($0.key, $1.key) }) {
        targets[name] = row.target
      }
    }
    self.targets = targets
    var mutexOfTarget = ["Write": writeMutex]
    for name in ns.keys.sorted(by: codePointOrder) {
      if let suite = suiteOfMutexReference(name) { mutexOfTarget[suite] = name }
    }
    self.mutexOfTarget = mutexOfTarget
  }

  /// The Mutex increment measured in `name`'s suite.
  func mutex(for name: String) -> String {
    targets[name].flatMap { mutexOfTarget[$0] } ?? writeMutex
  }

  /// The median over runs of `name`'s time over `reference`'s in the same run.
  func ratio(_ name: String, _ reference: String?) -> Double? {
    guard let reference else { return nil }
    return perRunNs.compactMap { run in
      guard let value = run[name], let base = run[reference], base > 0 else { return nil }
      return value / base
    }.median()
  }

  /// Every row, in the table's order.
  var names: [String] {
    func key(_ name: String) -> (Int, Int) {
      let section = String(name.split(separator: ":", maxSplits: 1)[0])
      return (
        sections.firstIndex(of: section) ?? sections.count,
        order.firstIndex(of: name) ?? order.count
      )
    }
    return ns.keys.sorted { left, right in
      let (a, b) = (key(left), key(right))
      return a != b ? a < b : codePointOrder(left, right)
    }
  }

  /// The table of rows, then the table of goals.
  var text: String {
    var table = MarkdownTable(
      [
        "Path", "ns/op (median)", "× Mutex (same suite)", "× 1 alloc", "× ref", "ref",
        "mallocs/op",
      ],
      ["---", "---:", "---:", "---:", "---:", "---", "---:"])
    for name in names {
      let reference = reference(for: name)
      let perAlloc = name.contains("checkout") ? ratio(name, alloc) : nil
      // Write rows' reference is Mutex, already in its own column.
      let toReference =
        [nil, name, mutex(for: name)].contains(reference) ? nil : ratio(name, reference)
      let referenceLabel = toReference == nil ? "" : afterSection(displayName(reference!))
      table.rows.append([
        displayName(name), Format.number(ns[name]), Format.number(ratio(name, mutex(for: name))),
        Format.number(perAlloc), Format.number(toReference), referenceLabel,
        Format.number(mallocs[name], digits: 3),
      ])
    }
    var goalTable = MarkdownTable(["Goal", "Measured", "Met"], ["---", "---:", ":---:"])
    for goal in goals {
      guard let value = ratio(goal.row, goal.reference) else {
        goalTable.rows.append([goal.label, "not run |"])  // an empty last cell, as always
        continue
      }
      goalTable.rows.append([
        goal.label, String(format: "%.2f×", value), value <= goal.limit ? "yes" : "no",
      ])
    }
    return table.text + "\n" + goalTable.text
  }

  /// The checked rows' figures, as the baseline file holds them.
  var current: [String: BaselineRow] {
    var rows: [String: BaselineRow] = [:]
    for name in names where isChecked(name) {
      guard let ratio = ratio(name, mutex(for: name)) else { continue }
      rows[name] = BaselineRow(
        ratioToMutex: roundedTo4(ratio), mallocsPerOp: mallocs[name].map(roundedTo4))
    }
    return rows
  }

  /// The regressions against `baseline`: a ratio grown past the tolerance, an allocation
  /// count grown at all, or a checked row that the baseline lacks (a path no check would
  /// see regress). Rows missing from this run are noted on standard error.
  func regressions(against baseline: [String: BaselineRow], tolerance: Double) -> [String] {
    let current = current
    var failures: [String] = []
    for name in current.keys.sorted(by: codePointOrder) where isChecked(name) {
      if baseline[name] == nil {
        failures.append(
          "\(displayName(name)): not in ratios-baseline.json, so unchecked "
            + "(compare.sh --update adds it)")
      }
    }
    for (name, base) in baseline.sorted(by: { codePointOrder($0.key, $1.key) }) {
      guard let now = current[name] else {
        FileHandle.standardError.write(Data("note: \(displayName(name)) not in this run\n".utf8))
        continue
      }
      // Below about a nanosecond (0.25× Mutex) timer and load noise dominate.
      let limit = max(base.ratioToMutex * (1 + tolerance), base.ratioToMutex + 0.25)
      if !allocationsOnly.contains(name) && now.ratioToMutex > limit {
        failures.append(
          "\(displayName(name)): "
            + String(
              format: "%.2f× Mutex, baseline %.2f×, limit %.2f×", now.ratioToMutex,
              base.ratioToMutex, limit))
      }
      // Allocation counts barely depend on load: growth beyond rounding (or 5% for the few
      // paths through Dispatch, whose counts vary a little) is a regression.
      if let baseMallocs = base.mallocsPerOp,
        (now.mallocsPerOp ?? 0) > baseMallocs + max(0.01, 0.05 * baseMallocs)
      {
        failures.append(
          "\(displayName(name)): "
            + String(
              format: "%.3f mallocs/op, baseline %.3f", now.mallocsPerOp ?? 0, baseMallocs))
      }
    }
    return failures
  }
}

/// `value` rounded to 4 decimals, as Python's `round(value, 4)`: correctly, from its decimal
/// digits.
func roundedTo4(_ value: Double) -> Double {
  Double(String(format: "%.4f", value))!
}

/// Order by code point, as the row names have always been sorted in the table and in the
/// baseline file (Python's string order, when these were Python scripts).
func codePointOrder(_ left: String, _ right: String) -> Bool {
  left.unicodeScalars.lexicographicallyPrecedes(right.unicodeScalars)
}

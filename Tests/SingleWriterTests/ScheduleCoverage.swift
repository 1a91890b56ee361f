import Foundation
import Testing

@testable import SingleWriter

/// Which rows of the tables in "How the hand-off works" (`TransitionRow`) the scheduler's
/// scenarios reached. Rows are counted only in debug builds with the scheduler, on its
/// threads: what a scenario's setup does on the test's own thread does not count.
final class RowCoverage: @unchecked Sendable {
  // Sendable: every field is touched under `lock`.
  static let shared = RowCoverage()

  private let lock = NSLock()
  /// The rows each scenario reached, in the order the scenarios ran.
  private var log: [(scenario: String, rows: [TransitionRow])] = []

  static var isCounting: Bool { TransitionRow.areCounted }

  /// Every row's count now, to compare with after a scenario.
  static func snapshot() -> [UInt64] { TransitionRow.allCases.map(\.count) }

  /// The rows reached since `before`.
  static func reached(since before: [UInt64]) -> [TransitionRow] {
    zip(TransitionRow.allCases, before).filter { $0.0.count > $0.1 }.map(\.0)
  }

  func record(_ scenario: String, _ rows: [TransitionRow]) {
    lock.lock()
    log.append((scenario, rows))
    lock.unlock()
  }

  /// Each row with the scenarios that reached it, in table order.
  func scenariosByRow() -> [(row: TransitionRow, scenarios: [String])] {
    lock.lock()
    let log = self.log
    lock.unlock()
    return TransitionRow.allCases.map { row in
      (row, log.filter { $0.rows.contains(row) }.map(\.scenario))
    }
  }

  /// The report printed at the end of the scenario suite: each table's rows with the
  /// times they were reached in this process and the scenarios that reached them (the
  /// first three, and how many more), then the rows none reached.
  /// `SINGLEWRITER_SCHED_ROWS=all` lists every scenario.
  func report() -> (text: String, unreached: [TransitionRow]) {
    let all = ProcessInfo.processInfo.environment["SINGLEWRITER_SCHED_ROWS"] == "all"
    var lines = ["Rows of \"How the hand-off works\" reached by the scheduler's scenarios:"]
    var table = ""
    var unreached: [TransitionRow] = []
    for (row, scenarios) in scenariosByRow() {
      if row.table != table {
        table = row.table
        lines.append("  \(table)")
      }
      if scenarios.isEmpty { unreached.append(row) }
      let shown = all ? scenarios : Array(scenarios.prefix(3))
      let more = scenarios.count - shown.count
      let names = scenarios.isEmpty ? "NOT REACHED" : shown.joined(separator: ", ")
      lines.append("    \(row) (\(row.count)): \(names)\(more > 0 ? " (+\(more) more)" : "")")
    }
    lines.append(
      unreached.isEmpty
        ? "Every row was reached."
        : "Rows never reached: \(unreached.map { "\($0)" }.joined(separator: ", "))")
    return (lines.joined(separator: "\n"), unreached)
  }

  /// Whether this process runs all of `suite`: no `--skip`, and no `--filter` or one that
  /// selects the suite itself, not only some of its tests.
  static func runsWhole(_ suite: Test) -> Bool {
    let arguments = CommandLine.arguments
    var filters: [String] = []
    for (index, argument) in arguments.enumerated() {
      if argument.hasPrefix("--skip") { return false }
      if argument == "--filter", index + 1 < arguments.count {
        filters.append(arguments[index + 1])
      }
    }
    let id = "\(suite.id)"
    return filters.isEmpty
      || filters.contains { filter in
        guard let pattern = try? NSRegularExpression(pattern: filter) else {
          return id.contains(filter)
        }
        return pattern.firstMatch(in: id, range: NSRange(id.startIndex..., in: id)) != nil
      }
  }
}

/// Once the scenario suite has run: prints which scenarios reached each row of the
/// hand-off's tables, and the rows none reached, which fail the suite when it ran whole
/// and `enforced`. Release builds count nothing, and say so.
struct RowCoverageTrait: SuiteTrait, TestScoping {
  var enforced: Bool
  var isRecursive: Bool { false }

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    try await function()
    guard RowCoverage.isCounting else {
      print("Rows of \"How the hand-off works\": not counted in this build (debug builds only).")
      return
    }
    let (text, unreached) = RowCoverage.shared.report()
    let whole = RowCoverage.runsWhole(test)
    print(text + (whole ? "" : " (Only part of the suite ran: not checked.)"))
    if enforced, !unreached.isEmpty, whole {
      Issue.record("no scenario reached \(unreached.map { "\($0)" }.joined(separator: ", "))")
    }
  }
}

extension Trait where Self == RowCoverageTrait {
  /// See `RowCoverageTrait`.
  static func rowCoverage(enforced: Bool) -> Self { Self(enforced: enforced) }
}

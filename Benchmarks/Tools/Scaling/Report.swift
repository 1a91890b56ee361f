// The report: one table of every row under every condition, as ratios to the actor of the
// same run; the goals of issue 30; each run's validity; and the wait histograms.

import BenchmarkSupport
import Foundation

/// `value / base`, or `nil` if either is missing or the base is 0.
func ratio(_ value: Double?, _ base: Double?) -> Double? {
  guard let value, let base, base > 0 else { return nil }
  return value / base
}

/// A ratio with the absolute figure after it: "1.21x (982,345)".
func cell(_ value: Double?, over base: Double?, _ absolute: (Double) -> String) -> String {
  guard let value else { return "n/a" }
  guard let ratio = ratio(value, base) else { return absolute(value) }
  return "\(Format.ratio(ratio)) (\(absolute(value)))"
}

/// `count` and its share of `total`: "12 (0.0031%)".
func share(_ count: Int, of total: Int) -> String {
  guard total > 0 else { return "\(count)" }
  return "\(count) (" + String(format: "%.3g", 100 * Double(count) / Double(total)) + "%)"
}

/// Prints the report of `runs` (one per condition); returns whether every goal passed.
func printReport(_ runs: [RunResult]) -> Bool {
  guard let first = runs.first else { return false }
  print("## Scaling: many tasks on the default pool\n")
  print(
    "Each task uses the container in a loop, timing each use, and yields after each, on the "
      + "default cooperative pool; the main thread stops them after "
      + Format.duration(first.sampleMs * 1e6) + ". **Token refresh:** the token lives "
      + Format.duration(first.lifetimeMs * 1e6) + "; whichever use finds it expired "
      + "fetches a new one (a " + Format.duration(first.fetchMs * 1e6) + " `Task.sleep`), "
      + "holding `checkout()` across the fetch (`ThreadSafeSingleWriter`) or awaiting a stored "
      + "in-flight `Task` (actor); then the use is a small `await write` (or an actor method). "
      + "**Small writes:** each use is one `await write`, actor method or `Mutex.withLock` "
      + "of one field. Every row runs once a round, in a rotated order; uses/s is the median "
      + "over the valid rounds, latencies are over every use of them (from asking to done), "
      + "as ratios to the actor of the same run.\n")
  for run in runs {
    print(
      "- **\(run.condition)**: \(run.date), \(run.cores) cores, load average "
        + "\(run.loadBefore) before, \(run.loadAfter) after; \(run.rounds) rounds of "
        + Format.duration(run.sampleMs * 1e6) + " per row; "
        + (run.isCorrect ? "every count exact" : "**writes lost or stale**") + "; "
        + (run.isValid ? "valid" : "**INVALID** (rows without most rounds valid)"))
  }
  print()
  printFigures(runs)
  let pass = printGoals(runs)
  for run in runs {
    printValidity(run)
    printHistograms(run)
  }
  return pass
}

/// One row per container, workload and task count; four columns per condition.
func printFigures(_ runs: [RunResult]) {
  var table = MarkdownTable(
    ["Workload", "tasks", "container"]
      + runs.flatMap { ["\($0.condition): uses/s", "p50", "p99", "max"] },
    ["---", "---:", "---"] + Array(repeating: "---:", count: 4 * runs.count))
  let first = runs[0]
  for workload in first.workloads {
    for tasks in first.taskCounts {
      for container in containers(workload) {
        table.rows.append(
          [workload.title, "\(tasks)", container.title]
            + runs.flatMap { run -> [String] in
              guard let row = run.row(workload, container, tasks) else {
                return Array(repeating: "", count: 4)
              }
              let actor = container == .actor ? nil : run.row(workload, .actor, tasks)
              let latency = { (path: KeyPath<Waits, Double>) in
                cell(row.latency[keyPath: path], over: actor?.latency[keyPath: path]) {
                  Format.duration($0)
                }
              }
              return [
                cell(row.usesPerSecond, over: actor?.usesPerSecond) { Format.grouped($0) },
                latency(\.p50), latency(\.p99), latency(\.max),
              ]
            })
      }
      guard workload == .writes else { continue }
      table.rows.append(
        [workload.title, "\(tasks)", "`ThreadSafeSingleWriter` ÷ `Mutex`"]
          + runs.flatMap { run -> [String] in
            let ours = run.row(workload, .singleWriter, tasks)
            let mutex = run.row(workload, .mutex, tasks)
            return [
              Format.ratio(ratio(ours?.usesPerSecond, mutex?.usesPerSecond)),
              Format.ratio(ratio(ours?.latency.p50, mutex?.latency.p50)),
              Format.ratio(ratio(ours?.latency.p99, mutex?.latency.p99)),
              Format.ratio(ratio(ours?.latency.max, mutex?.latency.max)),
            ]
          })
    }
  }
  table.print()
  print(
    "\nThe actor's rows are absolute; the others are ratios to the actor at the same "
      + "workload, task count and condition (uses/s above 1 is faster, latencies below 1 are "
      + "shorter), with the absolute figure in parentheses; the ÷ `Mutex` rows are "
      + "`ThreadSafeSingleWriter` over `Mutex`. Percentiles come from buckets at most 6.25% "
      + "wide, rounded up; max is exact.\n")
}

/// Issue 30's goals at 64 tasks and more: uses/s at least the actor's, and p99 at most
/// twice the actor's or 200 µs.
func printGoals(_ runs: [RunResult]) -> Bool {
  var table = MarkdownTable(
    ["Goal (`ThreadSafeSingleWriter` against the actor)"] + runs.map(\.condition),
    ["---"] + runs.map { _ in ":---:" })
  var pass = true
  let first = runs[0]
  for workload in first.workloads {
    for tasks in first.taskCounts where tasks >= 64 {
      let throughput = runs.map { run -> String in
        let uses = ratio(
          run.row(workload, .singleWriter, tasks)?.usesPerSecond,
          run.row(workload, .actor, tasks)?.usesPerSecond)
        let met = (uses ?? 0) >= 1
        pass = pass && met
        // Three decimals, so that 0.996x does not read as 1.00x and fail.
        return uses.map { String(format: "%.3fx", $0) + (met ? " yes" : " **no**") }
          ?? "n/a **no**"
      }
      let tail = runs.map { run -> String in
        guard let ours = run.row(workload, .singleWriter, tasks)?.latency.p99,
          let actor = run.row(workload, .actor, tasks)?.latency.p99
        else {
          pass = false
          return "n/a **no**"
        }
        let met = ours <= 2 * actor || ours <= 200_000
        pass = pass && met
        return "\(Format.duration(ours)) vs \(Format.duration(actor))" + (met ? " yes" : " **no**")
      }
      table.rows.append(["\(workload.title), \(tasks) tasks: uses/s ≥ actor's"] + throughput)
      table.rows.append(
        ["\(workload.title), \(tasks) tasks: p99 ≤ 2x actor's or ≤ 200 µs"] + tail)
    }
  }
  guard !table.rows.isEmpty else { return true }
  table.print()
  print()
  return pass
}

/// The proof that each run measured what it says: tasks overlapped, counts exact, one
/// fetch at a time.
func printValidity(_ run: RunResult) {
  print("### Validity, \(run.condition)\n")
  MarkdownTable(
    [
      "Workload", "tasks", "container", "valid/samples", "min overlap", "uses", "lost",
      "writes during a fetch", "fetches", "max in flight", "refresh waits per fetch",
    ],
    ["---", "---:", "---"] + Array(repeating: "---:", count: 8),
    run.rows.map { row in
      let refresh = row.key.workload == .refresh
      let bold = { (count: Int) in count == 0 ? "0" : "**\(count)**" }
      return [
        row.key.workload.title, "\(row.key.tasks)", row.key.container.title,
        "\(row.validSamples)/\(row.samples)", String(format: "%.2f", row.minOverlap),
        Format.grouped(Double(row.uses)), bold(row.lost),
        refresh ? bold(row.staleWrites) : "", refresh ? "\(row.refreshes)" : "",
        refresh ? (row.maxInFlight <= 1 ? "\(row.maxInFlight)" : "**\(row.maxInFlight)**") : "",
        refresh
          ? Format.number(ratio(Double(row.refreshWaitCount), Double(row.refreshes)), digits: 1)
          : "",
      ]
    }
  ).print()
  print(
    "\nA sample is valid when every task completed a use and all of them were running for at "
      + "least \(Int(run.minOverlap * 100))% of it (overlap: from the last task's first use to "
      + "the first task's last, over the whole sample); only valid samples make the figures. "
      + "Uses, lost writes (the tasks' uses less the container's count), writes made while a "
      + "fetch was in flight, fetches and the most in flight at once are over every sample. "
      + "Refresh waits: `checkout()` calls (`ThreadSafeSingleWriter`) or awaits of the fetch "
      + "in flight (actor).\n")
}

/// The latency of a use in buckets, per task count and container; for the refresh, also
/// the waits for the refresh and `ThreadSafeSingleWriter`'s `await write` alone.
func printHistograms(_ run: RunResult) {
  for workload in run.workloads {
    let columns = run.taskCounts.flatMap { tasks in
      containers(workload).compactMap { run.row(workload, $0, tasks) }
    }
    printHistogram(
      "Latency of a use, \(workload.title), \(run.condition)",
      columns.map { ("\($0.key.tasks): \($0.key.container.title)", $0.latency) })
    guard workload == .refresh else { continue }
    let waits = run.taskCounts.flatMap { tasks -> [(String, Waits)] in
      var columns: [(String, Waits)] = []
      if let ours = run.row(workload, .singleWriter, tasks) {
        if let waits = ours.refreshWaits { columns.append(("\(tasks): `checkout()`", waits)) }
        if let waits = ours.writeWaits { columns.append(("\(tasks): `await write`", waits)) }
      }
      if let waits = run.row(workload, .actor, tasks)?.refreshWaits {
        columns.append(("\(tasks): actor, awaiting the fetch", waits))
      }
      return columns
    }
    printHistogram("Waits inside a use, token refresh, \(run.condition)", waits)
  }
}

func printHistogram(_ title: String, _ columns: [(String, Waits)]) {
  print("### \(title)\n")
  var table = MarkdownTable(
    ["wait"] + columns.map(\.0), ["---"] + columns.map { _ in "---:" })
  for (index, label) in Waits.labels.enumerated() {
    table.rows.append([label] + columns.map { share($0.1.counts[index], of: $0.1.total) })
  }
  table.rows.append(["total"] + columns.map { Format.grouped(Double($0.1.total)) })
  for (label, path) in [
    ("p50", \Waits.p50), ("p99", \Waits.p99), ("p99.9", \Waits.p999), ("max", \Waits.max),
  ] {
    table.rows.append([label] + columns.map { Format.duration($0.1[keyPath: path]) })
  }
  table.print()
  print()
}

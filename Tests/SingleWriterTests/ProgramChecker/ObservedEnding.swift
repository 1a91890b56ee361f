import Testing

/// How one program ended in the child, read from the child's markers, its standard error
/// and its exit status.
enum ObservedEnding: Sendable {
  case completed(warnings: [String])
  case stopped(String)
  /// The watchdog ended it after a "has waited 1 s" warning.
  case warned([String])
  /// The watchdog ended it with no warning.
  case hung
  case checkFailed(String)
  case crashed(String)

  /// The kind of each "has waited 1 s" warning in `text`: "same thread" or "same task",
  /// or "pool" for a wait in a task behind a checkout held elsewhere, which may starve the
  /// cooperative pool and names no holder.
  static func warnings(in text: Substring) -> [String] {
    text.split(separator: "\n").filter { $0.contains("has waited 1 s") }.map { line in
      line.contains("same thread")
        ? "same thread"
        : line.contains("same task")
          ? "same task" : line.contains("cooperative pool") ? "pool" : "unknown"
    }
  }

  /// Splits a child's standard error into each program's ending, in order.
  static func parse(
    _ stderr: String, status: ExitStatus?
  ) -> [(seed: UInt64, ending: ObservedEnding, text: Substring)] {
    var result: [(UInt64, ObservedEnding, Substring)] = []
    var seed: UInt64?
    var start = stderr.startIndex
    var lines = stderr.split(separator: "\n", omittingEmptySubsequences: false)[...]
    while let line = lines.popFirst() {
      if line.hasPrefix("CHK-BEGIN ") {
        seed = UInt64(line.dropFirst(10))
        start = line.endIndex
      } else if line.hasPrefix("CHK-END "), let current = seed {
        let text = stderr[start..<line.startIndex]
        result.append((current, .completed(warnings: warnings(in: text)), text))
        seed = nil
      } else if line.hasPrefix("CHK-FAIL "), let current = seed {
        result.append(
          (current, .checkFailed(String(line.dropFirst(9))), stderr[start..<line.startIndex]))
        return result
      }
    }
    guard let current = seed else { return result }
    let text = stderr[start...]
    let found = warnings(in: text)
    if text.contains("CHK-WATCHDOG") {
      result.append((current, found.isEmpty ? .hung : .warned(found), text))
    } else if let range = text.range(of: "would wait forever") {
      let lineStart = text[..<range.lowerBound].lastIndex(of: "\n") ?? text.startIndex
      result.append((current, .stopped(String(text[lineStart...].prefix(300))), text))
    } else {
      result.append((current, .crashed("exit status \(status.map { "\($0)" } ?? "unknown")"), text))
    }
    return result
  }
}

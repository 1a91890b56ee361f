/// Where reports go: `RaceDetector.onRace`.
final class RaceHandlerStore: @unchecked Sendable {
  // Sendable: `stored` is only touched with `mutex` held.
  static let shared = RaceHandlerStore()

  private let mutex = RaceMutex()
  private var stored: @Sendable (RaceReport) -> Void = RaceHandlerStore.standardHandler

  var handler: @Sendable (RaceReport) -> Void {
    get {
      mutex.lock()
      defer { mutex.unlock() }
      return stored
    }
    set {
      mutex.lock()
      stored = newValue
      mutex.unlock()
    }
  }

  /// Prints the report and its stack to standard error, then stops a debug build: a race
  /// and a lock-order report alike.
  static let standardHandler: @Sendable (RaceReport) -> Void = { report in
    #if DEBUG
      var text = "RaceDetector: \(report)\n"
      for frame in report.callStack { text += "    \(frame)\n" }
      writeToStandardError(text)
    #endif
    switch report.kind {
    case .race:
      assertionFailure("data race on \(report.resource); the report is on standard error")
    case .lockOrderInversion, .servedWriteTakesHeldLock:
      assertionFailure(
        "potential deadlock on \(report.resource); the report is on standard error")
    }
  }
}

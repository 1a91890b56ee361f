import Foundation

/// Ends the child when the running program overruns its time: prints a marker (so the
/// parent can tell a hang, or a warning then a hang) and exits with code 3.
final class ChildWatchdog: Sendable {
  private let state = Locked((seed: UInt64(0), deadline: UInt64.max))

  init() {
    Thread.detachNewThread { [state] in
      while true {
        usleep(20_000)
        let (seed, deadline) = state.withLock { ($0.seed, $0.deadline) }
        if StepMarker.now > deadline {
          ChildRunner.emit("CHK-WATCHDOG \(seed)\n")
          _exit(3)
        }
      }
    }
  }

  func arm(_ seed: UInt64, seconds: Double) {
    state.withLock { $0 = (seed, StepMarker.now + UInt64(seconds * 1e9)) }
  }
}

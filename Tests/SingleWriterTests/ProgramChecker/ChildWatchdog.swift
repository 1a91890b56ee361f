import Foundation
import SingleWriterAtomics

/// Ends the child when the running program overruns its time: prints a marker (so the
/// parent can tell a hang, or a warning then a hang) and exits with code 3. Past its time,
/// a program that has printed no library message yet may only be slowed by a loaded
/// machine: it gets until `attackHangBound` before it counts as hung. One that printed a
/// message (the "has waited 1 s" warning of a program that ends in a deadlock) ends at
/// its time.
final class ChildWatchdog: Sendable {
  private let state = Locked(
    (seed: UInt64(0), armed: UInt64(0), deadline: UInt64.max, printed: UInt(0)))

  init() {
    Thread.detachNewThread { [state] in
      while true {
        usleep(20_000)
        let (seed, armed, deadline, printed) = state.withLock {
          ($0.seed, $0.armed, $0.deadline, $0.printed)
        }
        let now = StepMarker.now
        guard now > deadline else { continue }
        let hung = now > armed &+ UInt64(attackHangBound * 1e9)
        if sw_printed_error_count() > printed || hung {
          ChildRunner.emit("CHK-WATCHDOG \(seed)\n")
          _exit(3)
        }
      }
    }
  }

  func arm(_ seed: UInt64, seconds: Double) {
    let now = StepMarker.now
    let printed = sw_printed_error_count()
    state.withLock { $0 = (seed, now, now + UInt64(seconds * 1e9), printed) }
  }
}

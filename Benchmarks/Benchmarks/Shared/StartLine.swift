import Foundation
import Synchronization

/// A one-shot start line: threads spin on one atomic word until the last one arrives, so
/// they leave within microseconds of each other, and nobody waits for the kernel to wake it
/// up as a semaphore or condition would. Every tool and suite that starts threads together
/// uses this one.
public final class StartLine: Sendable {
  private let arrived = Atomic(0)
  private let count: Int
  private let yieldMask: Int

  /// A line for `count` threads. A spinner gives up its core once every `spins` spins (a
  /// power of two): with more threads than cores, one still on its way needs a core to
  /// arrive.
  public init(_ count: Int, yieldEvery spins: Int) {
    precondition(spins > 0 && spins & (spins - 1) == 0, "yieldEvery must be a power of two")
    self.count = count
    yieldMask = spins - 1
  }

  /// Whether every thread has arrived.
  public var isOpen: Bool { arrived.load(ordering: .acquiring) >= count }

  /// Arrives, then spins until every thread has.
  public func arriveAndWait() {
    if arrived.add(1, ordering: .acquiringAndReleasing).newValue >= count { return }
    var spins = 0
    while !isOpen {
      spins &+= 1
      if spins & yieldMask == 0 { sched_yield() }
    }
  }
}

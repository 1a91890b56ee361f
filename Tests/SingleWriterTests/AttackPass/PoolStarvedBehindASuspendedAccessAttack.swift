import Foundation
import Testing

@testable import SingleWriter

// "Misuse gets a clear message, never a hang": a task holds a write access through its
// proxy across an `await` (an async mutating method called through `proxy.write`), and as
// many other tasks as the cooperative pool has threads read the same container. Each read
// blocks its pool thread until the access ends, so the task inside the access is never
// resumed to end it, and nothing was printed: the one-second warning of a wait that may
// starve a holder of the pool (`blockedWaitMayStarveHolder`) covered `withWriter`, the sync
// `transaction` and the bounded `writeNext`, not a read (or a write through a shared
// proxy) that waits for an access. The proxy's docs forbid the pattern; it hung silently.
//
// A wait for an access now warns on the same rule after a second.

@Suite struct AttackPassPoolStarvedBehindASuspendedAccess {
  @Test func everyPoolThreadReadingBehindASuspendedAccessIsReported() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "reads on every pool thread behind an access held across an await")
      let box = ThreadSafeSingleWriter(value: SlowCounter())
      await atkStarvePool(
        holding: { whileHeld in
          guard let proxy = try? await box.checkout() else { return }
          // The access spans the method's `await`, on the pool the blocked reads hold.
          await proxy.write.add(whileHeld)
        },
        blocking: { _ = box.read.count })
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }

  // The same, with the proxy taken on a thread outside any task and then used in a task:
  // the rule keyed on who took the proxy, so this hung silently.
  @Test func aProxyTakenOutsideAnyTaskIsReportedToo() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "reads behind an access a task made through a thread's proxy")
      let box = ThreadSafeSingleWriter(value: SlowCounter())
      let proxy = await runOnThread(stackSize: 1 << 20) { box.writer }
      await atkStarvePool(
        holding: { whileHeld in
          guard let proxy else { return }
          await proxy.write.add(whileHeld)
        },
        blocking: { _ = box.read.count })
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }
}

/// A value with an async mutating method: called through `proxy.write`, its access spans
/// the `await` inside it.
private struct SlowCounter: Sendable {
  var count = 0

  mutating func add(_ whileHeld: @Sendable () async -> Void) async {
    await whileHeld()
    count += 1
  }
}

import Foundation
import Testing

@testable import SingleWriter

// "Misuse gets a clear message, never a hang": a task holds the checkout across an
// `await` (a `checkout()` proxy, or an async `transaction`'s body), and as many other
// tasks as the cooperative pool has threads block in `withWriter` (or a sync
// `transaction`) on the same container. The holder can never be resumed to release it,
// and nothing is printed: `withWriter`'s one-second warning fires only for a checkout
// held by the waiting thread or task itself (`isHeldHere`). The docs forbid the pattern
// ("block no thread of the cooperative pool in `withWriter` on the same container"), but
// it is silent. Found by a persistence test that mixed sync transactions with
// `checkout()` proxies on the pool; it hung with both pool threads in
// `waitForTransaction`.
//
// A fix would widen that warning: a blocking wait that runs in a task, behind a
// checkout a task holds, warns after a second that this thread is a thread of the
// cooperative pool the holder may need. Not small: the warning must not fire for a
// holder that merely awaits something slow, which existing tests of long-held proxies
// exercise, and every such test's standard error would need checking.

@Suite struct AttackPassPoolStarvedBehindASuspendedHolder {
  @Test(
    .disabled(
      "hangs silently: a blocking withWriter warns only for a checkout its own thread or task holds; see the comment above"
    ))
  func everyPoolThreadBlockedBehindASuspendedHolderIsReported() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "withWriter on every pool thread behind a suspended checkout")
      let box = ThreadSafeSingleWriter(value: 0)
      let held = SharedFlag()
      let holder = Task {
        let proxy = try await box.checkout()
        held.set()
        // Resumed on the pool, which the blocked tasks below hold.
        try? await Task.sleep(nanoseconds: 10_000_000)
        proxy.write += 1
      }
      while !held.isSet { await Task.yield() }
      for _ in 0..<ProcessInfo.processInfo.activeProcessorCount {
        Task { box.withWriter { $0 += 1 } }
      }
      _ = await holder.result
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }
}

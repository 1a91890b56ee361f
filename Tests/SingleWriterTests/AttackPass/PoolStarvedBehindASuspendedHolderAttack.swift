import Foundation
import Testing

@testable import SingleWriter

// "Misuse gets a clear message, never a hang": a task holds the checkout across an
// `await` (a `checkout()` proxy, or an async `transaction`'s body), and as many other
// tasks as the cooperative pool has threads block in `withWriter` (or a sync
// `transaction`) on the same container. The holder can never be resumed to release it,
// and nothing was printed: `withWriter`'s one-second warning fires only for a checkout
// held by the waiting thread or task itself (`isHeldHere`). The docs forbid the pattern
// ("block no thread of the cooperative pool in `withWriter` on the same container"), but
// it was silent. Found by a persistence test that mixed sync transactions with
// `checkout()` proxies on the pool; it hung with both pool threads in
// `waitForTransaction`.
//
// Every blocking wait that outlasts a second now warns when it runs in a task behind a
// checkout another task holds (`blockedWaitMayStarveHolder`), as the bounded
// `writeNext`'s wait for room already did: one rule for both.

@Suite struct AttackPassPoolStarvedBehindASuspendedHolder {
  @Test func everyPoolThreadBlockedBehindASuspendedHolderIsReported() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "withWriter on every pool thread behind a suspended checkout")
      let box = ThreadSafeSingleWriter(value: 0)
      await atkStarvePool(
        holding: { whileHeld in
          guard let proxy = try? await box.checkout() else { return }
          await whileHeld()
          proxy.write += 1
        },
        blocking: { box.withWriter { $0 += 1 } })
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }

  @Test func aSyncTransactionOnEveryPoolThreadBehindAnAsyncTransactionIsReported() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "sync transactions on every pool thread behind an async transaction")
      let box = ThreadSafeSingleWriter(value: 0)
      await atkStarvePool(
        holding: { whileHeld in
          try? await box.transaction { value in
            await whileHeld()
            value += 1
          }
        },
        blocking: { commitOne(box) })
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }
}

extension AttackPassPoolStarvedBehindASuspendedHolder {
  // The same, with the proxy taken on a thread outside any task and then held by a task
  // across its `await`s (an app's callback takes `writer` and hands it to a `Task`): the
  // rule asked whether a task took the checkout, so this hung silently.
  @Test func aProxyTakenOutsideAnyTaskAndHeldByATaskIsReported() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "withWriter on every pool thread behind a thread's proxy a task holds")
      let box = ThreadSafeSingleWriter(value: 0)
      let taken = Locked(await runOnThread(stackSize: 1 << 20) { box.writer })
      await atkStarvePool(
        holding: { whileHeld in
          await whileHeld()
          taken.withLock { $0 = nil }
        },
        blocking: { box.withWriter { $0 += 1 } })
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }
}

/// The sync `transaction`, named from synchronous code so the async one is not chosen.
private func commitOne(_ box: ThreadSafeSingleWriter<Int>) {
  box.transaction { $0 += 1 }
}

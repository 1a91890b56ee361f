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
      let held = SharedFlag()
      let waiters = ProcessInfo.processInfo.activeProcessorCount
      let waiting = Counter()
      let holder = Task {
        let proxy = try await box.checkout()
        held.set()
        // Resumed on the pool, which the blocked tasks below hold: it goes on only once
        // they have all started, so it never does unless a wait lets go of its thread.
        while waiting.load() < waiters { try? await Task.sleep(nanoseconds: 1_000_000) }
        proxy.write += 1
      }
      while !held.isSet { await Task.yield() }
      for _ in 0..<waiters {
        Task {
          waiting.add(1)
          box.withWriter { $0 += 1 }
        }
      }
      _ = await holder.result
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
      let held = SharedFlag()
      let waiters = ProcessInfo.processInfo.activeProcessorCount
      let waiting = Counter()
      let holder = Task {
        try? await box.transaction { value in
          held.set()
          while waiting.load() < waiters { try? await Task.sleep(nanoseconds: 1_000_000) }
          value += 1
        }
      }
      while !held.isSet { await Task.yield() }
      for _ in 0..<waiters {
        Task {
          waiting.add(1)
          commitOne(box)
        }
      }
      _ = await holder.result
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }
}

/// The sync `transaction`, named from synchronous code so the async one is not chosen.
private func commitOne(_ box: ThreadSafeSingleWriter<Int>) {
  box.transaction { $0 += 1 }
}

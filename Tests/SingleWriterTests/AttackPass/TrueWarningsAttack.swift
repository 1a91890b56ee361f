import Foundation
import Testing

@testable import SingleWriter

// "True warnings": a blocking wait in a task behind a checkout held elsewhere warns after
// a second that it may starve the cooperative pool, wherever the proxy was taken.

@Suite struct AttackPassTrueWarnings {
  // A queued `writeNext` body, served by another thread's release, kept its proxy, and a
  // task held that proxy across its `await`s while every pool thread waited in
  // `withWriter`: the kept proxy was recorded as held by nobody (holder 0, "not known
  // here"), which the starvation rule read as "no proxy holds the checkout", and the
  // program hung with nothing printed.
  @Test func aProxyKeptFromAServedBodyAndHeldByATaskIsReported() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "withWriter on every pool thread behind a served body's kept proxy")
      let box = ThreadSafeSingleWriter(value: 0)
      let kept = await keptFromAServedBody(box)
      await atkStarvePool(
        holding: { whileHeld in
          await whileHeld()
          kept.withLock { $0 = nil }
        },
        blocking: { box.withWriter { $0 += 1 } })
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }

  // The same behind a full bounded backlog: `waitForRoom` asks the same rule.
  @Test func aBoundedWriteNextBehindAProxyKeptFromAServedBodyIsReported() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "bounded writeNext on every pool thread behind a kept proxy")
      let box = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let kept = await keptFromAServedBody(box)
      box.writeNext { $0.write += 1 }  // the backlog is full from here on
      await atkStarvePool(
        holding: { whileHeld in
          await whileHeld()
          kept.withLock { $0 = nil }
        },
        blocking: { box.writeNext { $0.write += 1 } })
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }
}

extension AttackPassTrueWarnings {
  // A `checkout()` reaches its turn and is offered the writer while every pool thread
  // waits for room in a bounded `writeNext` (each admitted one queues again): the task
  // that was offered it needs a pool thread to claim it, and none comes. A `withWriter`
  // takes such an offer back; a wait for room cannot, and the offered checkout had no
  // holder recorded until its task runs, so the rule saw none and nothing was printed.
  @Test func boundedWriteNextsBehindACheckoutOfferedToAStarvedTaskAreReported() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "bounded writeNexts on every pool thread behind an offered checkout")
      let box = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let first = Locked(await runOnThread(stackSize: 1 << 20) { box.writer })
      let checkedOut = SharedFlag()
      let claimant = Task {
        guard let proxy = try? await box.checkout() else { return }
        checkedOut.set()
        proxy.write += 1
      }
      while box.queuedWrites < 1 { await Task.yield() }  // full: the checkout waits
      let blockers = ProcessInfo.processInfo.activeProcessorCount
      let started = Counter()
      for _ in 0..<blockers {
        Task {
          started.add(1)
          while !checkedOut.isSet { box.writeNext { $0.write += 1 } }
        }
      }
      await runOnThread(stackSize: 1 << 20) {
        while started.load() < blockers { usleep(1_000) }
        usleep(50_000)  // every blocker in its wait for room
        first.withLock { $0 = nil }  // the checkout is offered to the claimant
      }
      await claimant.value
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }
}

extension AttackPassTrueWarnings {
  // A `writeNext` body starts a `Task.immediate` that makes an access through the lent
  // proxy and suspends inside it (an async mutating method), then returns: the proxy is
  // kept, and the access goes on in that task. It was recorded as the body's thread's,
  // since a lent proxy is used "there and then" by the thread, so reads on every pool
  // thread waited for it with nothing printed, and the task never resumed to end it.
  @Test func readsBehindAnAccessATaskStartedInsideABodyMadeAreReported() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "reads on every pool thread behind an inline task's access")
      let box = ThreadSafeSingleWriter(value: Suspending())
      let blockers = ProcessInfo.processInfo.activeProcessorCount
      let started = Counter()
      let ended = SharedFlag()
      await runOnThread(stackSize: 1 << 20) {
        box.writeNext { proxy in
          Task.immediate {
            await proxy.write.add {
              while started.load() < blockers { try? await Task.sleep(nanoseconds: 1_000_000) }
            }
            ended.set()
          }
        }
      }
      for _ in 0..<blockers {
        Task {
          started.add(1)
          _ = box.read.count
        }
      }
      while !ended.isSet { try? await Task.sleep(nanoseconds: 1_000_000) }
      atkEnd(breakingIf: false)
    }
    #expect(standardError(result).contains("cooperative pool"), "\(exitReport(result))")
  }
}

extension AttackPassTrueWarnings {
  // The same access, while the body's thread goes on: a read there, after `writeNext`
  // returned, took the inline task's suspended access for its own ("read inside a write
  // on the same thread") and stopped a correct program. It waits for the access instead.
  @Test func aReadOnTheBodysThreadAfterItReturnedWaitsForTheInlineTasksAccess() async {
    await #expect(processExitsWith: .success) {
      attackWatchdog(30, "a read behind an inline task's access on the body's thread")
      let box = ThreadSafeSingleWriter(value: Suspending())
      let count = await runOnThread(stackSize: 1 << 20) {
        box.writeNext { proxy in
          Task.immediate {
            await proxy.write.add { try? await Task.sleep(nanoseconds: 50_000_000) }
          }
        }
        return box.read.count
      }
      atkEnd(breakingIf: count != 1, "read \(count) before the access ended")
    }
  }
}

/// A value with an async mutating method: called through `proxy.write`, its access spans
/// the `await` inside it.
private struct Suspending: Sendable {
  var count = 0

  mutating func add(_ meanwhile: @Sendable () async -> Void) async {
    await meanwhile()
    count += 1
  }
}

/// A proxy that a queued `writeNext` body kept, served by a plain thread's release of a
/// proxy taken on another plain thread: nobody in a task took or queued anything.
private func keptFromAServedBody(
  _ box: ThreadSafeSingleWriter<Int>
) async -> Locked<ThreadSafeWriterProxy<Int>?> {
  let first = Locked(await runOnThread(stackSize: 1 << 20) { box.writer })
  let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
  await runOnThread(stackSize: 1 << 20) {
    box.writeNext { proxy in kept.withLock { $0 = proxy } }
  }
  await runOnThread(stackSize: 1 << 20) { first.withLock { $0 = nil } }
  return kept
}

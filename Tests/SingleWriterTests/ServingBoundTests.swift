import Foundation
import SingleWriter
import Testing

// The promises of "Writes that wait their turn" on who serves the queue: a thread that ends
// a checkout serves what it owes (what was queued before, and what those writes queue in
// turn) and other threads' writes for about a millisecond only, whatever the bodies queue;
// and an `await write` never serves other threads' writes before its task has suspended.

/// Set on the task while its `await write` is on its way: its own body has not run yet.
final class AsyncWriteProbe: Sendable {
  private let ownBodyRan = Locked(false)
  var hasRun: Bool { ownBodyRan.withLock { $0 } }
  func ran() { ownBodyRan.withLock { $0 = true } }
  @TaskLocal static var current: AsyncWriteProbe?
}

@Suite(.serialized) struct ServingBoundTests {
  /// Two threads keep queueing writes whose bodies each queue a follow-up, while a thread
  /// releases a checkout behind which it queued its own writes, which queue follow-ups
  /// too. The release returns while the others still queue (they stop only once it has,
  /// or after a watchdog's 120 s), having run its own writes and their follow-ups, and
  /// spent little CPU time serving. No wall time is checked, so load cannot fail it.
  @Test func aReleaseReturnsWhileOthersKeepQueueingFollowUps() {
    let box = ThreadSafeSingleWriter(value: 0)
    let mine = Locked(0)
    var held = box.writer
    let fed = Counter()
    let feeders = Repeating(threads: 2, seconds: 120) {
      box.writeNext { proxy in
        attackSpin(2_000)  // the feeders outpace one server: its queue never empties
        proxy.write += 1
        box.writeNext { $0.write += 1 }
      }
      fed.add(1)
    }
    #expect(eventually { fed.load() >= 2 }, "the feeders never queued")
    for _ in 0..<100 {
      box.writeNext { proxy in
        proxy.write += 1
        mine.withLock { $0 += 1 }
        box.writeNext { _ in mine.withLock { $0 += 1 } }
      }
    }
    let cpu = threadCPUTime()
    held = nil  // this thread serves
    _ = held
    let served = threadCPUTime() - cpu
    let feedersStillQueueing = !feeders.isStopped
    feeders.stop()
    #expect(feedersStillQueueing, "the release served until the others stopped")
    #expect(
      served < servingCPUBound, "the release served others for \(served / 1_000_000) ms of CPU")
    #expect(mine.withLock { $0 } >= 200, "its own writes and their follow-ups ran first")
    // Everything queued has run once every call has returned.
    #expect(box.withWriter { $0 } == box.read)
  }

  /// Two threads stream `writeNext` behind slow bodies, so the serving thread is late and
  /// looks for a successor, while tasks keep calling `await write` for half a second. A
  /// task's thread never runs another thread's body while its own write has not run: it
  /// would be serving before suspending.
  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func anAwaitWriteNeverServesOthersBeforeItsOwnBodyRuns() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let violations = Locked(0)
    let queued = Locked(0)
    let feeders = Repeating(threads: 2) {
      queued.withLock { $0 += 1 }
      box.writeNext { proxy in
        if let probe = AsyncWriteProbe.current, !probe.hasRun {
          violations.withLock { $0 += 1 }
        }
        attackSpin(20_000)
        proxy.write += 1
      }
    }
    let writes = Locked(0)
    let start = Date()
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<8 {
        group.addTask {
          while Date().timeIntervalSince(start) < 0.5 {
            writes.withLock { $0 += 1 }
            let probe = AsyncWriteProbe()
            await AsyncWriteProbe.$current.withValue(probe) {
              await box.write { value in
                probe.ran()
                value += 1
              }
            }
          }
        }
      }
    }
    feeders.stop()
    #expect(violations.withLock { $0 } == 0, "await write served others before suspending")
    #expect(box.withWriter { $0 } == queued.withLock { $0 } + writes.withLock { $0 })
  }

  /// A `checkout()` whose enqueue finds the writer free (its release raced the queueing)
  /// is handed the checkout at once; it does not wait a claim window that its own thread
  /// keeps from ending. Many rounds of the race, each checkout held and released.
  @Test func aCheckoutThatTakesTheFreeWriterOnEnqueueIsHandedItAtOnce() async throws {
    let box = ThreadSafeSingleWriter(value: 0)
    for _ in 0..<200 {
      let held = Locked(box.writer)
      let released = Task.detached { held.withLock { $0 = nil } }
      let proxy = try await box.checkout()
      proxy.write += 1
      await released.value
    }
    #expect(box.read == 200)
    #expect(box.writer != nil)
  }
}

import Dispatch
import Foundation
import Testing

@testable import SingleWriterPersistence

/// "`saved()` ... If the newest value's save failed, it is tried again first, so that a
/// flush after a passing failure succeeds." A retry is queued once for a failed version;
/// a flush that finds one queued waits for it instead of queueing another. But a newer
/// save can fail between the retry's queueing and its run: the flush for that newer
/// version then waited for a retry of the older value, which settles only older flushes,
/// and hung until the next change. The retry now saves the newest failed value when it
/// runs.
///
/// The saver is driven directly, its queue held by blocks of the test's own, so that the
/// order (newer save queued, retry of the older queued, newer save fails, flush of the
/// newer) is forced. Through `PersistedState` the same order comes from a `saved()` that
/// read the version just before another thread's write was delivered to the saver.
@Suite struct RetryNewestFailureTests {
  @Test func aFlushOfANewerFailedVersionIsNotLeftBehindAnOlderRetry() async throws {
    let url = makeFolder().appendingPathComponent("n.json")
    let failing = Locked<Set<Int>>([1, 2])
    let saver = Saver<Int>(
      file: StateFile(url), version: 0, interval: .zero,
      encode: { value in
        if failing.current.contains(value) { throw Refused() }
        return try JSONEncoder().encode(value)
      }, onFailure: nil)
    await saver.save(1, version: 1)  // fails: kept for a retry
    #expect(saver.lock.withLock { saver.failure?.version } == 1)

    // The queue: [hold, save of 2, hold, retry of 1].
    let first = DispatchSemaphore(value: 0)
    let second = DispatchSemaphore(value: 0)
    let atSecond = DispatchSemaphore(value: 0)
    saver.queue.async { first.wait() }
    saver.queue.async { saver.write(2, version: 2) }
    saver.queue.async {
      atSecond.signal()
      second.wait()
    }
    let older = Task { try await saver.flush(through: 1) }
    try await waitUntil { saver.lock.withLock { saver.retrying } }
    failing.withLock { $0 = [2] }
    first.signal()  // the save of 2 fails, and fails the flush of 1 with it
    await #expect(throws: PersistenceError.self) { try await older.value }
    await withCheckedContinuation { continuation in
      DispatchQueue.global().async {
        atSecond.wait()
        continuation.resume()
      }
    }

    // The disk is back; a flush of 2 finds the retry of 1 queued.
    failing.withLock { $0 = [] }
    let newer = Task { try await saver.flush(through: 2) }
    try await waitUntil { saver.lock.withLock { saver.flushes.count == 1 } }
    second.signal()
    let finished = await finishes(within: 60) { try await newer.value }
    #expect(finished, "the flush of 2 waited for a retry of 1, and hung")
    #expect(try decoded(Int.self, at: url) == 2)
  }
}

/// The error the test's encoder throws.
private struct Refused: Error {}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "`saved()` returns once every write made before the call is on disk", while writes
/// outrun the saves: a slow `encode` makes nearly every save outrun, so the saver is
/// forever between a save that writes outran and the next one, and flushes from many
/// tasks land in every moment of that. Each flush must find its own task's last write on
/// disk, and the file must never go back to an older value.
@Suite struct FlushDuringAStormTests {
  /// An `encode` that takes a while (on the saver's queue only) and records the order of
  /// the values it was given.
  final class SlowEncoder: @unchecked Sendable {
    // Sendable: `encoded` is behind `Locked`.
    let encoded = Locked<[Int]>([])
    var encode: @Sendable (Int) throws -> Data {
      { value in
        self.encoded.withLock { $0.append(value) }
        usleep(300)
        return try JSONEncoder().encode(value)
      }
    }
  }

  func store(_ encoder: SlowEncoder, interval: Duration) throws -> PersistedState<Int> {
    try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0,
      encode: encoder.encode, decode: { try JSONDecoder().decode(Int.self, from: $0) },
      minimumSaveInterval: interval)
  }

  @Test(arguments: [Duration.zero, .milliseconds(2), .milliseconds(10), .seconds(3_600)])
  func eachFlushFindsItsOwnWriteOnDisk(interval: Duration) async throws {
    let encoder = SlowEncoder()
    let store = try store(encoder, interval: interval)
    let late = await storm(store, tasks: 6, rounds: 200, kinds: 5)
    #expect(late == 0, "flushes that returned before their own write was on disk")
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 1_200)
    let order = encoder.encoded.current
    #expect(order == order.sorted(), "an older value was saved after a newer one")
  }

  /// Writers on threads of their own that never flush keep the saves outrun; flushers on
  /// other tasks only look. Each flush must find at least the newest value a write had
  /// returned with before it was called.
  @Test func flushesBesideWritersThatNeverWaitFindTheValueAtTheirCall() async throws {
    let encoder = SlowEncoder()
    let store = try store(encoder, interval: .milliseconds(2))
    let stop = Locked(false)
    let late = Locked(0)
    let returned = Locked(0)
    let file = store.file
    let writers = (0..<2).map { _ in
      Thread.detachNewThreadStorm(store, stop, returned)
    }
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<4 {
        group.addTask {
          for _ in 0..<300 {
            let before = returned.current
            do { try await store.saved() } catch { Issue.record("saved() threw \(error)") }
            if (try? decoded(Int.self, at: file)) ?? 0 < before { late.withLock { $0 += 1 } }
          }
        }
      }
    }
    stop.withLock { $0 = true }
    for writer in writers { await writer.wait() }
    #expect(late.current == 0, "flushes that returned before a write that had returned before them")
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == store.state.read)
  }
}

/// A thread that increments the store's value until `stop`; `wait()` returns once it has.
private final class StormThread: @unchecked Sendable {
  // Sendable: `done` is behind `Locked`.
  let done = Locked(false)
  func wait() async {
    while !done.current { try? await Task.sleep(nanoseconds: 1_000_000) }
  }
}

extension Thread {
  /// A thread of its own that writes `store` until `stop`, recording in `returned` the
  /// newest value a write returned with.
  fileprivate static func detachNewThreadStorm(
    _ store: PersistedState<Int>, _ stop: Locked<Bool>, _ returned: Locked<Int>
  ) -> StormThread {
    let thread = StormThread()
    Thread.detachNewThread {
      var round = 0
      while !stop.current {
        // Closure writes, counted once they have returned: only those were made before
        // a flush that reads the count.
        let wrote: Int? =
          round % 2 == 0
          ? store.state.withWriter {
            $0 += 1; return $0
          }
          : store.state.tryWrite {
            $0 += 1; return $0
          }
        if let wrote { returned.withLock { $0 = max($0, wrote) } }
        round += 1
      }
      thread.done.withLock { $0 = true }
    }
    return thread
  }
}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "`saved()` ... does not end early when its task is cancelled" and "'made before the
/// call' counts ... the `writeNext` writes queued before it (it waits for those to run, as
/// `drained()` does)": a `saved()` in a cancelled task, with a write queued behind a proxy
/// another task holds, must wait for that write to run and find it on disk, not skip the
/// drain and flush the version before it.
@Suite struct CancelledFlushDrainsTests {
  @Test func aCancelledFlushWaitsForWritesQueuedBehindAHeldProxy() async throws {
    let store = try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0)
    store.state.writeNext { $0.write = 1 }
    try await store.saved()
    let held = await Task.detached { Locked(store.state.writer) }.value
    #expect(held.withLock { $0 != nil })
    store.state.writeNext { $0.write = 2 }  // queued behind the held proxy
    #expect(store.state.queuedWrites == 1)
    let returned = Locked(false)
    let flush = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      try await store.saved()
      returned.withLock { $0 = true }
      return try decoded(Int.self, at: store.file)
    }
    // The flush cannot return before the release unless it skipped the drain: give it
    // 200 polls to do so (a slow machine can only hide the fault, never fake it).
    for _ in 0..<200 where !returned.current {
      try await Task.sleep(nanoseconds: 1_000_000)
    }
    #expect(!returned.current, "a cancelled saved() returned before the queued write ran")
    held.withLock { $0 = nil }
    #expect(try await flush.value == 2, "a cancelled saved() returned without the queued write")
  }
}

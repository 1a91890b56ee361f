import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// `saved()` awaited inside an async transaction's body on the store's own container.
/// Nothing queued behind the transaction: every write made before the call has ended, so
/// the flush saves them and returns while the body is still open (a transaction's body
/// works on a copy, and "observers and `changes()` ... never wait for the body"), even
/// when the saver must subscribe again after a rest a write outran; the draft is never
/// saved. A write queued behind the transaction can run only after the commit, which
/// waits for the flush: the drain in `saved()` is one of the waits the core stops with a
/// message ("No self-write in a transaction"), never a silent hang.
@Suite struct SavedInsideATransactionTests {
  @Test func aFlushInsideTheBodyReturnsWithTheWritesBeforeItAndNoDraft() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    try await outrunASave(store, encoder)
    let onDiskInside = Locked<Int?>(nil)
    // A watchdog, not a timing bound: a flush that waits for its own body never returns.
    let committed = await finishes(within: 60) {
      try await store.state.transaction { value in
        value = 3  // a draft
        try await store.saved()
        onDiskInside.withLock { $0 = try? decoded(Int.self, at: store.file) }
        value = 4
      }
    }
    #expect(committed, "saved() inside a transaction's body waited for that body")
    guard committed else { return }  // the transaction still holds the writer
    #expect(onDiskInside.current == 2, "the flush did not save the write before it")
    #expect(!encoder.encoded.current.contains(3), "a draft was saved")
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 4)
  }

  @Test func aFlushInsideTheBodyWithAWriteQueuedBehindItStopsWithAMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      childWatchdog(20, "saved() inside a transaction")
      let store = try! PersistedState(
        file: makeFolder("savedInsideATransaction").appendingPathComponent("n.json"),
        default: 0)
      try! await store.state.transaction { value in
        value = 1
        // Another task's write, queued behind this transaction's commit.
        await Task.detached { store.state.writeNext { $0.write = 2 } }.value
        try await store.saved()
      }
    }
    let text = standardError(result)
    #expect(!text.contains("WATCHDOG"), "stderr: \(text.suffix(1500))")
    #expect(text.contains("inside an async transaction's body"), "stderr: \(text.suffix(1500))")
    #expect(text.contains("PersistedState.saved()"), "stderr: \(text.suffix(1500))")
  }
}

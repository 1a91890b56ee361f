import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "`saved()` returns once every write made before the call is on disk", and a
/// transaction's body works on a copy, so changes() "never wait for the body": unlike a
/// proxy that wrote over unsaved writes (documented to hold the flush up), an async
/// transaction still open over unsaved writes must not hold a flush of them up, and its
/// draft must never reach the file.
@Suite struct OpenTransactionFlushTests {
  @Test func aFlushDoesNotWaitForATransactionOpenOverUnsavedWrites() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .milliseconds(10))  // the default
    encoder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    // While the saver is busy with 1: a write that ends, then a transaction over it.
    store.state.withWriter { $0 = 2 }
    let transaction = DraftTransaction(store, polls: 2_000)
    try await waitUntil { transaction.isOpen }
    encoder.release()
    try await flushPastAnOpenTransaction(store, encoder, transaction)
  }
}

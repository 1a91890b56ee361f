import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "`saved()` returns once every write made before the call is on disk", and a
/// transaction's body works on a copy, so `changes()` "never wait for the body": an async
/// transaction opened while the saver rests after a save that a write outran (that write
/// not on disk yet) must not hold a flush of it up, and its draft must never be saved.
@Suite struct TransactionOpenAfterAnOutrunSaveTests {
  @Test func aFlushDoesNotWaitForATransactionOpenedDuringTheRest() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    try await outrunASave(store, encoder)  // 2 outruns the save of 1
    let transaction = DraftTransaction(store, polls: 60_000)
    try await waitUntil { transaction.isOpen }
    try await flushPastAnOpenTransaction(store, encoder, transaction)
  }
}

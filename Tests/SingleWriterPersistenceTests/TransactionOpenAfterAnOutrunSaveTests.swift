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
    let store = try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0,
      encode: encoder.encode, decode: { try JSONDecoder().decode(Int.self, from: $0) },
      minimumSaveInterval: .seconds(3_600))
    encoder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    store.state.withWriter { $0 = 2 }  // outruns the save of 1
    encoder.release()
    try await waitUntil { store.saverIsResting || encoder.encoded.current.count > 1 }
    let flushed = Locked(false)
    let bodyOpen = Locked(false)
    let transaction = Task.detached {
      try await store.state.transaction { value in
        value = 3  // a draft: never saved before the commit
        bodyOpen.withLock { $0 = true }
        // Open until the flush has returned; the count only ends a flush that waits for
        // this body, so that the test fails instead of hanging.
        var polls = 60_000
        while !flushed.current, polls > 0 {
          try? await Task.sleep(nanoseconds: 1_000_000)
          polls -= 1
        }
        bodyOpen.withLock { $0 = false }
        value = 4
      }
    }
    try await waitUntil { bodyOpen.current }
    try await store.saved()
    let openAtFlush = bodyOpen.current
    let onDisk = try decoded(Int.self, at: store.file)
    flushed.withLock { $0 = true }
    try await transaction.value
    #expect(openAtFlush, "saved() waited for the transaction's body")
    #expect(onDisk == 2)
    #expect(!encoder.encoded.withLock { $0 }.contains(3), "a draft was saved")
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 4)
  }
}

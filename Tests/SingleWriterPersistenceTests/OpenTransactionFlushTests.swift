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
    let store = try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0,
      encode: encoder.encode, decode: { try JSONDecoder().decode(Int.self, from: $0) })
    encoder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    // While the saver is busy with 1: a write that ends, then a transaction over it.
    store.state.withWriter { $0 = 2 }
    let flushed = Locked(false)
    let bodyOpen = Locked(false)
    let transaction = Task.detached {
      try await store.state.transaction { value in
        value = 3  // a draft: never saved before the commit
        bodyOpen.withLock { $0 = true }
        var polls = 2_000
        while !flushed.current, polls > 0 {
          try? await Task.sleep(nanoseconds: 1_000_000)
          polls -= 1
        }
        bodyOpen.withLock { $0 = false }
        value = 4
      }
    }
    while !bodyOpen.current { try await Task.sleep(nanoseconds: 1_000_000) }
    encoder.release()
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

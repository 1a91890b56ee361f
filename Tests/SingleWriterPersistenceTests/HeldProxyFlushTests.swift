import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "`saved()` returns once every write made before the call is on disk; a proxy still
/// held is saved after its checkout ends": a flush does not wait for a held proxy whose
/// writes came after the last save; one that wrote over unsaved writes holds the flush up
/// until its release (documented), and the flush then has them all.
@Suite struct HeldProxyFlushTests {
  func store(_ encoder: RecordingEncoder<Int>) throws -> PersistedState<Int> {
    try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0,
      encode: encoder.encode, decode: { try JSONDecoder().decode(Int.self, from: $0) })
  }

  @Test func aFlushDoesNotWaitForAProxyHeldAfterTheLastSave() async throws {
    let store = try store(RecordingEncoder())
    store.state.writeNext { $0.write = 1 }
    try await store.saved()
    var proxy = store.state.writer
    proxy?.write = 2
    try await store.saved()  // returns with the proxy still held
    #expect(try decoded(Int.self, at: store.file) == 1)
    proxy = nil
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 2)
  }

  @Test func aProxyOverUnsavedWritesHoldsTheFlushUntilItsRelease() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try store(encoder)
    encoder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    // While the saver is busy with 1: a write that ends, then a proxy that writes over it.
    #expect(store.state.tryWrite { $0 = 2 } != nil)
    var proxy = store.state.writer
    proxy?.write = 3
    let flush = Task { try await store.saved() }
    encoder.release()
    proxy = nil  // from another task than the flush's: it can go on
    try await flush.value
    #expect(try decoded(Int.self, at: store.file) >= 2)
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 3)
    #expect(proxy == nil)
  }
}

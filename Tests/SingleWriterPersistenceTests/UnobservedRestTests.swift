import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// Promise 2, out of the way: while writes outrun the saves, the saver rests unsubscribed,
/// so that those writes cost what unobserved ones do, and no write is lost for it. A save
/// that a write outran (here: one made while `encode` is held) starts such a rest.
@Suite struct UnobservedRestTests {
  @Test func aFlushDuringTheRestSavesAWriteNoVersionCounted() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    try await outrunASave(store, encoder)
    #expect(!store.state.isObserved)
    // Unobserved: this write moves no version, so only the saver's new subscription,
    // which the flush starts, can tell it is not on disk.
    store.state.writeNext { $0.write = 3 }
    #expect(encoder.encoded.current == [1])
    let flushed = await finishes(within: 120) { try await store.saved() }
    #expect(flushed, "saved() waited for a rest of an hour")
    #expect(try decoded(Int.self, at: store.file) == 3, "saved() returned before 3 was saved")
    #expect(encoder.encoded.current == [1, 3])
    // Subscribed again, and nothing outran that save: the next rest follows the writes.
    try await waitUntil { store.saverIsResting }
    #expect(store.state.isObserved)
    store.state.writeNext { $0.write = 4 }
    try await store.saved()
    #expect(encoder.encoded.current == [1, 3, 4])
  }

  @Test func aWriteDuringTheRestIsSavedWhenItEndsWithNoFlush() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(2))
    try await outrunASave(store, encoder)
    store.state.writeNext { $0.write = 3 }
    let file = store.file
    try await waitUntil { (try? decoded(Int.self, at: file)) == 3 }
  }

  @Test func aStoreDroppedDuringTheRestSavesItsLastValue() async throws {
    let encoder = RecordingEncoder<Int>()
    var store: PersistedState<Int>? = try intStore(encoder, interval: .seconds(2))
    let file = store!.file
    try await outrunASave(store!, encoder)
    store!.state.writeNext { $0.write = 3 }
    store = nil
    try await waitUntil { (try? decoded(Int.self, at: file)) == 3 }
  }

  @Test func aSaveThatNoWriteOutranRestsSubscribed() async throws {
    // A write after a quiet spell: its save is not outrun, so the saver rests subscribed
    // and saves nothing twice.
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    store.state.writeNext { $0.write = 1 }
    try await waitUntil { store.saverIsResting }
    #expect(store.state.isObserved)
    try await store.saved()
    #expect(encoder.encoded.current == [1], "saved() saved an unchanged value again")
  }
}

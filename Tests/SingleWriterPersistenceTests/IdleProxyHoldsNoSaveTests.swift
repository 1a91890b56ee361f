import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "`saved()` returns once every write made before the call is on disk" and "every change
/// is saved without being asked": a proxy that is held but has written nothing holds up
/// neither (only "a proxy held at the call that has written while writes before it were
/// not saved yet holds the flush up"). Here the proxy is taken while the saver rests after
/// a save that a write outran, so the write is not on disk yet and the saver must read the
/// container past the held checkout.
@Suite struct IdleProxyHoldsNoSaveTests {
  /// A proxy taken by another task, which writes nothing through it.
  func idleProxy(of store: PersistedState<Int>) async -> Locked<ThreadSafeWriterProxy<Int>?> {
    let held = await Task.detached { Locked(store.state.writer) }.value
    #expect(held.withLock { $0 != nil })
    return held
  }

  @Test func aFlushDoesNotWaitForAProxyThatHasWrittenNothing() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    try await outrunASave(store, encoder)
    let held = await idleProxy(of: store)
    // A watchdog, not a timing bound: with the proxy held the flush never returns.
    let flushed = await finishes(within: 60) { try await store.saved() }
    #expect(flushed, "saved() waited for a proxy that has written nothing")
    #expect(try decoded(Int.self, at: store.file) == 2, "saved() returned before 2 was saved")
    held.withLock { $0 = nil }
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 2)
  }

  @Test func aChangeIsSavedWhileAProxyThatHasWrittenNothingIsHeld() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .milliseconds(100))
    try await outrunASave(store, encoder)
    let held = await idleProxy(of: store)
    // The rest ends by itself; no flush asks for 2.
    let file = store.file
    try await waitUntil(atMost: 60) { (try? decoded(Int.self, at: file)) == 2 }
    held.withLock { $0 = nil }
  }

  @Test func aProxyTakenBeforeTheRestAndIdleDoesNotHoldTheFlush() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    encoder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    store.state.withWriter { $0 = 2 }
    // Taken while the saver still saves 1 (and still observes the container).
    let held = await idleProxy(of: store)
    encoder.release()
    try await waitUntil { store.saverIsResting || encoder.encoded.current.count > 1 }
    let flushed = await finishes(within: 60) { try await store.saved() }
    #expect(flushed, "saved() waited for a proxy that has written nothing")
    #expect(try decoded(Int.self, at: store.file) == 2, "saved() returned before 2 was saved")
    held.withLock { $0 = nil }
  }
}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "`saved()` ... a proxy held at the call that has written while writes before it were
/// not saved yet holds the flush up": only such a proxy. On the main actor, which holds a
/// proxy it took and has only read through, with nothing queued behind it, a flush
/// during a rest taken unsubscribed after a save a write outran must return with that
/// write on disk. The flush runs in a main-actor task of its own under a watchdog, so
/// that a fault fails the test instead of hanging it.
@Suite struct MainActorFlushBesideItsOwnIdleProxyTests {
  @Test @MainActor func aMainActorFlushBesideAnIdleMainActorProxyReturns() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    try await outrunASave(store, encoder)
    let held = Locked(store.state.writer)
    #expect(held.withLock { $0?.write } == 2)  // a read through the main actor's proxy
    // A watchdog, not a timing bound: a flush that waits for the proxy never returns.
    let flushed = await finishes(within: 60) { @MainActor in try await store.saved() }
    #expect(flushed, "saved() waited for a proxy that only read")
    #expect(try decoded(Int.self, at: store.file) == 2, "saved() returned before 2 was saved")
    held.withLock { $0 = nil }
  }
}

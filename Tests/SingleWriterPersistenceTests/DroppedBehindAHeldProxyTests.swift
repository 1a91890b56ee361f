import Dispatch
import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Saving goes on while `state` lives, even if this object is released first, and ends
/// with a save of the value the container was freed with", when the store is dropped
/// during a rest taken unsubscribed after a save a write outran, while another task holds
/// a proxy that wrote, with a `writeNext` queued behind it: the proxy keeps the container
/// alive, its release runs the queued write and frees the container, on one side or the
/// other of the saver's new subscription (which waits for the written checkout). The
/// last value, the queued write's, must reach the file, and the saver must end.
@Suite struct DroppedBehindAHeldProxyTests {
  /// Where the proxy is released: while the saver still rests unsubscribed, or once it
  /// has subscribed again and waits for the checkout.
  enum Release: String, CaseIterable, Sendable { case duringTheRest, afterTheSubscription }

  @Test(arguments: Release.allCases)
  func theQueuedWriteIsSavedAndTheSaverEnds(_ release: Release) async throws {
    let encoder = RecordingEncoder<Int>()
    let file = makeFolder().appendingPathComponent("n.json")
    let freed = DispatchSemaphore(value: 0)
    var store: PersistedState<Int>? = try PersistedState(
      file: file, default: 0, encode: encodeSignalling(freed, recording: encoder),
      decode: { try JSONDecoder().decode(Int.self, from: $0) },
      minimumSaveInterval: .milliseconds(200))
    try await outrunASave(store!, encoder)
    let state = store!.state
    let held = await Task.detached {
      let proxy = state.writer
      proxy?.write = 3
      return Locked(proxy)
    }.value
    #expect(held.withLock { $0 != nil })
    state.writeNext { $0.write = 4 }  // queued behind the proxy
    weak let container = state
    store = nil
    _ = consume state
    if release == .afterTheSubscription {
      try await waitUntil { container?.isObserved == true }
    }
    held.withLock { $0 = nil }  // runs the queued write; the container may go with it
    // A watchdog, not a timing bound: a saver that never ends never frees the sentinel.
    let ended = await finishes(within: 120) { await saverEnded(freed) }
    #expect(ended, "the saver never ended")
    #expect(container == nil)
    #expect(try decoded(Int.self, at: file) == 4)
    #expect(encoder.encoded.current.last == 4)
  }
}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "`saved()` returns once every write made before the call is on disk": only "a proxy
/// held at the call that has written while writes before it were not saved yet holds the
/// flush up". While the saver rests unsubscribed after a save that a write outran, a
/// subscriber waits for a held checkout only if the core's `proxy_wrote` mark says it
/// wrote. So the mark must be set by writes only (a read through `proxy.write` is none),
/// and taken by every end of the checkout that set it: one left behind makes the next,
/// idle, checkout look written, and the flush waits for a proxy that never wrote.
@Suite struct ProxyMarkAcrossTheRestTests {
  /// How the checkout that wrote 3 during the rest ended.
  enum Ending: String, CaseIterable, Sendable {
    case proxyReleased, writeNextBody, checkoutTask
  }

  @Test func aProxyThatOnlyReadThroughWriteHoldsNoFlush() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    try await outrunASave(store, encoder)
    let held = await Task.detached {
      let proxy = store.state.writer
      #expect(proxy?.write == 2)  // a read access through the proxy
      return Locked(proxy)
    }.value
    #expect(held.withLock { $0 != nil })
    // A watchdog, not a timing bound: a flush that waits for the proxy never returns.
    let flushed = await finishes(within: 60) { try await store.saved() }
    #expect(flushed, "saved() waited for a proxy that only read")
    #expect(try decoded(Int.self, at: store.file) == 2)
    held.withLock { $0 = nil }
  }

  @Test(arguments: Ending.allCases)
  func aWrittenCheckoutThatEndedLeavesNoMarkOnTheNext(_ ending: Ending) async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    try await outrunASave(store, encoder)
    // Unobserved: this checkout writes 3 and ends while nobody watches.
    switch ending {
    case .proxyReleased:
      await Task.detached {
        let proxy = store.state.writer
        proxy?.write = 3
      }.value
    case .writeNextBody:
      store.state.writeNext { $0.write = 3 }
    case .checkoutTask:
      try await Task.detached {
        let proxy = try await store.state.checkout()
        proxy.write = 3
      }.value
    }
    #expect(store.state.read == 3)
    let held = await Task.detached { Locked(store.state.writer) }.value
    #expect(held.withLock { $0 != nil })
    let flushed = await finishes(within: 60) { try await store.saved() }
    #expect(flushed, "saved() waited for an idle proxy after a \(ending) wrote")
    #expect(try decoded(Int.self, at: store.file) == 3, "saved() returned before 3 was saved")
    held.withLock { $0 = nil }
    try await store.saved()
    #expect(encoder.encoded.current.last == 3)
  }
}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// Promise 2, out of the way: a stream of changes is saved at most once per
/// `minimumSaveInterval`, a change after a quiet spell at once, and `saved()` never waits
/// for the interval.
@Suite struct SaveIntervalTests {
  @Test func theFirstChangeIsSavedAtOnceTheNextAfterTheIntervalOrAFlush() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    store.state.writeNext { $0.write = 1 }
    // No `saved()`: a change after a quiet spell does not wait.
    try await waitUntil { encoder.encoded.current == [1] }
    // Then the saver rests for its hour, and only a flush can end that.
    try await waitUntil { store.saverIsResting }
    store.state.writeNext { $0.write = 2 }
    store.state.withWriter { $0 = 3 }
    #expect(store.saverIsResting)
    #expect(encoder.encoded.current == [1], "resting: no save")
    try await store.saved()
    #expect(encoder.encoded.current == [1, 3], "the flush ends the rest; the burst is one save")
    #expect(try decoded(Int.self, at: store.file) == 3)
  }

  @Test func aChangeDuringTheRestIsSavedWhenItEndsWithNoFlush() async throws {
    // The rest's own timer, with no `saved()` to end it: the change made during it is
    // saved once it is over. (A save slower than the interval rests not at all.)
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .milliseconds(300))
    store.state.writeNext { $0.write = 1 }
    try await waitUntil { encoder.encoded.current == [1] }
    store.state.writeNext { $0.write = 2 }
    try await waitUntil { encoder.encoded.current == [1, 2] }
  }

  @Test func theLoadedValueStartsNoRest() async throws {
    // The saver's first value is the one loaded, which the disk has: it saves nothing,
    // and must not rest either, else the first change waits out the interval.
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    // Give the saver time to take that first value (if it has not, this passes anyway).
    try await Task.sleep(for: .milliseconds(200))
    #expect(!store.saverIsResting)
    store.state.writeNext { $0.write = 1 }
    // A saver that rests now has saved 1 first, unless it rested before the change.
    try await waitUntil { encoder.encoded.current == [1] || store.saverIsResting }
    #expect(encoder.encoded.current == [1])
  }

  @Test func aFlushDuringASaveIsNotHeldUpByTheRestAfterIt() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .seconds(3_600))
    encoder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    store.state.writeNext { $0.write = 2 }
    // The flush comes while the save of 1 runs: the saver must not rest before saving 2.
    let flushed = Task { try await store.saved() }
    try await waitUntil { store.flushesWaiting == 1 }
    encoder.release()
    try await flushed.value
    #expect(encoder.encoded.current == [1, 2])
  }

  @Test func aZeroIntervalSavesAgainAsSoonAsASaveEnds() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try intStore(encoder, interval: .zero)
    encoder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    store.state.writeNext { $0.write = 2 }
    encoder.release()
    // No `saved()`: with an interval, 2 would wait for it.
    try await waitUntil { encoder.encoded.current == [1, 2] }
    #expect(!store.saverIsResting)
  }

  @Test func aNegativeIntervalStopsWithAMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = try? PersistedState(
        file: makeFolder().appendingPathComponent("n.json"), default: 0,
        minimumSaveInterval: .seconds(-1))
    }
    #expect(standardError(result).contains("negative minimumSaveInterval"))
  }
}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// Promise 4 where writes outran a save that failed: the failure is reported once, the
/// write that outran it retries it (its save replaces the failed value), `saved()` throws
/// only if the save of the writes before it failed, and a `saved()` after the disk is back
/// succeeds with no new change.
@Suite struct FailureAroundAnOutrunSaveTests {
  /// An `encode` that holds like `RecordingEncoder` and refuses the values in `failing`.
  struct Refusing: Sendable {
    let recorder = RecordingEncoder<Int>()
    let failing: Locked<Set<Int>>

    var encode: @Sendable (Int) throws -> Data {
      let record = recorder.encode
      let failing = failing
      return { value in
        let data = try record(value)
        if failing.current.contains(value) { throw Refused() }
        return data
      }
    }
  }

  func store(_ encoder: Refusing, reported: Locked<Int>) throws -> PersistedState<Int> {
    try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0,
      encode: encoder.encode, decode: { try JSONDecoder().decode(Int.self, from: $0) },
      minimumSaveInterval: .seconds(3_600),
      onSaveFailure: { _ in reported.withLock { $0 += 1 } })
  }

  /// The save of 1 fails with 2 written during it; returns once the saver rests after it.
  func failAnOutrunSave(_ store: PersistedState<Int>, _ encoder: Refusing) async throws {
    encoder.recorder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.recorder.waitUntilHeld()
    store.state.withWriter { $0 = 2 }
    encoder.recorder.release()
    try await waitUntil { store.saverIsResting || encoder.recorder.encoded.current.count > 1 }
  }

  @Test func theWriteThatOutranAFailedSaveIsSavedByTheNextFlush() async throws {
    let encoder = Refusing(failing: Locked([1]))
    let reported = Locked(0)
    let store = try store(encoder, reported: reported)
    try await failAnOutrunSave(store, encoder)
    #expect(reported.current == 1)
    let flushed = await finishes(within: 60) { try await store.saved() }
    #expect(flushed, "saved() waited out the rest")
    #expect(try decoded(Int.self, at: store.file) == 2)
    #expect(encoder.recorder.encoded.current == [1, 2])
    try await store.saved()  // nothing failed since: no throw, no save
    #expect(encoder.recorder.encoded.current == [1, 2])
  }

  @Test func aFlushThrowsWhileTheOutrunningWriteFailsTooThenRecovers() async throws {
    let encoder = Refusing(failing: Locked([1, 2]))
    let reported = Locked(0)
    let store = try store(encoder, reported: reported)
    try await failAnOutrunSave(store, encoder)
    await #expect {
      try await store.saved()
    } throws: { error in
      (error as? PersistenceError)?.kind == .encode
        && (error as? PersistenceError)?.underlying is Refused
    }
    #expect((try? decoded(Int.self, at: store.file)) == nil, "a refused value was written")
    // Alike failures are reported once, until a save succeeds.
    #expect(reported.current == 1)
    // The disk is back: a flush with no new change saves the newest value.
    encoder.failing.withLock { $0 = [] }
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 2)
    // And the next change is saved as usual.
    store.state.writeNext { $0.write = 3 }
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 3)
  }

  @Test func theNextChangeRetriesAFailedSaveThatAWriteOutran() async throws {
    let encoder = Refusing(failing: Locked([1, 2]))
    let reported = Locked(0)
    let store = try store(encoder, reported: reported)
    try await failAnOutrunSave(store, encoder)
    await #expect(throws: PersistenceError.self) { try await store.saved() }
    encoder.failing.withLock { $0 = [] }
    store.state.writeNext { $0.write = 3 }
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 3)
    #expect(!encoder.recorder.encoded.current.contains(where: { $0 > 3 }))
  }
}

/// The error the test's encoder throws.
private struct Refused: Error {}

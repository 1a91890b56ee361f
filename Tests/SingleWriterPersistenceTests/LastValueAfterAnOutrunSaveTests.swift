import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Saving ... ends with a save of the value the container was freed with", when the
/// container is freed around a save that a write outran: with a consumer's own
/// `changes()` stream beside the saver, and from inside the failure handler of that save.
@Suite struct LastValueAfterAnOutrunSaveTests {
  @Test func aStoreDroppedDuringTheRestBesideAnotherStreamSavesItsLastValue() async throws {
    let encoder = RecordingEncoder<Int>()
    var store: PersistedState<Int>? = try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0,
      encode: encoder.encode, decode: { try JSONDecoder().decode(Int.self, from: $0) },
      minimumSaveInterval: .milliseconds(200))
    let file = store!.file
    // A consumer's own stream, never iterated: the container stays observed throughout.
    let stream = store!.state.changes()
    weak let container = store!.state
    encoder.hold()
    store!.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    store!.state.withWriter { $0 = 2 }
    encoder.release()
    try await resting(store!, encoder)
    store!.state.writeNext { $0.write = 3 }
    store = nil
    try await waitUntil { (try? decoded(Int.self, at: file)) == 3 }
    try await waitUntil { container == nil }
    withExtendedLifetime(stream) {}
  }

  /// Waits, in a scope of its own, for the saver's rest after the outrun save: a local
  /// that held the store would keep it alive until the test's end in a debug build.
  func resting(_ store: PersistedState<Int>, _ encoder: RecordingEncoder<Int>) async throws {
    try await waitUntil { store.saverIsResting || encoder.encoded.current.count > 1 }
  }

  @Test func aStoreDroppedByTheFailureHandlerOfAnOutrunSaveSavesItsLastValue() async throws {
    let encoder = RecordingEncoder<Int>()
    let holder = Locked<PersistedState<Int>?>(nil)
    let encode = encoder.encode
    let file = makeFolder().appendingPathComponent("n.json")
    holder.withLock {
      $0 = try? PersistedState(
        file: file, default: 0,
        encode: { value in
          let data = try encode(value)
          if value == 1 { throw Refused() }
          return data
        }, decode: { try JSONDecoder().decode(Int.self, from: $0) },
        minimumSaveInterval: .milliseconds(200),
        onSaveFailure: { _ in holder.withLock { $0 = nil } })  // the last reference
    }
    weak let container = holder.current?.state
    #expect(container != nil)
    encoder.hold()
    holder.current?.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    holder.current?.state.withWriter { $0 = 2 }
    encoder.release()
    try await waitUntil { container == nil }
    try await waitUntil { (try? decoded(Int.self, at: file)) == 2 }
    #expect(encoder.encoded.current == [1, 2])
  }
}

/// The error the test's encoder throws.
private struct Refused: Error {}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Every change is saved without being asked" and "nothing crashes", when the value the
/// saver saved is freed by the saver around a save that a write outran, and its `deinit`
/// writes to the store: that write is a change like any other, and is saved.
@Suite struct ValueDeinitAroundAnOutrunSaveTests {
  /// Runs `body` when freed.
  final class Note: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    deinit { body() }
  }

  /// A count, with a note that the file never holds.
  struct Noted: Codable, Sendable {
    var n = 0
    var note: Note?
    enum CodingKeys: String, CodingKey { case n }
  }

  @Test func aWriteFromTheDeinitOfTheSavedValueIsSaved() async throws {
    let encoder = RecordingEncoder<Int>()
    let encode = encoder.encode
    let store = try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: Noted(),
      encode: { try encode($0.n) },
      decode: { Noted(n: try JSONDecoder().decode(Int.self, from: $0)) },
      minimumSaveInterval: .seconds(3_600))
    weak let container = store.state
    let freed = Locked(false)
    encoder.hold()
    store.state.writeNext {
      $0.write = Noted(
        n: 1,
        note: Note {
          container?.writeNext { $0.write.n += 100 }
          freed.withLock { $0 = true }
        })
    }
    await encoder.waitUntilHeld()
    // Outruns the save of 1, and drops the container's reference to the note: the saver's
    // copies are its last ones.
    store.state.withWriter { $0 = Noted(n: 2) }
    encoder.release()
    // The saver keeps the value it saved until it is delivered the next: this flush has it
    // saved, and the note is freed on the saver's task.
    try await store.saved()
    try await waitUntil { freed.current }
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 102)
    #expect(store.state.read.n == 102)
  }
}

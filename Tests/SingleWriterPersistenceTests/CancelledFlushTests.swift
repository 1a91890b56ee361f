import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "`saved()` ... does not end early when its task is cancelled: a flush before quitting
/// should finish", cancelled before it starts or while it waits for a save in flight.
@Suite struct CancelledFlushTests {
  @Test func aCancelledFlushStillWaitsForTheSave() async throws {
    let encoder = RecordingEncoder<Int>()
    let file = makeFolder().appendingPathComponent("n.json")
    let store = try PersistedState(
      file: file, default: 0, encode: encoder.encode,
      decode: { try JSONDecoder().decode(Int.self, from: $0) })
    encoder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    store.state.writeNext { $0.write = 2 }
    let before = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      try await store.saved()
      return try decoded(Int.self, at: file)
    }
    let during = Task {
      try await store.saved()
      return try decoded(Int.self, at: file)
    }
    during.cancel()
    encoder.release()
    #expect(try await before.value == 2)
    #expect(try await during.value == 2)
  }
}

import Dispatch
import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Saving goes on while `state` lives, even if this object is released first, and ends
/// with a save of the value the container was freed with": the last write before the
/// container is freed reaches the file, a store made and dropped writes nothing, and the
/// saver ends (nothing keeps the container or the saver alive).
@Suite struct FinalValueTests {
  func decode(_ data: Data) throws -> Int { try JSONDecoder().decode(Int.self, from: data) }

  @Test func theValueTheContainerWasFreedWithIsSavedAfterASaveInFlight() async throws {
    let encoder = RecordingEncoder<Int>()
    let file = makeFolder().appendingPathComponent("n.json")
    let freed = DispatchSemaphore(value: 0)
    var store: PersistedState<Int>? = try PersistedState(
      file: file, default: 0, encode: encodeSignalling(freed, recording: encoder), decode: decode)
    weak let container = store!.state
    encoder.hold()
    store!.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    // Published while the saver is busy with 1; the container is freed before it looks.
    store!.state.writeNext { $0.write = 2 }
    store = nil
    #expect(container == nil)
    encoder.release()
    await saverEnded(freed)
    #expect(encoder.encoded.current == [1, 2])
    #expect(try decoded(Int.self, at: file) == 2)
  }

  @Test func aStoreWrittenAndDroppedAtOnceSavesItsWrite() async throws {
    // The saver's task may not have started when the container is freed.
    for round in 0..<200 {
      let file = makeFolder().appendingPathComponent("n.json")
      let freed = DispatchSemaphore(value: 0)
      var store: PersistedState<Int>? = try PersistedState(
        file: file, default: 0, encode: encodeSignalling(freed), decode: decode)
      store!.state.writeNext { $0.write = round + 1 }
      store = nil
      await saverEnded(freed)
      #expect(try decoded(Int.self, at: file) == round + 1, "round \(round)")
    }
  }

  @Test func aStoreMadeAndDroppedWritesNothingAndEnds() async throws {
    let folder = makeFolder()
    let freed = DispatchSemaphore(value: 0)
    var store: PersistedState<Int>? = try PersistedState(
      file: folder.appendingPathComponent("n.json"), default: 0, encode: encodeSignalling(freed),
      decode: decode)
    weak let container = store!.state
    _ = store!.state.read
    store = nil
    await saverEnded(freed)
    #expect(container == nil)
    #expect(names(in: folder).isEmpty)
  }
}

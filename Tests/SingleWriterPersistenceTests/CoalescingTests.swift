import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// Promise 2, in order and out of the way: one save at a time, a burst ends in one save
/// of its last value, an older value never replaces a newer one, and no writer or reader
/// waits for a save.
@Suite struct CoalescingTests {
  func store(_ encoder: RecordingEncoder<Int>) throws -> PersistedState<Int> {
    try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0,
      encode: encoder.encode, decode: { try JSONDecoder().decode(Int.self, from: $0) })
  }

  @Test func aBurstDuringASaveEndsInOneSaveOfItsLastValue() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try store(encoder)
    encoder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    for n in 2...1_000 { store.state.writeNext { $0.write = n } }
    encoder.release()
    try await store.saved()
    #expect(encoder.encoded.current == [1, 1_000])
    #expect(try decoded(Int.self, at: store.file) == 1_000)
  }

  @Test func writersAndReadersNeverWaitForASave() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try store(encoder)
    encoder.hold()
    store.state.writeNext { $0.write = 1 }
    await encoder.waitUntilHeld()
    // The save is stopped part-way: every write and read still goes through at once.
    #expect(store.state.tryWrite { $0 = 2 } != nil)
    #expect(store.state.read == 2)
    let proxy = store.state.writer
    #expect(proxy != nil)
    proxy?.write = 3
    #expect(store.state.read { $0 } == 3)
    encoder.release()
    withExtendedLifetime(proxy) {}
  }

  @Test func savesAreInOrderAndTheLastValueWins() async throws {
    let encoder = RecordingEncoder<Int>()
    let store = try store(encoder)
    await withTaskGroup(of: Void.self) { group in
      for task in 0..<4 {
        group.addTask {
          for n in 0..<500 {
            if n % 50 == 0 { try? await store.saved() }
            store.state.writeNext { $0.write = max($0.write, task * 500 + n) }
          }
        }
      }
    }
    try await store.saved()
    let encoded = encoder.encoded.current
    #expect(encoded == encoded.sorted())
    #expect(encoded.last == store.state.read)
    #expect(try decoded(Int.self, at: store.file) == store.state.read)
  }

  @Test func aHalfDoneCheckoutIsNeverSaved() async throws {
    let url = makeFolder().appendingPathComponent("linked.json")
    let encoder = RecordingEncoder<Linked>()
    let store = try PersistedState(
      file: url, default: Linked(), encode: encoder.encode,
      decode: { try JSONDecoder().decode(Linked.self, from: $0) })
    for n in 1...200 {
      let proxy = store.state.writer!
      proxy.write.a = n  // visible to `read` at once; not to the saver
      if n % 20 == 0 { store.state.writeNext { $0.write.padding += "" } }  // queues behind
      await Task.yield()
      proxy.write.b = n
      proxy.write.padding = String(repeating: "x", count: 4_000 + n % 997)
      withExtendedLifetime(proxy) {}
    }
    try await store.saved()
    #expect(encoder.encoded.current.allSatisfy { $0.isConsistent })
    #expect(try decoded(Linked.self, at: url).a == 200)
  }
}

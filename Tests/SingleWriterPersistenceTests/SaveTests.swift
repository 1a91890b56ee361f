import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// Promises 2 and 3: every change is saved without being asked, and `saved()` returns
/// once every write made before it is on disk.
@Suite struct SaveTests {
  @Test func everyKindOfWriteIsSaved() async throws {
    let url = makeFolder().appendingPathComponent("counter.json")
    let store = try PersistedState(file: url, default: 0)
    let box = store.state

    box.writeNext { $0.write += 1 }  // a queued write, run in place
    try await store.saved()
    #expect(try decoded(Int.self, at: url) == 1)

    box.withWriter { $0 += 1 }  // a closure write
    try await store.saved()
    #expect(try decoded(Int.self, at: url) == 2)

    box.withWriter { $0 += 1 }
    try await store.saved()
    #expect(try decoded(Int.self, at: url) == 3)

    do {
      let proxy = box.writer!  // a checkout's end
      proxy.write += 1
      withExtendedLifetime(proxy) {}
    }
    try await store.saved()
    #expect(try decoded(Int.self, at: url) == 4)

    await box.write { $0 += 1 }
    try await store.saved()
    #expect(try decoded(Int.self, at: url) == 5)

    do {
      let proxy = try await box.checkout()
      proxy.write += 1
    }
    try await store.saved()
    #expect(try decoded(Int.self, at: url) == 6)
  }

  @Test func queuedWritesBeforeTheCallAreSaved() async throws {
    let url = makeFolder().appendingPathComponent("counter.json")
    let store = try PersistedState(file: url, default: 0)
    // The writes queue behind a held checkout and run when it ends, on this thread.
    do {
      let held = store.state.writer!
      for _ in 0..<100 { store.state.writeNext { $0.write += 1 } }
      withExtendedLifetime(held) {}
    }
    try await store.saved()
    #expect(try decoded(Int.self, at: url) == 100)
  }

  @Test func savedWaitsForWritesQueuedBehindAHeldProxy() async throws {
    let url = makeFolder().appendingPathComponent("counter.json")
    let store = try PersistedState(file: url, default: 0)
    let held = Locked(store.state.writer)
    for _ in 0..<100 { store.state.writeNext { $0.write += 1 } }
    // Queued before the call, so counted, though they run only once the proxy goes.
    let flush = Task { try await store.saved() }
    for _ in 0..<10 { await Task.yield() }
    held.withLock { $0 = nil }
    try await flush.value
    #expect(try decoded(Int.self, at: url) == 100)
  }

  @Test func writesFromManyTasksAllReachTheDisk() async throws {
    let url = makeFolder().appendingPathComponent("counter.json")
    let store = try PersistedState(file: url, default: 0)
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<8 {
        group.addTask {
          for _ in 0..<250 { store.state.writeNext { $0.write += 1 } }
        }
      }
    }
    try await store.saved()
    #expect(try decoded(Int.self, at: url) == 2_000)
  }

  @Test func theFileIsReadableJSONWithSortedKeys() async throws {
    let url = makeFolder().appendingPathComponent("settings.json")
    let settings = try PersistedState(file: url, default: Settings())
    settings.state.writeNext { $0.write.fontSize = 14 }
    try await settings.saved()
    #expect(text(of: url) == "{\n  \"fontSize\" : 14,\n  \"theme\" : \"light\"\n}")
  }

  @Test func aCustomFormatIsUsedBothWays() async throws {
    let url = makeFolder().appendingPathComponent("settings.plist")
    let make = {
      try PersistedState(
        file: url, default: Settings(),
        encode: { try PropertyListEncoder().encode($0) },
        decode: { try PropertyListDecoder().decode(Settings.self, from: $0) })
    }
    do {
      let settings = try make()
      settings.state.writeNext { $0.write.theme = "dark" }
      try await settings.saved()
    }
    #expect(text(of: url)?.hasPrefix("bplist") == true)  // the encoder's binary format
    #expect(try make().state.read.theme == "dark")
  }

  @Test func theSaveLeavesNoTemporaryFileBehind() async throws {
    let folder = makeFolder()
    let store = try PersistedState(file: folder.appendingPathComponent("n.json"), default: 0)
    for n in 1...20 {
      store.state.writeNext { $0.write = n }
      try await store.saved()
    }
    #expect(names(in: folder) == ["n.json"])
  }

  @Test func savingGoesOnAfterThePersistedStateIsReleased() async throws {
    let url = makeFolder().appendingPathComponent("n.json")
    var store: PersistedState<Int>? = try PersistedState(file: url, default: 0)
    let box = store!.state
    store = nil
    box.writeNext { $0.write = 7 }
    // A new instance on the same file, for reading only: wait for the old one's save.
    while (try? decoded(Int.self, at: url)) != 7 { await Task.yield() }
    #expect(box.read == 7)
  }

  @Test func savedReturnsAtOnceWhenNothingChanged() async throws {
    let encoder = RecordingEncoder<Int>()
    let url = makeFolder().appendingPathComponent("n.json")
    let store = try PersistedState(
      file: url, default: 0, encode: encoder.encode,
      decode: { try JSONDecoder().decode(Int.self, from: $0) })
    store.state.writeNext { $0.write = 1 }
    try await store.saved()
    try await store.saved()
    try await store.saved()
    #expect(encoder.encoded.current == [1])
  }
}

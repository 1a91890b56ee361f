import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// Promise 4: a failed save loses nothing in memory, is reported (thrown by the next
/// `saved()`, given to the handler and the `failures()` streams) and retried by the next
/// change; nothing crashes over I/O. The tests run as root, whom permissions do not
/// stop, so a save is made to fail by a path whose folder is a regular file.
@Suite struct FailureTests {
  /// A file in a "folder" that is a regular file: every save fails with ENOTDIR.
  func blockedPath() throws -> (file: URL, blocker: URL) {
    let blocker = makeFolder().appendingPathComponent("blocker")
    try Data("not a folder".utf8).write(to: blocker)
    return (blocker.appendingPathComponent("settings.json"), blocker)
  }

  @Test func aFailedSaveIsThrownByTheNextSavedAndLosesNothingInMemory() async throws {
    let (url, _) = try blockedPath()
    let settings = try PersistedState(file: url, default: Settings())
    settings.state.writeNext { $0.write.fontSize = 20 }
    await #expect {
      try await settings.saved()
    } throws: { error in
      guard let error = error as? PersistenceError else { return false }
      return error.kind == .save && error.file == url && error.description.contains(url.path)
        && error.underlying is PersistenceError.SaveFailure
    }
    #expect(settings.state.read.fontSize == 20)
    // Still failing: thrown again, never a crash.
    await #expect(throws: PersistenceError.self) { try await settings.saved() }
  }

  @Test func theHandlerAndTheStreamAreToldOfEachFailure() async throws {
    let (url, _) = try blockedPath()
    let handled = Locked<[PersistenceError]>([])
    let settings = try PersistedState(
      file: url, default: Settings(),
      onSaveFailure: { error in handled.withLock { $0.append(error) } })
    var failures = settings.failures().makeAsyncIterator()
    settings.state.writeNext { $0.write.theme = "dark" }
    let streamed = await failures.next()
    #expect(streamed?.kind == .save)
    #expect(handled.current.count >= 1)
    #expect(handled.current.first?.kind == .save)
  }

  @Test func theNextChangeRetriesOnceTheFolderIsBack() async throws {
    let (url, blocker) = try blockedPath()
    let settings = try PersistedState(file: url, default: Settings())
    settings.state.writeNext { $0.write.fontSize = 20 }
    await #expect(throws: PersistenceError.self) { try await settings.saved() }
    try FileManager.default.removeItem(at: blocker)  // the save makes the folder now
    settings.state.writeNext { $0.write.theme = "dark" }
    try await settings.saved()
    #expect(try decoded(Settings.self, at: url) == Settings(fontSize: 20, theme: "dark"))
  }

  @Test func savedRetriesTheFailedValueWithoutANewChange() async throws {
    let (url, blocker) = try blockedPath()
    let settings = try PersistedState(file: url, default: Settings())
    settings.state.writeNext { $0.write.fontSize = 20 }
    await #expect(throws: PersistenceError.self) { try await settings.saved() }
    try FileManager.default.removeItem(at: blocker)
    try await settings.saved()
    #expect(try decoded(Settings.self, at: url) == Settings(fontSize: 20))
  }

  @Test func aFolderRemovedUnderTheStoreIsMadeAgain() async throws {
    let folder = makeFolder().appendingPathComponent("Application Support")
    let url = folder.appendingPathComponent("settings.json")
    let settings = try PersistedState(file: url, default: Settings())
    settings.state.writeNext { $0.write.fontSize = 14 }
    try await settings.saved()  // the folder did not exist: made by the first save
    try FileManager.default.removeItem(at: folder)
    settings.state.writeNext { $0.write.theme = "dark" }
    try await settings.saved()
    #expect(try decoded(Settings.self, at: url) == Settings(fontSize: 14, theme: "dark"))
  }

  @Test func aFileRemovedUnderTheStoreIsWrittenWholeByTheNextChange() async throws {
    let url = makeFolder().appendingPathComponent("settings.json")
    let settings = try PersistedState(file: url, default: Settings())
    settings.state.writeNext { $0.write.fontSize = 14 }
    try await settings.saved()
    try FileManager.default.removeItem(at: url)
    settings.state.writeNext { $0.write.theme = "dark" }
    try await settings.saved()
    #expect(try decoded(Settings.self, at: url) == Settings(fontSize: 14, theme: "dark"))
  }

  @Test func aValueTheEncoderRefusesIsReportedAndNotWritten() async throws {
    let url = makeFolder().appendingPathComponent("n.json")
    struct Refused: Error {}
    let store = try PersistedState(
      file: url, default: 0,
      encode: { n in
        if n < 0 { throw Refused() }
        return try JSONEncoder().encode(n)
      },
      decode: { try JSONDecoder().decode(Int.self, from: $0) })
    store.state.writeNext { $0.write = 5 }
    try await store.saved()
    store.state.writeNext { $0.write = -1 }
    await #expect {
      try await store.saved()
    } throws: { error in
      (error as? PersistenceError)?.kind == .encode
        && (error as? PersistenceError)?.underlying is Refused
    }
    #expect(try decoded(Int.self, at: url) == 5)
    store.state.writeNext { $0.write = 6 }
    try await store.saved()
    #expect(try decoded(Int.self, at: url) == 6)
  }
}

import Foundation
import SingleWriter
import Testing

@testable import SingleWriterPersistence

/// "`saved()` returns once every write made before the call is on disk", on a first save
/// that creates the file's folder: the new folders' entries are flushed in their parents,
/// as the rename's is in its folder, or a power loss could take the folder, and the file
/// that `saved()` confirmed, with it. A flush leaves no trace a test can read, so these
/// check which folders the save flushes, then that a save into missing folders works.
@Suite struct NewFolderTests {
  @Test func theParentOfEachMissingFolderIsFlushed() {
    let root = makeFolder()
    let folder = root.appendingPathComponent("a/b/c")
    #expect(
      StateFile.parentsToFlush(creating: folder).map(\.path) == [
        root.appendingPathComponent("a/b").path, root.appendingPathComponent("a").path,
        root.path,
      ])
  }

  @Test func aFolderThatExistsNeedsNoFlush() {
    #expect(StateFile.parentsToFlush(creating: makeFolder()).isEmpty)
  }

  @Test func aFolderSpelledWithDotsIsFlushedInItsRealParents() {
    let root = makeFolder()
    let folder = root.appendingPathComponent("a/../b/./c")
    #expect(
      StateFile.parentsToFlush(creating: folder).map(\.path) == [
        root.appendingPathComponent("b").path, root.path,
      ])
  }

  @Test func aFirstSaveIntoMissingFoldersCreatesThemAndSaves() async throws {
    let root = makeFolder()
    let file = root.appendingPathComponent("Application Support/App/settings.json")
    let store = try PersistedState(file: file, default: Settings())
    store.state.writeNext { $0.write.theme = "dark" }
    try await store.saved()
    #expect(try decoded(Settings.self, at: file).theme == "dark")
    #expect(names(in: file.deletingLastPathComponent()) == ["settings.json"])
  }
}

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

  @Test func aFolderSpelledWithDotsIsFlushedInItsRealParents() throws {
    let root = makeFolder()
    let folder = root.appendingPathComponent("a/../b/./c")
    let parents = StateFile.parentsToFlush(creating: folder)
    // Named as the path names them; the folders they are, once made: c's entry is in b,
    // and a's and b's in root.
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    #expect(
      try parents.map(identity) == [
        identity(root.appendingPathComponent("b")), identity(root), identity(root),
      ])
  }

  /// "Through a symbolic link, the file it leads to is replaced": a `..` after a linked
  /// folder climbs out of the folder it links to, so the new folder's entry is there, not
  /// beside the link (which a standardized path named).
  @Test func aFolderBehindALinkedFolderIsFlushedWhereTheSystemMakesIt() throws {
    let root = makeFolder()
    let real = root.appendingPathComponent("home/config")
    try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
    let link = root.appendingPathComponent("config")
    try FileManager.default.createSymbolicLink(
      atPath: link.path, withDestinationPath: "home/config")
    let folder = link.appendingPathComponent("../new/deeper")
    let parents = StateFile.parentsToFlush(creating: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    #expect(
      try parents.map(identity) == [
        identity(root.appendingPathComponent("home/new")),
        identity(root.appendingPathComponent("home")),
      ])
  }

  /// The folder a path names, as the system resolves it: its device and file number.
  private func identity(_ folder: URL) throws -> [Int] {
    let attributes = try FileManager.default.attributesOfItem(atPath: folder.path)
    return [
      (attributes[.systemNumber] as? Int) ?? -1, (attributes[.systemFileNumber] as? Int) ?? -1,
    ]
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

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "A missing folder is created, and flushed in its parent", so that "a save that
/// `saved()` confirmed survives a power loss with its folder". In a folder the app may
/// write but not read (a drop box, mode 0333), the save makes its folder but cannot open
/// the parent to flush it: that save failed, but the next one found the folder there and
/// succeeded, so `saved()` confirmed a file whose folder's entry was never flushed. A
/// folder a save made stays to flush, and no save succeeds until it is. In a child that
/// gives up root, whom permissions do not stop.
@Suite struct NewFolderFlushFailureTests {
  @Test func noSaveIsConfirmedUntilTheNewFoldersParentIsFlushed() async throws {
    let dropBox = makeFolder().appendingPathComponent("dropbox")
    try FileManager.default.createDirectory(at: dropBox, withIntermediateDirectories: false)
    #expect(chmod(dropBox.path, 0o333) == 0)
    defer { _ = chmod(dropBox.path, 0o755) }
    let path = dropBox.appendingPathComponent("App/n.json").path
    await #expect(processExitsWith: .success) { [path = path as String] in
      await saveTwiceAsAnotherUser(path)
    }
  }
}

/// In a child: saves to `path` as a user other than root, twice; exits 0 if each
/// `saved()` threw the failed flush of the new folder's parent, 1 if the second returned.
private func saveTwiceAsAnotherUser(_ path: String) async -> Never {
  if getuid() == 0 { guard setgid(65534) == 0, setuid(65534) == 0 else { exit(2) } }
  let store = try! PersistedState(file: URL(fileURLWithPath: path), default: 0)
  for value in 1...2 {
    store.state.writeNext { $0.write = value }
    do {
      try await store.saved()
      exit(1)
    } catch let error as PersistenceError where error.kind == .save {
      guard error.description.contains("after creating a folder in it") else { exit(3) }
    } catch { exit(4) }
  }
  exit(0)
}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// `PersistenceError.Kind.save`: "The file holds the last value saved before, whole; but
/// where only the folder's flush after the rename failed, it holds the new value, which a
/// power loss may undo." The kind used to promise the old value for every failed save, but
/// a folder the app may write and not read (a drop box, mode 0333) takes the temporary
/// file and the rename, and refuses the open its flush needs: the save fails with the new
/// value in the file. In a child that gives up root, whom permissions do not stop.
@Suite struct FolderFlushFailureTests {
  @Test func aFolderThatCannotBeFlushedFailsTheSaveWithTheNewValueInTheFile() async throws {
    let folder = makeFolder().appendingPathComponent("dropbox")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
    #expect(chmod(folder.path, 0o333) == 0)
    let url = folder.appendingPathComponent("n.json")
    let path = url.path
    await #expect(processExitsWith: .success) { [path = path as String] in
      await saveAsAnotherUser(path)
    }
    #expect(chmod(folder.path, 0o755) == 0)
    #expect(try decoded(Int.self, at: url) == 5)
  }
}

/// In a child: saves 5 to `path` as a user other than root; exits 0 if `saved()` threw a
/// save error naming the folder's flush.
private func saveAsAnotherUser(_ path: String) async -> Never {
  if getuid() == 0 { guard setgid(65534) == 0, setuid(65534) == 0 else { exit(2) } }
  let store = try! PersistedState(file: URL(fileURLWithPath: path), default: 0)
  store.state.writeNext { $0.write = 5 }
  do {
    try await store.saved()
    exit(1)
  } catch let error as PersistenceError where error.kind == .save {
    exit(error.description.contains("after the rename") ? 0 : 3)
  } catch { exit(4) }
}

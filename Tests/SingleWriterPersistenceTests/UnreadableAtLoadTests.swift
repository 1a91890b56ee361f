import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// Promise 1, "a file that cannot be read is reported, never replaced by the default":
/// only a file that is not there starts from the default. A path the system cannot look
/// up (a folder the app may not search, a loop of links) used to pass for a missing
/// file, so the store started from the default and its first save that could replaced
/// the file; and a named pipe was opened to be read, which waits for a writer where the
/// platform's read does not refuse it (on Linux it failed as "Permission denied").
@Suite struct UnreadableAtLoadTests {
  @Test func aLoopOfLinksAtLoadThrowsNamingTheFile() throws {
    let folder = makeFolder()
    let a = folder.appendingPathComponent("a.json")
    try FileManager.default.createSymbolicLink(atPath: a.path, withDestinationPath: "b.json")
    try FileManager.default.createSymbolicLink(
      atPath: folder.appendingPathComponent("b.json").path, withDestinationPath: "a.json")
    #expect {
      _ = try PersistedState(file: a, default: Settings())
    } throws: { error in
      guard let error = error as? PersistenceError else { return false }
      return error.kind == .read && error.file == a && error.description.contains(a.path)
    }
  }

  @Test func aNamedPipeAtLoadThrowsInsteadOfWaitingForAWriter() throws {
    let url = makeFolder().appendingPathComponent("settings.json")
    #expect(mkfifo(url.path, 0o644) == 0)
    #expect {
      _ = try PersistedState(file: url, default: Settings())
    } throws: { error in
      guard let error = error as? PersistenceError else { return false }
      return error.kind == .read && error.description.contains(url.path)
        && error.description.contains("not a regular file")
    }
  }

  /// As an app whose folder it may not search (a sandbox, a folder made by another
  /// user): the file is there, so the load throws rather than start from the default.
  /// In a child that gives up root, whom permissions do not stop.
  @Test func aFileInAFolderTheAppMayNotSearchThrowsAtLoad() async throws {
    let folder = makeFolder().appendingPathComponent("locked")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
    let url = folder.appendingPathComponent("settings.json")
    try JSONEncoder().encode(Settings(fontSize: 20)).write(to: url)
    #expect(chmod(folder.path, 0o600) == 0)
    defer { _ = chmod(folder.path, 0o755) }
    let path = url.path
    await #expect(processExitsWith: .success) { [path = path as String] in
      loadAsAnotherUser(path)
    }
    #expect(try decoded(Settings.self, at: url) == Settings(fontSize: 20))
  }

  @Test func aFileUnderAPlainFileIsNotThereAndItsSaveFails() async throws {
    let plain = makeFolder().appendingPathComponent("config")
    try Data("x".utf8).write(to: plain)
    let store = try PersistedState(
      file: plain.appendingPathComponent("settings.json"), default: 1)
    store.state.writeNext { $0.write = 2 }
    await #expect(throws: PersistenceError.self) { try await store.saved() }
    #expect(try Data(contentsOf: plain) == Data("x".utf8))
  }

  @Test func aDanglingLinkStartsFromTheDefaultAndTheFirstSaveMakesItsFile() async throws {
    let folder = makeFolder()
    let link = folder.appendingPathComponent("settings.json")
    try FileManager.default.createSymbolicLink(
      atPath: link.path, withDestinationPath: "missing/settings.json")
    let store = try PersistedState(file: link, default: 3)
    #expect(store.state.read == 3)
    store.state.writeNext { $0.write = 4 }
    try await store.saved()
    #expect(try decoded(Int.self, at: folder.appendingPathComponent("missing/settings.json")) == 4)
  }
}

/// In a child: loads `path` as a user other than root and exits 0 if that threw a read
/// error naming the file, 1 if it started from the default.
private func loadAsAnotherUser(_ path: String) -> Never {
  if getuid() == 0 { guard setgid(65534) == 0, setuid(65534) == 0 else { exit(2) } }
  do {
    _ = try PersistedState(file: URL(fileURLWithPath: path), default: Settings())
    exit(1)  // started from the default: its first save would replace the file
  } catch let error as PersistenceError where error.kind == .read {
    exit(error.description.contains(path) ? 0 : 3)
  } catch { exit(4) }
}

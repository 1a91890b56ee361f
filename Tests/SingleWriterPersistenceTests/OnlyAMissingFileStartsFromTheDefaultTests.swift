import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Only a file that is not there starts from `default`", and a file is "never replaced by
/// `default`": the load asks the system whether the file is there, but the save follows
/// the links and makes the missing folders itself, and two paths made it name a file the
/// system had not found, which the first save replaced unread (or a file the next load
/// would not find):
/// - a link whose destination ends in `/` names a folder, which the system never opens as
///   a file, but a URL drops the slash: the save replaced the file of that name, or made
///   one that every later load missed, starting from the default again;
/// - a `..` after a missing folder climbs out of a folder the system cannot find; once the
///   save made it, the path named the file beside it, which the save replaced.
/// The save now fails such a path, naming why, and leaves the file as it was.
@Suite struct OnlyAMissingFileStartsFromTheDefaultTests {
  /// A folder holding `real.json` with `Settings(fontSize: 7)`.
  func folderWithAFile() throws -> (folder: URL, real: URL) {
    let folder = makeFolder()
    let real = folder.appendingPathComponent("real.json")
    try JSONEncoder().encode(Settings(fontSize: 7)).write(to: real)
    return (folder, real)
  }

  @Test func aLinkEndingInASlashDoesNotReplaceTheFileOfThatName() async throws {
    let (folder, real) = try folderWithAFile()
    let link = folder.appendingPathComponent("settings.json")
    try FileManager.default.createSymbolicLink(
      atPath: link.path, withDestinationPath: real.path + "/")
    let store = try PersistedState(file: link, default: Settings())
    #expect(store.state.read == Settings())  // the system finds no file there
    store.state.writeNext { $0.write.theme = "dark" }
    await #expect {
      try await store.saved()
    } throws: { error in
      (error as? PersistenceError)?.kind == .save
        && "\(error)".contains("\(real.path)/, which names a folder")
    }
    #expect(try decoded(Settings.self, at: real) == Settings(fontSize: 7))
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == real.path + "/")
  }

  @Test func aLinkEndingInASlashMakesNoFileTheNextLoadWouldMiss() async throws {
    let folder = makeFolder()
    let link = folder.appendingPathComponent("settings.json")
    try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "new.json/")
    let store = try PersistedState(file: link, default: Settings())
    store.state.writeNext { $0.write.theme = "dark" }
    await #expect(throws: PersistenceError.self) { try await store.saved() }
    #expect(names(in: folder) == ["settings.json"])
  }

  @Test(arguments: [false, true])
  func aDotDotAfterAMissingFolderDoesNotReplaceTheFileItClimbsTo(throughALink: Bool)
    async throws
  {
    let (folder, real) = try folderWithAFile()
    var url = folder.appendingPathComponent("missing/../real.json")
    if throughALink {
      url = folder.appendingPathComponent("settings.json")
      try FileManager.default.createSymbolicLink(
        atPath: url.path, withDestinationPath: "missing/../real.json")
    }
    let store = try PersistedState(file: url, default: Settings())
    #expect(store.state.read == Settings())  // the system finds no file there
    store.state.writeNext { $0.write.theme = "dark" }
    await #expect {
      try await store.saved()
    } throws: { error in
      (error as? PersistenceError)?.kind == .save
        && "\(error)".contains("climbs out of the missing folder")
    }
    // Still failing, and still unread: the folder was not made, so no later save finds
    // its way to the file either.
    store.state.writeNext { $0.write.fontSize = 9 }
    await #expect(throws: PersistenceError.self) { try await store.saved() }
    #expect(try decoded(Settings.self, at: real) == Settings(fontSize: 7))
    #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("missing").path))
  }
}

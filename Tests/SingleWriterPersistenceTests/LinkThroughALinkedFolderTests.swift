import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Through a symbolic link, the file it leads to is replaced": a relative link is
/// resolved from the folder it is in as the system finds it, and a `..` in it climbs
/// out of that folder, not out of the path that named it. Where the link's folder is
/// itself reached through a linked folder the two differ: the load read one file, and
/// every save wrote another, so the next launch loaded the old value.
@Suite struct LinkThroughALinkedFolderTests {
  @Test func aRelativeLinkInALinkedFolderIsResolvedAsTheSystemResolvesIt() async throws {
    let top = makeFolder()
    let fm = FileManager.default
    // top/home/config is the real folder; top/config links to it.
    let home = top.appendingPathComponent("home")
    let realConfig = home.appendingPathComponent("config")
    try fm.createDirectory(at: realConfig, withIntermediateDirectories: true)
    try fm.createDirectory(
      at: home.appendingPathComponent("dotfiles"), withIntermediateDirectories: true)
    let real = home.appendingPathComponent("dotfiles/settings.json")
    try JSONEncoder().encode(Settings(fontSize: 20)).write(to: real)
    try fm.createSymbolicLink(
      atPath: top.appendingPathComponent("config").path, withDestinationPath: "home/config")
    // In the real folder: ../dotfiles/settings.json, that is home/dotfiles/settings.json.
    try fm.createSymbolicLink(
      atPath: realConfig.appendingPathComponent("settings.json").path,
      withDestinationPath: "../dotfiles/settings.json")
    let link = top.appendingPathComponent("config/settings.json")

    let store = try PersistedState(file: link, default: Settings())
    #expect(store.state.read.fontSize == 20)
    store.state.writeNext { $0.write.fontSize = 21 }
    try await store.saved()

    #expect(try decoded(Settings.self, at: real).fontSize == 21)
    #expect(!fm.fileExists(atPath: top.appendingPathComponent("dotfiles").path))
    let reopened = try PersistedState(file: link, default: Settings())
    #expect(reopened.state.read.fontSize == 21)
  }

  @Test func aLinkIntoAMissingFolderBehindALinkedFolderCreatesItWhereTheSystemWould()
    async throws
  {
    let top = makeFolder()
    let fm = FileManager.default
    let realConfig = top.appendingPathComponent("home/config")
    try fm.createDirectory(at: realConfig, withIntermediateDirectories: true)
    try fm.createSymbolicLink(
      atPath: top.appendingPathComponent("config").path, withDestinationPath: "home/config")
    try fm.createSymbolicLink(
      atPath: realConfig.appendingPathComponent("settings.json").path,
      withDestinationPath: "../new/deeper/settings.json")
    let link = top.appendingPathComponent("config/settings.json")

    let store = try PersistedState(file: link, default: 0)
    store.state.writeNext { $0.write = 5 }
    try await store.saved()

    #expect(
      try decoded(Int.self, at: top.appendingPathComponent("home/new/deeper/settings.json")) == 5)
    #expect(!fm.fileExists(atPath: top.appendingPathComponent("new").path))
    #expect(try PersistedState(file: link, default: 0).state.read == 5)
  }
}

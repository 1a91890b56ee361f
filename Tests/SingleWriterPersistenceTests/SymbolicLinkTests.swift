import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Saved atomically", through a symbolic link: a settings file linked from elsewhere (a
/// dotfiles repository) stays linked, and the file it leads to holds each save. The first
/// save used to rename its temporary file over the link, which turned it into a plain
/// file and left the linked file stale for every other reader of it.
@Suite struct SymbolicLinkTests {
  @Test func aSaveThroughALinkReplacesTheFileItLeadsToAndKeepsTheLink() async throws {
    let folder = makeFolder()
    let repository = folder.appendingPathComponent("dotfiles")
    try FileManager.default.createDirectory(at: repository, withIntermediateDirectories: true)
    let real = repository.appendingPathComponent("settings.json")
    try JSONEncoder().encode(Settings(fontSize: 20)).write(to: real)
    let link = folder.appendingPathComponent("settings.json")
    // Relative, as a dotfiles manager makes them: resolved from the link's own folder.
    try FileManager.default.createSymbolicLink(
      atPath: link.path, withDestinationPath: "dotfiles/settings.json")

    let store = try PersistedState(file: link, default: Settings())
    #expect(store.state.read.fontSize == 20)
    store.state.writeNext { $0.write.fontSize = 21 }
    try await store.saved()

    #expect(try destination(of: link) == "dotfiles/settings.json")
    #expect(try decoded(Settings.self, at: real).fontSize == 21)
    // Nothing left beside the link; the temporary file was made beside the real file.
    #expect(names(in: folder) == ["dotfiles", "settings.json"])
    #expect(names(in: repository) == ["settings.json"])
  }

  @Test func aChainOfLinksToAFileNotMadeYetEndsInThatFile() async throws {
    let folder = makeFolder()
    let real = folder.appendingPathComponent("real.json")
    let middle = folder.appendingPathComponent("middle.json")
    let link = folder.appendingPathComponent("link.json")
    try FileManager.default.createSymbolicLink(atPath: middle.path, withDestinationPath: real.path)
    try FileManager.default.createSymbolicLink(
      atPath: link.path, withDestinationPath: "middle.json")

    let store = try PersistedState(file: link, default: 0)
    store.state.writeNext { $0.write = 7 }
    try await store.saved()

    #expect(try destination(of: link) == "middle.json")
    #expect(try destination(of: middle) == real.path)
    #expect(try decoded(Int.self, at: real) == 7)
    let reopened = try PersistedState(file: link, default: 0)
    #expect(reopened.state.read == 7)
  }

  @Test func aLinkPointedElsewhereBetweenSavesIsFollowedThere() async throws {
    let folder = makeFolder()
    let first = folder.appendingPathComponent("first.json")
    let second = folder.appendingPathComponent("second.json")
    let link = folder.appendingPathComponent("link.json")
    try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "first.json")
    let store = try PersistedState(file: link, default: 0)
    store.state.writeNext { $0.write = 1 }
    try await store.saved()

    try FileManager.default.removeItem(at: link)
    try FileManager.default.createSymbolicLink(
      atPath: link.path, withDestinationPath: "second.json")
    store.state.writeNext { $0.write = 2 }
    try await store.saved()

    #expect(try decoded(Int.self, at: first) == 1)
    #expect(try decoded(Int.self, at: second) == 2)
    #expect(try destination(of: link) == "second.json")
  }

  @Test func aLoopOfLinksFailsTheSaveNamingTheLinkAndKeepsIt() async throws {
    let folder = makeFolder()
    let a = folder.appendingPathComponent("a.json")
    let b = folder.appendingPathComponent("b.json")
    try FileManager.default.createSymbolicLink(atPath: a.path, withDestinationPath: "b.json")
    let store = try PersistedState(file: a, default: 0)
    // Made after the load, which would report it (UnreadableAtLoadTests).
    try FileManager.default.createSymbolicLink(atPath: b.path, withDestinationPath: "a.json")
    store.state.writeNext { $0.write = 3 }
    await #expect {
      try await store.saved()
    } throws: { error in
      guard let error = error as? PersistenceError else { return false }
      return error.kind == .save && error.file == a && "\(error)".contains("symbolic links")
    }
    #expect(try destination(of: a) == "b.json")
    #expect(try destination(of: b) == "a.json")
    #expect(store.state.read == 3)
  }

  /// 32 links, as many as any system follows (Apple's limit; Linux follows 40): the save
  /// ends where the load did. The look-up gave up at 32 and called the chain a loop.
  @Test func aChainAsLongAsEverySystemFollowsIsSavedThrough() async throws {
    let folder = makeFolder()
    let real = folder.appendingPathComponent("real.json")
    try JSONEncoder().encode(1).write(to: real)
    var next = "real.json"
    for index in 1...32 {
      try FileManager.default.createSymbolicLink(
        atPath: folder.appendingPathComponent("link\(index)").path, withDestinationPath: next)
      next = "link\(index)"
    }
    let store = try PersistedState(file: folder.appendingPathComponent(next), default: 0)
    #expect(store.state.read == 1)
    store.state.writeNext { $0.write = 2 }
    try await store.saved()
    #expect(try decoded(Int.self, at: real) == 2)
    #expect(try destination(of: folder.appendingPathComponent("link1")) == "real.json")
  }

  private func destination(of link: URL) throws -> String {
    try FileManager.default.destinationOfSymbolicLink(atPath: link.path)
  }
}

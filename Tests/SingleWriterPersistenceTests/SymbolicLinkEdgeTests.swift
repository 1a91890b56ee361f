import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Through a symbolic link, the file it leads to is replaced and the link kept", at its
/// edges: a private file stays private and names in any script and near the system's
/// length survive the trip; a store through the link and one on the file itself (a misuse)
/// still leave a whole file and no temporary one; and a link replaced by a file, then by
/// a named pipe, between saves is replaced as the path now is, with no wait on the pipe.
@Suite struct SymbolicLinkEdgeTests {
  @Test func permissionsAndLongUnicodeNamesThroughALink() async throws {
    let folder = makeFolder()
    let sub = folder.appendingPathComponent("dot files é")
    try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
    let realName = String(repeating: "é", count: 120) + " réglages.json"
    let real = sub.appendingPathComponent(realName)
    try JSONEncoder().encode(1).write(to: real)
    #expect(chmod(real.path, 0o600) == 0)
    let linkName = String(repeating: "ü", count: 125) + ".json"
    let link = folder.appendingPathComponent(linkName)
    try FileManager.default.createSymbolicLink(
      atPath: link.path, withDestinationPath: "dot files é/" + realName)
    let store = try PersistedState(file: link, default: 0)
    #expect(store.state.read == 1)
    store.state.writeNext { $0.write = 2 }
    try await store.saved()
    #expect(try decoded(Int.self, at: real) == 2)
    let mode =
      try FileManager.default.attributesOfItem(atPath: real.path)[.posixPermissions] as? Int
    #expect(mode == 0o600)
    #expect(
      try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "dot files é/"
        + realName)
    #expect(names(in: sub) == [realName])
  }

  @Test func twoStoresOnOneFileThroughALinkAndDirectlyLeaveAWholeFile() async throws {
    let folder = makeFolder()
    let real = folder.appendingPathComponent("real.json")
    let link = folder.appendingPathComponent("link.json")
    try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "real.json")
    let a = try PersistedState(file: link, default: Linked())
    let b = try PersistedState(file: real, default: Linked())
    await withTaskGroup(of: Void.self) { group in
      group.addTask { for i in 1...300 { a.state.withWriter { $0.set(i) } } }
      group.addTask { for i in 1...300 { b.state.withWriter { $0.set(i + 1000) } } }
    }
    try await a.saved()
    try await b.saved()
    #expect(try decoded(Linked.self, at: real).isConsistent)
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "real.json")
    #expect(names(in: folder) == ["link.json", "real.json"])
  }

  @Test func aLinkReplacedByAFileThenAFifoBetweenSaves() async throws {
    let folder = makeFolder()
    let link = folder.appendingPathComponent("s.json")
    try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "real.json")
    let store = try PersistedState(file: link, default: 0)
    store.state.writeNext { $0.write = 1 }
    try await store.saved()
    try FileManager.default.removeItem(at: link)
    try JSONEncoder().encode(5).write(to: link)
    store.state.writeNext { $0.write = 2 }
    try await store.saved()
    #expect(try decoded(Int.self, at: link) == 2)
    #expect(try decoded(Int.self, at: folder.appendingPathComponent("real.json")) == 1)
    try FileManager.default.removeItem(at: link)
    #expect(mkfifo(link.path, 0o644) == 0)
    store.state.writeNext { $0.write = 3 }
    try await store.saved()
    #expect(try decoded(Int.self, at: link) == 3)
  }
}

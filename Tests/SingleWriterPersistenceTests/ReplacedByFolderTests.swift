import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "A failed save loses nothing in memory, is reported and retried; nothing crashes over
/// I/O": the file replaced by a folder mid-run, many concurrent flushes while it fails,
/// and the file back.
@Suite struct ReplacedByFolderTests {
  @Test func aFileReplacedByAFolderFailsEachFlushUntilItIsAFileAgain() async throws {
    let file = makeFolder().appendingPathComponent("s.json")
    let store = try PersistedState(file: file, default: Settings())
    store.state.writeNext { $0.write.fontSize = 13 }
    try await store.saved()
    try FileManager.default.removeItem(at: file)
    try FileManager.default.createDirectory(
      at: file.appendingPathComponent("inside"), withIntermediateDirectories: true)
    store.state.writeNext { $0.write.fontSize = 14 }
    let failed = await withTaskGroup(of: Bool.self) { group in
      for _ in 0..<8 {
        group.addTask {
          do {
            try await store.saved()
            return false
          } catch { return (error as? PersistenceError)?.kind == .save }
        }
      }
      return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
    }
    #expect(failed == 8)
    #expect(store.state.read.fontSize == 14)
    try FileManager.default.removeItem(at: file)
    try await store.saved()  // retries the failed value
    #expect(try decoded(Settings.self, at: file).fontSize == 14)
  }

  @Test @MainActor func aMainActorFlushSeesEveryWriteBeforeIt() async throws {
    let file = makeFolder().appendingPathComponent("n.json")
    let store = try PersistedState(file: file, default: 0)
    for n in 1...100 {
      store.state.writeNext { $0.write = n }
      if n.isMultiple(of: 10) {
        try await store.saved()
        #expect(try decoded(Int.self, at: file) == n)
      }
    }
  }
}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Nothing is written until the first change: starting from `default` leaves no file",
/// whatever reads the container: plain reads, a checkout that only reads, a flush.
@Suite struct NoChangeNoFileTests {
  @Test func readsAndReadOnlyCheckoutsLeaveNoFile() async throws {
    let folder = makeFolder()
    let store = try PersistedState(
      file: folder.appendingPathComponent("s.json"), default: Settings())
    _ = store.state.read
    _ = store.state.read { $0.fontSize }
    var proxy = store.state.writer
    _ = proxy?.write.fontSize  // read through the write accessor
    proxy = nil
    try await store.saved()
    try await store.saved()
    #expect(names(in: folder).isEmpty)
    #expect(proxy == nil)
  }
}

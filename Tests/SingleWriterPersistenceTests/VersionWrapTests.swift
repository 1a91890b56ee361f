import Foundation
import SingleWriterAtomics
import SingleWriterPersistence
import Testing

@testable import SingleWriter

/// "`saved()` returns once every write made before the call is on disk", and "an older
/// value never replaces a newer one". The saver orders values by the container's
/// publication versions. When they were 28 bits compared within half their range, more
/// than 2^27 publications between two saves (a hot value written for seconds while one
/// save was stuck on a slow disk) made a newer value look older: its save was skipped,
/// and `saved()` returned at once with the older value on disk. Versions are now 60 bits
/// and never wrap.
///
/// The publications are simulated by moving the hub's version on in one atomic add (the
/// version is all the saver compares); made one by one, 2^27 of them take about 25 s in a
/// debug build.
@Suite struct VersionWrapTests {
  @Test(arguments: [(1 << 27) + 5, (1 << 31) + 5, (1 << 32) + 5] as [UInt64])
  func aValueWrittenManyPublicationsAfterTheLastSaveIsSaved(publications: UInt64) async throws {
    let store = try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0)
    store.state.withWriter { $0 = 1 }
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 1)
    _ = sw_u64_fetch_add(store.state.hub.word, publications &* ChangeHubWord.versionStep)
    store.state.withWriter { $0 = 2 }
    try await store.saved()
    let onDisk = try decoded(Int.self, at: store.file)
    #expect(onDisk == 2, "saved() returned with \(onDisk) on disk, the value is 2")
  }
}

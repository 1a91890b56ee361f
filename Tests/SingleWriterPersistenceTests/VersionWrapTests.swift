import Foundation
import SingleWriterAtomics
import SingleWriterPersistence
import Testing

@testable import SingleWriter

/// "`saved()` returns once every write made before the call is on disk", and "an older
/// value never replaces a newer one". The saver orders values by the container's
/// publication versions, 28 bits compared within half their range: once more than 2^27
/// publications come between two saves (a hot value written for seconds while one save
/// is stuck on a slow disk), a newer value is taken for an older one. Its save is
/// skipped, and `saved()` returns at once with the older value on disk.
///
/// The publications are simulated by moving the hub's version on by 2^27 + 5 steps in
/// one atomic add (the version is all the saver compares); made one by one, they take
/// about 25 s in a debug build. Not fixed: the saver would need versions that do not
/// wrap, or to order deliveries by a count of its own (see the report of the attack pass).
@Suite struct VersionWrapTests {
  @Test(.disabled("the known wrap; in the full portable-wait run its saved() waited forever"))
  func aValueWrittenMoreThanHalfTheVersionRangeAfterTheLastSaveIsSaved() async throws {
    let store = try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0)
    store.state.withWriter { $0 = 1 }
    try await store.saved()
    #expect(try decoded(Int.self, at: store.file) == 1)
    _ = sw_fetch_add(store.state.hub.word, ((1 << 27) + 5) &* ChangeHubWord.versionStep)
    store.state.withWriter { $0 = 2 }
    try await store.saved()
    let onDisk = try decoded(Int.self, at: store.file)
    withKnownIssue("28-bit publication versions wrap: a newer value is taken for an older one") {
      #expect(onDisk == 2, "saved() returned with \(onDisk) on disk, the value is 2")
    }
  }
}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Every change is saved", for every file name the system allows: a name near the
/// system's limit (255 bytes) still saves, since the temporary file beside it must not
/// be longer than the limit itself.
@Suite struct LongNameTests {
  @Test func aFileWhoseNameIsNearTheLimitIsSaved() async throws {
    let folder = makeFolder()
    for length in [200, 240, 250, 255] {
      let file = folder.appendingPathComponent(String(repeating: "n", count: length))
      let store = try PersistedState(file: file, default: 0)
      store.state.writeNext { $0.write = length }
      try await store.saved()
      #expect(try decoded(Int.self, at: file) == length)
    }
    // Two long names sharing their start keep temporary files of their own.
    let stem = String(repeating: "s", count: 240)
    let first = try PersistedState(file: folder.appendingPathComponent(stem + "1"), default: 0)
    let second = try PersistedState(file: folder.appendingPathComponent(stem + "2"), default: 0)
    for n in 1...50 {
      first.state.writeNext { $0.write = n }
      second.state.writeNext { $0.write = -n }
    }
    try await first.saved()
    try await second.saved()
    #expect(try decoded(Int.self, at: first.file) == 50)
    #expect(try decoded(Int.self, at: second.file) == -50)
  }
}

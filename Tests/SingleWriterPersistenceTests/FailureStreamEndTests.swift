import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// Nothing leaks or hangs: a `failures()` stream ends once saving ends (the container is
/// freed and its last value saved), so the task that iterates it ends too.
@Suite struct FailureStreamEndTests {
  @Test func aFailureStreamEndsWhenTheStoreIsGone() async throws {
    let folder = makeFolder()
    var store: PersistedState<Int>? = try PersistedState(
      file: folder.appendingPathComponent("n.json"), default: 0)
    let failures = store!.failures()
    store!.state.writeNext { $0.write = 1 }
    store = nil
    var count = 0
    for await _ in failures { count += 1 }  // ends, and saw no failure
    #expect(count == 0)
    #expect(try decoded(Int.self, at: folder.appendingPathComponent("n.json")) == 1)
  }
}

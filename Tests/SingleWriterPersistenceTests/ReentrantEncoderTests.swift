import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "No writer or reader ever waits for encoding or I/O", from the other side: an `encode`
/// that reads the container it saves (to add a field kept elsewhere, say), while writers
/// keep writing and transactions commit, must neither deadlock nor hold them up, and the
/// last value must reach the disk.
@Suite struct ReentrantEncoderTests {
  @Test func anEncodeThatReadsTheContainerNeitherHangsNorHoldsWritersUp() async throws {
    let container = Locked<ThreadSafeSingleWriter<Int>?>(nil)
    let readsInEncode = Locked(0)
    let store = try PersistedState(
      file: makeFolder().appendingPathComponent("n.json"), default: 0,
      encode: { value in
        if let state = container.current {
          _ = state.read
          _ = state.read { $0 + 1 }
          readsInEncode.withLock { $0 += 1 }
        }
        return try JSONEncoder().encode(value)
      },
      decode: { try JSONDecoder().decode(Int.self, from: $0) })
    container.withLock { $0 = store.state }
    await withTaskGroup(of: Void.self) { group in
      for writer in 0..<4 {
        group.addTask {
          for step in 0..<250 {
            switch step % 3 {
            // `await write`, not `withWriter`: a thread of the cooperative pool blocked
            // behind a transaction suspended in its body is a pool thread it may need.
            case 0: await store.state.write { $0 += 1 }
            case 1: store.state.writeNext { $0.write += 1 }
            default:
              try? await store.state.transaction { value in
                await Task.yield()
                value += 1
              }
            }
            if step % 50 == 0 { try? await store.saved() }
          }
          _ = writer
        }
      }
    }
    try await store.saved()
    #expect(store.state.read == 1_000)
    #expect(try decoded(Int.self, at: store.file) == 1_000)
    #expect(readsInEncode.current >= 1)
  }
}

import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "A process killed at any moment leaves the old file or the new one, never a mix", even
/// under the misuse the docs warn of: two `PersistedState`s of one file in one process
/// overwrite each other's saves, but each save stays whole (they must not share a
/// temporary file, which both would write at once).
@Suite struct SameFileTwiceTests {
  @Test func twoStoresOfOneFileNeverLeaveAMix() async throws {
    let file = makeFolder().appendingPathComponent("linked.json")
    let first = try PersistedState(file: file, default: Linked())
    let second = try PersistedState(file: file, default: Linked())
    let mixed = Locked(0)
    await withTaskGroup(of: Void.self) { group in
      for (store, base) in [(first, 1), (second, 100_000)] {
        group.addTask {
          for n in 0..<300 {
            store.state.writeNext { $0.write.set(base + n) }
            try? await store.saved()
            // Read as a fresh process would: whichever store saved last, a whole value.
            let whole = (try? decoded(Linked.self, at: file))?.isConsistent ?? false
            if !whole { mixed.withLock { $0 += 1 } }
          }
          try? await store.saved()
        }
      }
    }
    #expect(mixed.current == 0)
    #expect(try decoded(Linked.self, at: file).isConsistent)
  }
}

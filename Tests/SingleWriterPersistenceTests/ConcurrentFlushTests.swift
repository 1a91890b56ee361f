import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "`saved()` returns once every write made before the call is on disk", with writers and
/// flushers on many tasks at once: each flush finds at least its own task's last write in
/// the file, whatever the others do meanwhile.
@Suite struct ConcurrentFlushTests {
  @Test func eachFlushFindsItsOwnWritesOnDisk() async throws {
    let file = makeFolder().appendingPathComponent("n.json")
    let store = try PersistedState(file: file, default: 0)
    let late = Locked(0)
    await withTaskGroup(of: Void.self) { group in
      for task in 0..<6 {
        group.addTask {
          for round in 0..<40 {
            var mine = 0
            switch (task + round) % 3 {
            case 0:
              store.state.withWriter {
                $0 += 1; mine = $0
              }
            case 1:
              mine = await store.state.write {
                $0 += 1; return $0
              }
            default:
              let box = Locked(0)
              store.state.writeNext {
                $0.write += 1; box.withLock { [v = $0.write] in $0 = v }
              }
              await store.state.drained()
              mine = box.current
            }
            try? await store.saved()
            if (try? decoded(Int.self, at: file)) ?? 0 < mine { late.withLock { $0 += 1 } }
          }
        }
      }
    }
    #expect(late.current == 0)
    try await store.saved()
    #expect(try decoded(Int.self, at: file) == 240)
  }
}

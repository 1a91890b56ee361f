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
    let late = await storm(store, tasks: 6, rounds: 40, kinds: 3)
    #expect(late == 0)
    try await store.saved()
    #expect(try decoded(Int.self, at: file) == 240)
  }

  /// The same, with the writes that hold the writer across time: transactions of both
  /// forms, proxies from `checkout()` that write twice with a suspension between (the
  /// saver finds them half done and waits for a snapshot), and `writeNext` with no drain of
  /// its own before the flush. The sync transactions block threads of their own, never
  /// the cooperative pool's, which the suspended holders need to resume.
  @Test func eachFlushFindsItsOwnTransactionsAndProxiesOnDisk() async throws {
    let file = makeFolder().appendingPathComponent("n.json")
    let store = try PersistedState(file: file, default: Linked())
    let late = Locked<[String]>([])
    await withTaskGroup(of: Void.self) { group in
      for task in 0..<6 {
        group.addTask {
          for round in 0..<30 {
            var mine = 0
            switch (task + round) % 4 {
            case 0:
              // On a thread of its own: blocked in a task, it would tie up a thread of the
              // cooperative pool that a proxy's or an async transaction's task needs.
              mine = await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                  continuation.resume(
                    returning: store.state.transaction { value in
                      value.set(value.a + 1)
                      return value.a
                    })
                }
              }
            case 1:
              mine =
                (try? await store.state.transaction { value in
                  await Task.yield()
                  value.set(value.a + 1)
                  return value.a
                }) ?? 0
            case 2:
              if let proxy = try? await store.state.checkout() {
                let next = proxy.write.a + 1
                proxy.write.a = next
                await Task.yield()
                proxy.write.set(next)
                mine = next
              }
            default:
              let box = Locked(0)
              store.state.writeNext {
                $0.write.set($0.write.a + 1)
                box.withLock { [v = $0.write.a] in $0 = v }
              }
              try? await store.saved()
              mine = box.current
            }
            try? await store.saved()
            let onDisk = try? decoded(Linked.self, at: file)
            if (onDisk?.a ?? 0) < mine || !(onDisk?.isConsistent ?? true) {
              late.withLock { $0.append("\(mine): \(String(describing: onDisk?.a))") }
            }
          }
        }
      }
    }
    #expect(late.current == [])
    try await store.saved()
    #expect(try decoded(Linked.self, at: file).a == 180)
  }
}

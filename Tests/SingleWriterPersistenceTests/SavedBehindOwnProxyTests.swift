import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Never await `saved()` in a task that holds a proxy of this container": one that does,
/// with the proxy written over unsaved writes, waits for that proxy's release, and is
/// warned on standard error after a second, as `drained()` is behind its own proxy: the
/// task may have sent the proxy to another task, which will release it. Another thread
/// releases it once the warning is out, so the child ends.
@Suite struct SavedBehindOwnProxyTests {
  @Test func savedBehindThisTasksOwnProxyIsWarned() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      childWatchdog(20, "saved() behind its own proxy")
      let encoder = RecordingEncoder<Int>()
      let store = try! PersistedState(
        file: makeFolder("savedBehindOwnProxy").appendingPathComponent("n.json"), default: 0,
        encode: encoder.encode, decode: { try JSONDecoder().decode(Int.self, from: $0) })
      encoder.hold()
      store.state.writeNext { $0.write = 1 }
      await encoder.waitUntilHeld()
      // While the saver is busy with 1: a write that ends, then this task's own proxy
      // writes over it, so no whole value holds 2 until the proxy is released.
      precondition(store.state.tryWrite { $0 = 2 } != nil)
      await Task.detached {
        let held = Locked(store.state.writer)
        held.withLock { $0?.write = 3 }
        releaseAfterAWarning(held)
        encoder.release()
        try! await store.saved()
      }.value
      try! await store.saved()
      precondition(try! decoded(Int.self, at: store.file) == 3)
    }
    let text = standardError(result)
    #expect(text.contains("`saved()` has waited 1 s"), "stderr: \(text.suffix(1500))")
    #expect(text.contains("this same task"), "stderr: \(text.suffix(1500))")
  }
}

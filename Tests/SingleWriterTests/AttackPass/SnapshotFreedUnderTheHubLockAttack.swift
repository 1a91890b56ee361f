import Dispatch
import Foundation
import Testing

@testable import SingleWriter

// "A `deinit` may call back in": a consumer that finds a checkout half done asks its end
// to keep a copy of the value (a snapshot). The next snapshot replaces it, and the old
// copy was freed under the hub's lock: a value whose last reference that copy held ran its
// `deinit` there, and a `deinit` that subscribes to the container (`changes()` takes the
// hub's lock) locked it again on the same thread and hung, inside a checkout's end. The
// old copy is now freed after the lock is released.

/// A reference whose `deinit` calls back into the container that held it.
private final class CallsBackOnDeinit: Sendable {
  let callBack: @Sendable () -> Void
  init(_ callBack: @escaping @Sendable () -> Void) { self.callBack = callBack }
  deinit { callBack() }
}

private struct Held: Sendable {
  var token: CallsBackOnDeinit?
  var n = 0
}

@Suite struct AttackPassSnapshotFreedUnderTheHubLock {
  @Test func aValueFreedWithAReplacedSnapshotMaySubscribeInItsDeinit() async {
    let result = await #expect(
      processExitsWith: atkExpect(.exitCode(7)), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "a snapshot's value freed under the hub's lock")
      let box = ThreadSafeSingleWriter(value: Held())
      let calledBack = SharedFlag()
      var iterator = box.changes().makeAsyncIterator()
      _ = await iterator.next()  // the value at subscription
      // The consumer reads once per `gate` signal, and keeps only the number it got.
      let gate = DispatchSemaphore(value: 0)
      let delivered = Locked(0)
      let consumer = Task.detached { [iterator] in
        var iterator = iterator
        while true {
          gate.wait()
          guard let value = await iterator.next() else { return }
          let n = value.n
          attackErr("delivered \(n)\n")
          delivered.withLock { $0 = n }
        }
      }
      // Twice: a checkout ends (a publication the consumer will read), the next one writes
      // and stays held, so that the consumer finds it half done and asks its end for a
      // snapshot. The first time, that end keeps a snapshot holding `token`; the second
      // time, `token` is gone from the value, and the new snapshot replaces the old one,
      // the last holder of `token`.
      for round in 1...2 {
        box.writer!.write.n = round * 10
        do {  // released at the end of this block, in debug builds too
          let held = box.writer!
          if round == 1 {
            held.write.token = CallsBackOnDeinit { [weak box] in
              _ = box?.changes()
              calledBack.set()
            }
          } else {
            held.write.token = nil
          }
          held.write.n = round * 10 + 1
          attackErr("round \(round): signalled\n")
          gate.signal()
          while !box.hub.wantsSnapshot { await Task.yield() }
          attackErr("round \(round): wanted\n")
          withExtendedLifetime(held) {}  // a release build would free it after its last write
        }
        while delivered.withLock({ $0 }) != round * 10 + 1 { await Task.yield() }
      }
      consumer.cancel()
      gate.signal()
      precondition(calledBack.isSet, "the token was not freed: the test proves nothing")
      exit(7)
    }
    atkDiag(result)
    #expect(result?.exitStatus == .exitCode(7), "\(exitReport(result))")
  }
}

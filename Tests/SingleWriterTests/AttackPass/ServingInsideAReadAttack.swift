import Foundation
import Testing

@testable import SingleWriter

// "No write inside a read" against a checkout that ends inside a `read { }` of its own
// container with other threads' writes queued behind it: they cannot run inside the read
// (they would wait for it), and nobody else can be handed the queue, so it stops with a
// message that says so, not with the message of a write inside a read, which the
// reading thread's own code never made.

@Suite(.serialized) struct AttackPassServingInsideARead {
  /// Inside `a.read { }`, a `writeNext` finds the writer free and runs its body in place;
  /// the body writes nothing (allowed: only a write stops), but waits until another
  /// thread has queued a write behind it. The checkout's end must not run that write on
  /// the reading thread: it stops, saying why.
  @Test func aWriteNextRunInPlaceInsideAReadStopsBeforeServingOthersThere() async {
    let log = atkChildLog()
    let result = await #expect(processExitsWith: atkExpect(.failure)) { [log = log as String] in
      atkSendStandardError(to: log)
      attackWatchdog(20, "an in-place writeNext inside a read, another thread queueing")
      let a = ThreadSafeSingleWriter(value: 0)
      let queued = SharedFlag()
      a.read { _ in
        a.writeNext { _ in
          // Writes nothing. Another thread queues behind this checkout meanwhile.
          Thread.detachNewThread {
            a.writeNext { $0.write += 1 }
            queued.set()
          }
          coaAwait(60, "the other thread never queued") { queued.isSet }
        }
      }
      coaAwait(60, "the other thread's write never ran") { a.read == 1 }
      atkEnd(breakingIf: false)
    }
    let childLog = atkTakeChildLog(log)
    #expect(
      result != nil && childLog.contains("a checkout ended inside `read { }`"),
      "child: \(childLog.prefix(4000))")
  }

  /// A proxy released inside `a.read { }` of its own container, with another thread's
  /// write queued behind it: its end stops before serving that write there.
  @Test func aProxyReleasedInsideAReadStopsBeforeServingOthersThere() async {
    let log = atkChildLog()
    let result = await #expect(processExitsWith: atkExpect(.failure)) { [log = log as String] in
      atkSendStandardError(to: log)
      attackWatchdog(20, "a proxy released inside a read, another thread's write queued")
      let a = ThreadSafeSingleWriter(value: 0)
      var proxy: ThreadSafeWriterProxy<Int>? = a.writer
      writeNextFromAnotherThread(a) { $0.write += 1 }
      a.read { _ in proxy = nil }
      _ = proxy
      coaAwait(60, "the other thread's write never ran") { a.read == 1 }
      atkEnd(breakingIf: false)
    }
    let childLog = atkTakeChildLog(log)
    #expect(
      result != nil && childLog.contains("a checkout ended inside `read { }`"),
      "child: \(childLog.prefix(4000))")
  }
}

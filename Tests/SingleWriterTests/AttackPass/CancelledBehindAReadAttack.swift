import Foundation
import Testing

@testable import SingleWriter

// "No write inside a read": a checkout ended inside `read { }` of its own container stops
// only "with writes queued behind it ... since they cannot run there". A cancelled
// `writeUnlessCancelled` has left the queue ("`writeUnlessCancelled` and `checkout()`
// leave the queue and throw"): it will never run, so a proxy released inside a read with
// only such an entry behind it must not stop the program: the server looks at the
// cancellation before the read.

/// Holds `a`'s writer elsewhere, queues a `writeUnlessCancelled` from a task, cancels the
/// task and waits until it has thrown. Returns the proxy.
func atkCIRCancelledWriteBehindAProxy(_ a: ThreadSafeSingleWriter<Int>) async
  -> ThreadSafeWriterProxy<Int>
{
  let held = coaTakeElsewhere(a)
  let task = Task.detached { try await a.writeUnlessCancelled { $0 += 1000 } }
  coaAwait(60, "the write never queued") { a.pendingCount == 1 }
  task.cancel()
  do {
    _ = try await task.value
    atkEnd(breakingIf: true, "the cancelled write ran")
  } catch {
    attackErr("the cancelled write threw \(type(of: error)); queuedWrites \(a.queuedWrites)\n")
  }
  return held
}

@Suite(.serialized) struct AttackPassCancelledBehindARead {
  /// A proxy released inside `a.read { }` with nothing behind it but a cancelled (thrown)
  /// `writeUnlessCancelled`: nothing can run, so nothing stops.
  @Test func aProxyReleasedInsideAReadBehindOnlyACancelledWriteDoesNotStop() async {
    let log = atkChildLog()
    let result = await #expect(processExitsWith: atkExpect(.success)) { [log = log as String] in
      atkSendStandardError(to: log)
      attackWatchdog(20, "a proxy released inside a read, a cancelled write behind it")
      let a = ThreadSafeSingleWriter(value: 0)
      var proxy: ThreadSafeWriterProxy<Int>? = await atkCIRCancelledWriteBehindAProxy(a)
      a.read { _ in proxy = nil }  // nothing that can run is queued
      _ = proxy
      atkEnd(breakingIf: a.read != 0, "value \(a.read)")
    }
    let childLog = atkTakeChildLog(log)
    #expect(result != nil, "child: \(childLog.prefix(4000))")
  }

  /// The control: a cancelled `checkout()` behind the proxy instead, released inside a read.
  @Test func aProxyReleasedInsideAReadBehindOnlyACancelledCheckoutDoesNotStop() async {
    let log = atkChildLog()
    let result = await #expect(processExitsWith: atkExpect(.success)) { [log = log as String] in
      atkSendStandardError(to: log)
      attackWatchdog(20, "a proxy released inside a read, a cancelled checkout behind it")
      let a = ThreadSafeSingleWriter(value: 0)
      var proxy: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
      let task = Task.detached { _ = try await a.checkout() }
      coaAwait(60, "the checkout never queued") { a.pendingCount == 1 }
      task.cancel()
      _ = try? await task.value
      a.read { _ in proxy = nil }
      _ = proxy
      atkEnd(breakingIf: false)
    }
    let childLog = atkTakeChildLog(log)
    #expect(result != nil, "child: \(childLog.prefix(4000))")
  }
}

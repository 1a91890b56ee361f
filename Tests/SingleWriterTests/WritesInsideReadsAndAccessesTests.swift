import Foundation
import SingleWriter
import Testing

// The promise: a write that could only wait for something its own thread holds, a
// `read { }` closure or a write access through a proxy, stops the program with a message,
// never hangs. Each child has a watchdog (status 3), so a hang fails as a hang.

/// A value with a mutating method that writes its own container again, as a model
/// type's method might.
struct Reentering: Sendable {
  var count = 0
  mutating func bump(through box: ThreadSafeSingleWriter<Reentering>) {
    count += 1
    box.withWriter { $0.count += 1 }
  }
}

let readMessage = "a write inside `read { }`"
let accessMessage = "inside a write access through a proxy"

@Suite struct WritesInsideReadsTests {
  // Nested reads of two containers: the outer container's mark must survive the inner read.

  @Test func withWriterOnTheOuterContainerOfTwoNestedReadsStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "withWriter in nested reads")
      let a = ThreadSafeSingleWriter(value: 0)
      let b = ThreadSafeSingleWriter(value: 0)
      a.read { _ in b.read { _ in a.withWriter { $0 += 1 } } }
    }
    expectStop(result, saying: readMessage)
  }

  @Test func tryWriteOnTheOuterContainerOfTwoNestedReadsStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "tryWrite in nested reads")
      let a = ThreadSafeSingleWriter(value: 0)
      let b = ThreadSafeSingleWriter(value: 0)
      a.read { _ in b.read { _ in _ = a.tryWrite { $0 += 1 } } }
    }
    expectStop(result, saying: readMessage)
  }

  @Test func writeNextRunInPlaceOnTheOuterContainerOfTwoNestedReadsStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "writeNext in nested reads")
      let a = ThreadSafeSingleWriter(value: 0)
      let b = ThreadSafeSingleWriter(value: 0)
      a.read { _ in b.read { _ in a.writeNext { $0.write += 1 } } }
    }
    expectStop(result, saying: readMessage)
  }

  @Test func aProxyWriteToTheOuterContainerOfTwoNestedReadsStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "proxy write in nested reads")
      let a = ThreadSafeSingleWriter(value: 0)
      let b = ThreadSafeSingleWriter(value: 0)
      let proxy = a.writer!
      a.read { _ in b.read { _ in proxy.write += 1 } }
    }
    expectStop(result, saying: readMessage)
  }

  @Test func threeNestedReadsStillMarkTheOutermost() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "withWriter in three nested reads")
      let a = ThreadSafeSingleWriter(value: 0)
      let b = ThreadSafeSingleWriter(value: 0)
      let c = ThreadSafeSingleWriter(value: 0)
      a.read { _ in b.read { _ in c.read { _ in a.withWriter { $0 += 1 } } } }
    }
    expectStop(result, saying: readMessage)
  }

  // While another thread holds the writer: the wait itself must look at the mark.

  @Test func withWriterInsideAReadWhileAnotherThreadHoldsTheWriterStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "withWriter in a read, writer held elsewhere")
      let a = ThreadSafeSingleWriter(value: 0)
      holdWriterElsewhere(a)
      a.read { _ in a.withWriter { $0 += 1 } }
    }
    expectStop(result, saying: readMessage)
  }

  @Test func tryWriteInsideAReadWhileAnotherThreadHoldsTheWriterStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "tryWrite in a read, writer held elsewhere")
      let a = ThreadSafeSingleWriter(value: 0)
      holdWriterElsewhere(a)
      a.read { _ in _ = a.tryWrite { $0 += 1 } }
    }
    expectStop(result, saying: readMessage)
  }

  /// The control: a writeNext that queues inside a read waits for nothing, and runs once
  /// the holder lets go; writes to another container inside a read are fine too.
  @Test func aQueuedWriteNextAndOtherContainersInsideAReadComplete() {
    let a = ThreadSafeSingleWriter(value: 0)
    let b = ThreadSafeSingleWriter(value: 0)
    var held = a.writer
    a.read { _ in
      a.writeNext { $0.write += 1 }
      b.withWriter { $0 += 1 }
      b.read { _ in _ = b.read }
    }
    #expect(a.read == 0)
    held = nil
    _ = held
    #expect(a.read == 1)
    #expect(b.read == 1)
  }
}

@Suite struct WithWriterInsideAProxyAccessTests {
  @Test func withWriterInsideAnAccessThroughTheWriterProxyStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "withWriter inside a writer proxy's access")
      let box = ThreadSafeSingleWriter(value: Reentering())
      let proxy = box.writer!
      proxy.write.bump(through: box)
    }
    expectStop(result, saying: accessMessage)
  }

  @Test func withWriterInsideAnAccessThroughACheckoutProxyStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "withWriter inside a checkout() proxy's access")
      let box = ThreadSafeSingleWriter(value: Reentering())
      let proxy = try await box.checkout()
      proxy.write.bump(through: box)
    }
    expectStop(result, saying: accessMessage)
  }

  @Test func withWriterInsideAnAccessThroughALentProxyStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(10, "withWriter inside a lent proxy's access")
      let box = ThreadSafeSingleWriter(value: Reentering())
      box.writeNext { $0.write.bump(through: box) }
    }
    // A writeNext body is also a write's closure: either message names the misuse.
    expectStop(result, saying: "would wait forever")
  }
}

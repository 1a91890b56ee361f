import Foundation
import SingleWriter
import Testing

// The promise of "Observing state": a `changes()` consumer sees each checkout whole, never
// the value part-way through a proxy's writes. Every value delivered is one that some
// checkout ended with; the tests' checkouts keep `a == b` (`Pair`) at every end, never in
// between.

@Suite(.serialized) struct WholeCheckoutObservationTests {
  /// A thread streams checkouts back to back, each writing `a`, then `b`, until the
  /// consumer has had a value from the middle of the stream (or for 300 s at most: a watchdog
  /// long enough for a cooperative pool that other tests keep busy), then
  /// ends with `-1` in both. Every value is whole, and the consumer is not starved: a
  /// value it cannot read because a checkout is part-way is kept for it by a later end.
  @Test func aConsumerNeverSeesAProxyCheckoutHalfDone() async {
    let box = ThreadSafeSingleWriter(value: Pair())
    let progress = Locked(0)
    let started = DispatchSemaphore(value: 0)
    let consumer = Task {
      var seen = 0
      var halfDone = 0
      for await pair in box.changes(skippingRepeats: false) {
        if seen == 0 { started.signal() }  // running: the stream may begin
        seen += 1
        if pair.a != pair.b { halfDone += 1 }
        if pair.a == -1 { break }
        if pair.b > 0 { progress.withLock { $0 = pair.b } }
      }
      return (seen, halfDone)
    }
    let streamed = Locked(0)
    let writer = Thread {
      // The cooperative pool may be busy with other suites: start once the consumer runs,
      // and give it time to be scheduled again.
      started.wait()
      let start = Date()
      var checkouts = 0
      while progress.withLock({ $0 }) == 0, Date().timeIntervalSince(start) < 300 {
        var proxy = box.writer
        while proxy == nil { proxy = box.writer }
        proxy!.write.a += 1
        for _ in 0..<50 { _ = box.read }  // the consumer has time to look in between
        proxy!.write.b += 1
        checkouts += 1
      }
      streamed.withLock { $0 = checkouts }
      box.withWriter { $0 = Pair(a: -1, b: -1) }
    }
    writer.start()
    let (seen, halfDone) = await consumer.value
    #expect(halfDone == 0, "\(halfDone) of \(seen) values were half done")
    #expect(progress.withLock { $0 } > 0, "no value reached the consumer during the stream")
    #expect(streamed.withLock { $0 } > 0)
  }

  @Test func aQueuedWriteNextAndACheckoutAreWholeToo() async throws {
    let box = ThreadSafeSingleWriter(value: Pair())
    let rounds = 500
    let consumer = Task {
      var halfDone = 0
      for await pair in box.changes(skippingRepeats: false) {
        if pair.a != pair.b { halfDone += 1 }
        if pair.b == 2 * rounds { break }
      }
      return halfDone
    }
    for _ in 0..<rounds {
      box.writeNext { proxy in
        proxy.write.a += 1
        usleep(10)
        proxy.write.b += 1
      }
      let proxy = try await box.checkout()
      proxy.write.a += 1
      try await Task.sleep(nanoseconds: 10_000)
      proxy.write.b += 1
    }
    #expect(await consumer.value == 0)
  }

  /// Subscribing while a held proxy has written half its change: the first value is not
  /// that half, but the checkout's end.
  @Test func theFirstValueOfAStreamMadeMidCheckoutIsWhole() async {
    let box = ThreadSafeSingleWriter(value: Pair())
    var proxy = box.writer
    proxy!.write.a += 1
    let stream = box.changes(skippingRepeats: false)
    let first = Task { () -> Pair? in
      for await pair in stream { return pair }
      return nil
    }
    try? await Task.sleep(nanoseconds: 20_000_000)
    proxy!.write.b += 1
    proxy = nil  // the checkout ends, and publishes
    #expect(await first.value == Pair(a: 1, b: 1))
  }

  /// The same for a plain `SingleWriter` owned by an actor, whose method holds a proxy
  /// across an `await` between its two writes.
  @Test func aPlainSingleWriterOnAnActorIsWholeToo() async {
    actor Owner {
      let state = SingleWriter(value: Pair())
      func twoStepWrite() async {
        let proxy = state.writer!
        proxy.write.a += 1
        await Task.yield()
        try? await Task.sleep(nanoseconds: 100_000)
        proxy.write.b += 1
      }
      func consume(until end: Int) async -> Int {
        var halfDone = 0
        for await pair in state.changes(skippingRepeats: false) {
          if pair.a != pair.b { halfDone += 1 }
          if pair.b == end { break }
        }
        return halfDone
      }
    }
    let owner = Owner()
    let rounds = 200
    let consumer = Task { await owner.consume(until: rounds) }
    await Task.yield()
    for _ in 0..<rounds { await owner.twoStepWrite() }
    #expect(await consumer.value == 0)
  }
}

import Foundation
import Testing

@testable import SingleWriter

// Promises "Whole checkouts", "Newest, not a backlog", "Streams end": readWhole,
// mayBeHalfDone, observe() setting dirty mid-checkout, snapshots.

/// What a consumer saw: torn values, regressions, and the last value.
struct AtkSeen: Sendable {
  var torn = 0
  var regressions = 0
  var delivered = 0
  var last = -1

  /// Counts `pair`: torn if its fields differ, a regression if older than one seen before.
  mutating func record(_ pair: AtkPair) {
    delivered += 1
    if pair.a != pair.b { torn += 1 }
    if pair.a < last { regressions += 1 }
    last = max(last, pair.a)
  }
}

func atkConsume(
  _ stream: ThreadSafeSingleWriter<AtkPair>.Changes<AtkPair>, until end: Int,
  _ seen: Locked<AtkSeen>
) async {
  for await pair in stream {
    let done = seen.withLock { seen -> Bool in
      seen.record(pair)
      return pair.a >= end
    }
    if done { return }
    if Bool.random() { try? await Task.sleep(nanoseconds: UInt64.random(in: 0...200_000)) }
  }
}

@Suite(.serialized) struct AttackPassObservation {
  /// A stream of two-step proxy checkouts (a, then b) back to back, with consumers of
  /// mixed speed, subscribe/unsubscribe churn while a proxy is held (including the last
  /// subscriber leaving mid-checkout, then a new one arriving mid-checkout): no torn
  /// value, no regression, and every consumer reaches the final value (no starvation).
  @Test func churnWhileProxiesAreHeldNeverTearsRegressesOrStarves() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(60, "observation churn")
      let box = ThreadSafeSingleWriter(value: AtkPair())
      let rounds = 3_000
      let seen = (0..<3).map { _ in Locked(AtkSeen()) }
      let churnSeen = Locked(AtkSeen())
      let writerDone = DispatchSemaphore(value: 0)
      let stopChurn = Locked(false)
      Thread.detachNewThread {
        for round in 1...rounds {
          var proxy: ThreadSafeWriterProxy<AtkPair>?
          while proxy == nil { proxy = box.writer }
          proxy!.write.a = round
          if round % 7 == 0 { attackSpin(50_000) }
          proxy!.write.b = round
          proxy = nil
        }
        writerDone.signal()
      }
      // Churn: subscribe mid-checkout, take a value, leave.
      let churn = Task.detached {
        while !stopChurn.withLock({ $0 }) {
          var iterator = box.changes(skippingRepeats: false).makeAsyncIterator()
          if let pair = await iterator.next() {
            churnSeen.withLock { seen in
              seen.delivered += 1
              if pair.a != pair.b { seen.torn += 1 }
            }
          }
        }
      }
      await withTaskGroup(of: Void.self) { group in
        for index in 0..<3 {
          group.addTask {
            if index == 2 { try? await Task.sleep(nanoseconds: 2_000_000) }
            await atkConsume(box.changes(skippingRepeats: false), until: rounds, seen[index])
          }
        }
      }
      writerDone.wait()
      stopChurn.withLock { $0 = true }
      await churn.value
      var broken = false
      for (index, box) in seen.enumerated() {
        let s = box.withLock { $0 }
        attackErr("consumer \(index): \(s)\n")
        if s.torn > 0 || s.regressions > 0 || s.last != rounds { broken = true }
      }
      let c = churnSeen.withLock { $0 }
      attackErr("churn: \(c)\n")
      atkEnd(breakingIf: broken || c.torn > 0)
    }
    expectNoBreak(result)
  }

  /// A single slow consumer against checkouts held for most of the time (the value is
  /// half done nearly always): it must keep getting newer values (snapshots), whole, for
  /// 2 s.
  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func aConsumerIsNotStarvedWhenTheValueIsNearlyAlwaysHalfDone() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "starvation")
      let box = ThreadSafeSingleWriter(value: AtkPair())
      let stop = Locked(false)
      let writerDone = DispatchSemaphore(value: 0)
      let written = Locked(0)
      Thread.detachNewThread {
        var round = 0
        while !stop.withLock({ $0 }) {
          round += 1
          let proxy = box.writer!
          proxy.write.a = round
          attackSpin(200_000)  // half done for 0.2 ms of every checkout
          proxy.write.b = round
          written.withLock { $0 = round }
        }
        writerDone.signal()
      }
      let seen = Locked(AtkSeen())
      let consumer = Task.detached {
        for await pair in box.changes(skippingRepeats: false) {
          seen.withLock { $0.record(pair) }
          try? await Task.sleep(nanoseconds: 1_000_000)
        }
      }
      try? await Task.sleep(nanoseconds: 2_000_000_000)
      stop.withLock { $0 = true }
      writerDone.wait()
      try? await Task.sleep(nanoseconds: 100_000_000)
      consumer.cancel()
      let s = seen.withLock { $0 }
      attackErr("delivered \(s), written \(written.withLock { $0 })\n")
      atkEnd(
        breakingIf: s.torn > 0 || s.regressions > 0 || s.delivered < 20
          || s.last != written.withLock({ $0 }))
    }
    expectNoBreak(result)
  }

  /// A plain SingleWriter on an actor: methods hold the proxy across awaits while others
  /// subscribe mid-checkout and leave; no torn value, no regression, and the consumer gets
  /// the end. (A first version hung: its proxy lived to the end of scope, a test bug.)
  @Test func aPlainSingleWriterOnAnActorUnderChurn() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "plain SingleWriter on an actor under churn")
      let owner = AtkPairOwner()
      let rounds = 300
      let consumer = Task { await owner.consume(until: rounds) }
      var churnTorn = 0
      for index in 0..<rounds {
        await owner.twoStep()
        if index % 10 == 0 {
          attackErr("round \(index)\n")
          if let pair = await owner.subscribeMidCheckout(), pair.a != pair.b { churnTorn += 1 }
        }
      }
      attackErr("writes done\n")
      let seen = await consumer.value
      attackErr("consumer \(seen), churn torn \(churnTorn)\n")
      atkEnd(breakingIf: seen.torn > 0 || seen.regressions > 0 || churnTorn > 0)
    }
    expectNoBreak(result)
  }

  /// The container freed while a consumer waits for a snapshot (it found the value half
  /// done): the stream ends after the final value, which is whole.
  ///
  /// The iterator is made before the container can go: an iterator made after that ends at
  /// once (as documented), and a detached task that made its own was sometimes started
  /// only after `box = nil` under load, so it got nothing. The subscription is made half
  /// done, so the consumer's first read finds it so and asks for a snapshot; most rounds
  /// end the checkout only once it has, the others race it.
  @Test func theContainerFreedWhileASnapshotIsWanted() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "freed while a snapshot is wanted")
      var bad = 0
      var wanted = 0
      for round in 0..<300 {
        var box: ThreadSafeSingleWriter<AtkPair>? = ThreadSafeSingleWriter(value: AtkPair())
        var proxy = box!.writer
        proxy!.write.a = 1  // half done
        let iterator = box!.changes(skippingRepeats: false).makeAsyncIterator()
        let consumer = Task.detached { () -> [AtkPair] in
          var iterator = iterator
          var got: [AtkPair] = []
          while let pair = await iterator.next() { got.append(pair) }
          return got
        }
        if round % 4 != 0 {
          while !box!.hub.wantsSnapshot { await Task.yield() }
        } else {
          try? await Task.sleep(nanoseconds: UInt64.random(in: 0...300_000))
        }
        if box!.hub.wantsSnapshot { wanted += 1 }
        proxy!.write.b = 1
        if round % 2 == 0 { proxy = nil }
        box = nil  // with the proxy (if still held) keeping it alive until dropped
        proxy = nil
        _ = box
        let got = await consumer.value
        if got.contains(where: { $0.a != $0.b }) || got.last != AtkPair(a: 1, b: 1) {
          bad += 1
          attackErr("round \(round): \(got)\n")
        }
      }
      attackErr("snapshot wanted at the checkout's end in \(wanted) rounds of 300\n")
      if bad > 0 || wanted < 225 {
        attackErr("BREAK\n")
        exit(1)
      }
      exit(0)
    }
    atkDiag(result)
    #expect(!standardError(result).contains("BREAK"), "\(exitReport(result))")
  }
}

actor AtkPairOwner {
  let state = SingleWriter(value: AtkPair())
  var round = 0
  func twoStep() async {
    round += 1
    let proxy = state.writer!
    proxy.write.a = round
    await Task.yield()
    proxy.write.b = round
  }
  func subscribeMidCheckout() async -> AtkPair? {
    var proxy = state.writer
    proxy?.write.a += 1000  // half done: a != b
    var iterator = state.changes(skippingRepeats: false).makeAsyncIterator()
    proxy?.write.a -= 1000
    proxy = nil  // ends the checkout before waiting for a value
    return await iterator.next(isolation: self)
  }
  func consume(until end: Int) async -> AtkSeen {
    var seen = AtkSeen()
    for await pair in state.changes(skippingRepeats: false) {
      seen.record(pair)
      if pair.b >= end { break }
    }
    return seen
  }
}

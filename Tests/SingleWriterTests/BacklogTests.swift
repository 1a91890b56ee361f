import Dispatch
import Foundation
import Testing

@testable import SingleWriter

/// The backlog you can see, await and bound: `queuedWrites` on both containers,
/// `drained()`, and `init(value:maxQueuedWrites:)`.
@Suite struct BacklogTests {
  // MARK: queuedWrites

  @Test func queuedWritesCountsTheWritesBehindAHeldProxy() {
    let plain = SingleWriter(value: 0)
    let shared = ThreadSafeSingleWriter(value: 0)
    #expect(plain.queuedWrites == 0)
    #expect(shared.queuedWrites == 0)
    if let held = plain.writer, let heldShared = shared.writer {
      for _ in 0..<100 {
        plain.writeNext { $0.write += 1 }
        shared.writeNext { $0.write += 1 }
      }
      #expect(plain.queuedWrites == 100)
      #expect(shared.queuedWrites == 100)
      withExtendedLifetime((held, heldShared)) {}
    }
    #expect(plain.queuedWrites == 0)
    #expect(shared.queuedWrites == 0)
    #expect(plain.read == 100)
    #expect(shared.read == 100)
  }

  /// Every kind of queued write counts, and each stops counting once it starts: a
  /// `withWriter` that queued, an `await write`, a `checkout()`.
  @Test func queuedWritesCountsEveryKindOfWaitingWrite() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let held = Locked(box.writer)
    box.writeNext { $0.write += 1 }
    let asyncWrite = Task.detached { await box.write { $0 += 1 } }
    let checkout = checkoutTask(box)
    let waiter = Task.detached { box.withWriter { $0 += 1 } }
    // The `withWriter` queues after about a millisecond of waiting.
    await waitUntil { box.queuedWrites == 4 }
    held.withLock { $0 = nil }
    _ = await (asyncWrite.value, checkout.value, waiter.value)
    #expect(box.queuedWrites == 0)
    #expect(box.read == 4)
  }

  // MARK: drained()

  /// `drained()` returns only once the writes queued before it have run: what it sees
  /// when it returns includes all of them.
  @Test func drainedReturnsOnlyAfterTheWritesQueuedBeforeItRan() async {
    let box = ThreadSafeSingleWriter(value: [Int]())
    let held = Locked(box.writer)
    for value in 0..<100 { box.writeNext { $0.write.append(value) } }
    let returned = SharedFlag()
    let drained = Task.detached {
      await box.drained()
      returned.set()
      return box.read
    }
    // Still queued behind the held proxy: it must not have returned.
    await waitUntil { box.queuedWrites == 100 }
    try? await Task.sleep(for: .milliseconds(20))
    #expect(!returned.isSet)
    held.withLock { $0 = nil }
    #expect(await drained.value == Array(0..<100))
  }

  /// `drained()` waits whatever the task's cancellation, as `await write` does: a task
  /// cancelled while it waits still returns only after the writes queued before it ran.
  @Test func aCancelledDrainStillWaitsForTheWritesAheadOfIt() async {
    let box = ThreadSafeSingleWriter(value: [Int]())
    let held = Locked(box.writer)
    for value in 0..<10 { box.writeNext { $0.write.append(value) } }
    let drained = Task.detached {
      await box.drained()
      return box.read
    }
    drained.cancel()
    try? await Task.sleep(for: .milliseconds(20))
    #expect(box.queuedWrites == 10, "the cancelled drain ran nothing and took nothing")
    held.withLock { $0 = nil }
    #expect(await drained.value == Array(0..<10))
  }

  @Test func drainedReturnsAtOnceWithNothingQueuedEvenWhileAProxyIsHeldElsewhere() async {
    let box = ThreadSafeSingleWriter(value: 0)
    await box.drained()
    holdWriterElsewhere(box, for: 30)
    await box.drained()  // nothing queued: the held proxy does not hold it up
    #expect(box.queuedWrites == 0)
  }

  /// Many producers queue while `drained()` waits: each drain sees every write its own
  /// producer queued before it.
  @Test func eachDrainSeesTheWritesQueuedBeforeIt() async {
    let box = ThreadSafeSingleWriter(value: [Int: Int]())
    let held = Locked(box.writer)
    let producers = (0..<4).map { producer in
      Task.detached { () -> Int in
        for value in 1...200 { box.writeNext { $0.write[producer] = value } }
        await box.drained()
        return box.read[producer] ?? 0
      }
    }
    await waitUntil { box.queuedWrites >= 200 }
    held.withLock { $0 = nil }
    for producer in producers { #expect(await producer.value == 200) }
  }

  // MARK: maxQueuedWrites

  /// With a bound of 16, a producer of 1,000 writes behind a held proxy is held back: the
  /// backlog never passes 16, and all 1,000 run in order once the proxy is released.
  @Test func aBoundedBacklogHoldsTheProducerBackAndLosesNothing() async {
    let box = ThreadSafeSingleWriter(value: [Int](), maxQueuedWrites: 16)
    let held = Locked(box.writer)
    let produced = Counter()
    let highest = Counter()
    let watching = Repeating { highest.raise(to: box.queuedWrites) }
    // On a thread of its own, started without the cooperative pool (which other tests
    // may keep busy for a while): a pool thread that ran the task holding the proxy would
    // count as the holder's, and queue past the bound.
    let finished = SharedFlag()
    let producer = Thread {
      for value in 0..<1_000 {
        box.writeNext { $0.write.append(value) }
        _ = produced.add(1)
      }
      finished.set()
    }
    producer.stackSize = 1 << 20
    producer.start()
    // Held back: 16 queued, and no more however long it waits.
    await waitUntil { produced.load() == 16 }
    try? await Task.sleep(for: .milliseconds(20))
    #expect(produced.load() == 16)
    #expect(box.queuedWrites == 16)
    held.withLock { $0 = nil }
    await waitUntil { finished.isSet }
    await box.drained()
    watching.stop()
    #expect(highest.load() <= 16)
    #expect(box.read == Array(0..<1_000))
  }

  /// Producers on several threads together never pass the bound either: admission is
  /// counted under the hand-off's lock.
  @Test func concurrentProducersNeverPassTheBound() async {
    let box = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 8)
    let highest = Counter()
    let watching = Repeating { highest.raise(to: box.queuedWrites) }
    await onThreads(4) { _ in
      for _ in 0..<2_000 {
        box.writeNext { proxy in
          highest.raise(to: box.queuedWrites)
          proxy.write += 1
        }
      }
    }
    await box.drained()
    watching.stop()
    #expect(highest.load() <= 8)
    #expect(box.read == 8_000)
  }

  /// A `writeNext` from the checkout's holder never waits for room it alone could make:
  /// inside a closure write, from a thread holding a proxy, and inside a served body, a
  /// full backlog takes it past the bound instead of hanging.
  @Test func theHolderQueuesPastAFullBound() {
    let box = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 4)
    box.withWriter { _ in
      for _ in 0..<10 { box.writeNext { $0.write += 1 } }
      #expect(box.queuedWrites == 10)
    }
    #expect(box.read == 10)
    if let held = box.writer {
      for _ in 0..<10 { box.writeNext { $0.write += 1 } }
      #expect(box.queuedWrites == 10)
      withExtendedLifetime(held) {}
    }
    #expect(box.read == 20)
    box.writeNext { _ in
      for _ in 0..<10 { box.writeNext { $0.write += 1 } }
    }
    #expect(box.read == 30)
  }

  /// The same from inside this container's `read { }`: waiting there for room would wait
  /// for the read itself.
  @Test func aReadQueuesPastAFullBound() {
    let box = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 2)
    holdWriterElsewhere(box, for: 1)
    box.read { _ in
      for _ in 0..<5 { box.writeNext { $0.write += 1 } }
    }
    #expect(box.queuedWrites == 5)
    #expect(box.withWriter { $0 } == 5)
  }

  /// A task holding a proxy it took queues past the bound too.
  @Test func aTaskHoldingItsCheckoutQueuesPastAFullBound() async throws {
    let box = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 2)
    do {
      let held = try await box.checkout()
      for _ in 0..<5 { box.writeNext { $0.write += 1 } }
      #expect(box.queuedWrites == 5)
      withExtendedLifetime(held) {}
    }
    await box.drained()
    #expect(box.read == 5)
  }

  /// A proxy a task took is that task's, not its thread's: another task that runs on the
  /// same thread while the first is suspended is held back by the bound like anyone else.
  /// The thread, here an actor's own, must not count as the holder's.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ExecutorJob
  @Test func anotherTaskOnTheThreadWhereATaskTookItsProxyIsHeldBack() async {
    let box = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 4)
    // Taken on the actor's own thread, in this task, and released later from wherever
    // this task resumes.
    let pinned = AtkPinned()
    let held = await pinned.run { Locked(box.writer) }
    #expect(held.withLock { $0 != nil })
    let produced = Counter()
    let producer = Task.detached {
      await pinned.run {
        for _ in 0..<10 {
          box.writeNext { $0.write += 1 }
          produced.add(1)
        }
      }
    }
    await waitUntil { produced.load() == 4 }
    try? await Task.sleep(for: .milliseconds(20))
    #expect(produced.load() == 4)
    #expect(box.queuedWrites == 4)
    held.withLock { $0 = nil }
    await producer.value
    await box.drained()
    #expect(box.read == 10)
  }
}

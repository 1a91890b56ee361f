import Dispatch
import Foundation
import Observation
import Testing

@testable import SingleWriter

/// Registers `read` with the Observation module and, each time it fires, counts and
/// registers again: one count per notification, for as long as the test runs.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
func trackForever(_ fired: Counter, _ read: @escaping @Sendable () -> Void) {
  withObservationTracking(read) {
    fired.add(1)
    trackForever(fired, read)
  }
}

struct Profile: Equatable, Sendable {
  var name = "Ann"
  var cart: [Int] = []
}

/// `trackedRead` on both containers: one notification per checkout that wrote.
@Suite struct ObservationTrackingTests {
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func threadSafeTrackingFiresOncePerChangingCheckout() {
    let box = ThreadSafeSingleWriter(value: 0)
    let fired = Counter()
    trackForever(fired) { _ = box.trackedRead }
    do {
      let proxy = box.writer!
      proxy.write = 1
      proxy.write += 1
      proxy.write += 1
      #expect(fired.load() == 0, "not per proxy write, not before the checkout ends")
    }
    #expect(fired.load() == 1)
    _ = box.writer  // a read-only checkout
    #expect(fired.load() == 1)
    _ = box.tryWrite { $0 += 1 }
    #expect(fired.load() == 2)
    box.writeNext { $0.write += 1 }
    #expect(fired.load() == 3)
    box.withWriter { $0 += 1 }
    #expect(fired.load() == 4)
    #expect(box.read == 6)
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func plainTrackingFiresOncePerChangingCheckout() {
    let box = SingleWriter(value: 0)
    nonisolated(unsafe) let unsafeBox = box  // the closure runs on this thread only
    let fired = Counter()
    trackForever(fired) { _ = unsafeBox.trackedRead }
    do {
      let proxy = box.writer!
      proxy.write = 1
      proxy.write += 1
      #expect(fired.load() == 0, "not per proxy write, not before the checkout ends")
    }
    #expect(fired.load() == 1)
    _ = box.writer  // a read-only checkout
    #expect(fired.load() == 1)
    _ = box.tryWrite { $0 += 1 }
    #expect(fired.load() == 2)
    box.writeNext { $0.write += 1 }
    #expect(fired.load() == 3)
    var held = box.writer
    box.writeNext { $0.write += 1 }  // queued: its own checkout
    held!.write += 1
    held = nil
    #expect(fired.load() == 5)
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func plainReadRegistersNothing() {
    let box = SingleWriter(value: 0)
    nonisolated(unsafe) let unsafeBox = box
    let fired = Counter()
    withObservationTracking {
      _ = unsafeBox.read
    } onChange: {
      fired.add(1)
    }
    _ = box.tryWrite { $0 += 1 }
    #expect(fired.load() == 0)
    #expect(!box.isObserved, "nobody observes: writes publish nothing")
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func aTrackingConsumerThatWritesBackConverges() {
    let box = ThreadSafeSingleWriter(value: 0)
    let fired = Counter()
    // Clamps the value to 10, writing only when it is out of range.
    @Sendable func track() {
      withObservationTracking {
        _ = box.trackedRead
      } onChange: {
        fired.add(1)
        box.writeNext { if $0.write > 10 { $0.write = 10 } }
        track()
      }
    }
    track()
    _ = box.tryWrite { $0 = 50 }
    #expect(box.read == 10)
    #expect(fired.load() == 2, "the write, then the clamp; nothing after")
  }

  @available(macOS 26, iOS 26, tvOS 26, watchOS 26, *)
  @Test func anObservationsSequenceFollowsChangingCheckouts() async {
    let box = ThreadSafeSingleWriter(value: 0)
    var values = Observations { box.trackedRead }.makeAsyncIterator()
    #expect(await values.next() == 0)
    _ = box.tryWrite { $0 = 5 }
    #expect(await values.next() == 5)
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func trackingThatOutlivesItsContainerNeverFires() {
    let fired = Counter()
    weak var weakBox: ThreadSafeSingleWriter<Int>?
    do {
      let box = ThreadSafeSingleWriter(value: 0)
      weakBox = box
      withObservationTracking {
        _ = box.trackedRead
      } onChange: {
        fired.add(1)
      }
    }
    #expect(weakBox == nil, "tracking does not keep the container alive")
    #expect(fired.load() == 0)
  }
}

/// `changes()` on both containers.
@Suite struct ObservationStreamTests {
  @Test func noOpWritesAreNotDeliveredWhenEquatable() async {
    let box = ThreadSafeSingleWriter(value: 0)
    var iterator = box.changes().makeAsyncIterator()
    #expect(await iterator.next() == 0)
    _ = box.tryWrite { _ in }
    _ = box.tryWrite { $0 = 0 }
    box.writer!.write = 0
    _ = box.tryWrite { $0 = 7 }
    #expect(await iterator.next() == 7)
    _ = box.tryWrite { $0 = 7 }
    _ = box.tryWrite { $0 = 8 }
    #expect(await iterator.next() == 8)
  }

  @Test func everyCheckoutIsDeliveredOnRequest() async {
    let box = ThreadSafeSingleWriter(value: 0)
    var iterator = box.changes(skippingRepeats: false).makeAsyncIterator()
    #expect(await iterator.next() == 0)
    _ = box.tryWrite { _ in }
    #expect(await iterator.next() == 0)
  }

  @Test func plainNoOpWritesAreNotDeliveredWhenEquatable() async {
    let box = SingleWriter(value: 0)
    var iterator = box.changes().makeAsyncIterator()
    #expect(await iterator.next() == 0)
    _ = box.tryWrite { _ in }
    box.writer!.write = 0
    _ = box.tryWrite { $0 = 3 }
    #expect(await iterator.next() == 3)
    var every = box.changes(skippingRepeats: false).makeAsyncIterator()
    #expect(await every.next() == 3)
    _ = box.tryWrite { _ in }
    #expect(await every.next() == 3)
  }

  @Test func aPropertyStreamIgnoresOtherProperties() async {
    let box = ThreadSafeSingleWriter(value: Profile())
    var names = box.changes(of: \.name).makeAsyncIterator()
    #expect(await names.next() == "Ann")
    _ = box.tryWrite { $0.cart.append(1) }
    _ = box.tryWrite { $0.cart.append(2) }
    _ = box.tryWrite { $0.name = "Bo" }
    #expect(await names.next() == "Bo")
    let plain = SingleWriter(value: Profile())
    var plainNames = plain.changes(of: \.name).makeAsyncIterator()
    #expect(await plainNames.next() == "Ann")
    _ = plain.tryWrite { $0.cart.append(1) }
    _ = plain.tryWrite { $0.name = "Cy" }
    #expect(await plainNames.next() == "Cy")
  }

  @Test func aStreamConsumerThatWritesBackDoesNotLoop() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let deliveries = Counter()
    let consumer = Task {
      for await _ in box.changes() {
        deliveries.add(1)
        await box.write { $0 = min($0, 10) }  // writes even when in range
      }
    }
    await waitUntil { deliveries.load() == 1 }
    // Waits its turn: the consumer may be writing back just now, where a `tryWrite` would
    // find the writer busy and write nothing (chaos mode's timing did).
    await box.write { $0 = 50 }
    await waitUntil { box.read == 10 }
    try? await Task.sleep(for: .milliseconds(50))
    consumer.cancel()
    await consumer.value
    #expect(deliveries.load() <= 3, "0, then 50 and 10 at most; the clamp's no-op is skipped")
  }

  @Test func aWaitingConsumerEndsWhenTheContainerIsFreed() async {
    var box: ThreadSafeSingleWriter<Int>? = ThreadSafeSingleWriter(value: 1)
    let stream = box!.changes()
    let started = Counter()
    let consumer = Task {
      var values: [Int] = []
      for await value in stream {
        values.append(value)
        started.add(1)
      }
      return values
    }
    await waitUntil { started.load() == 1 }
    let hub = box!.hub
    await waitUntil { hub.withLock { !hub.sleepers.isEmpty } }  // asleep in the hub
    box = nil
    #expect(await consumer.value == [1])
  }

  @Test func aPlainStreamEndsWhenTheContainerIsFreed() async {
    var box: SingleWriter<Int>? = SingleWriter(value: 1)
    var iterator = box!.changes().makeAsyncIterator()
    #expect(await iterator.next() == 1)
    box = nil
    #expect(await iterator.next() == nil)
  }

  @Test func aCancelledConsumerEnds() async {
    let box = ThreadSafeSingleWriter(value: 1)
    let started = Counter()
    let consumer = Task {
      for await _ in box.changes() { started.add(1) }
    }
    await waitUntil { started.load() == 1 }
    consumer.cancel()
    await consumer.value
    await waitUntil { box.subscriberCount == 0 }
    #expect(!box.isObserved)
  }

  @Test func theLastSubscriberToLeaveTurnsPublishingOff() {
    let box = SingleWriter(value: 0)
    var first: SingleWriter<Int>.Changes<Int>? = box.changes()
    var second: SingleWriter<Int>.Changes<Int>? = box.changes()
    #expect(box.isObserved && box.subscriberCount == 2)
    first = nil
    #expect(box.isObserved)
    second = nil
    #expect(!box.isObserved && box.subscriberCount == 0)
    _ = (first, second)
  }

  @MainActor @Test func mainActorConsumersResumeOnTheMainActor() async {
    let box = SingleWriter(value: 0)
    let consumer = Task { @MainActor in
      var seen: [Int] = []
      for await value in box.changes() {
        MainActor.preconditionIsolated()
        seen.append(value)
        if value == 2 { break }
      }
      return seen
    }
    await Task.yield()
    _ = box.tryWrite { $0 = 1 }
    await Task.yield()
    _ = box.tryWrite { $0 = 2 }
    let seen = await consumer.value
    #expect(seen.last == 2)
    #expect(Set(seen).isSubset(of: [0, 1, 2]))
  }

  /// A consumer slower than its producer is resumed by the first end of a batch, and once
  /// more only if it then finds a checkout half done; it gets at most two values a batch,
  /// never the backlog. Paced by state, not time: a batch starts once the consumer sleeps,
  /// and the consumer's work lasts until the batch is over.
  @Test func aSlowConsumerIsResumedAtMostTwicePerBatch() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let batches = 20
    let perBatch = 200
    let deliveries = Counter()
    let started = Counter()
    let finished = Counter()
    let consumer = Task.detached {
      for await value in box.changes() {
        deliveries.add(1)
        // Slower than a whole batch: busy until the batch that woke it is over.
        while finished.load() < started.load() { usleep(50) }
        if value == batches * perBatch { break }
      }
    }
    for batch in 1...batches {
      // The consumer has delivered everything before and sleeps again.
      await waitUntil { box.hub.withLock { !box.hub.sleepers.isEmpty } }
      started.add(1)
      for _ in 0..<perBatch { _ = box.tryWrite { $0 += 1 } }
      #expect(box.read == batch * perBatch)
      finished.add(1)
    }
    await consumer.value
    let wakes = box.hub.withLock { box.hub.wakeCount }
    // Asleep when each batch began, so each batch's first end woke it.
    #expect(wakes >= batches)
    #expect(wakes <= 2 * batches)
    // The value at subscription, then at most the first and the last end of each batch.
    #expect(deliveries.load() >= batches + 1)
    #expect(deliveries.load() <= 2 * batches + 1)
  }
}

/// Regressions from issue 13 for `changes()`.
@Suite struct ObservationRegressionTests {
  /// Issue 13, item 3: a thread that keeps subscribing while another takes and releases
  /// the writer without writing must never sleep where no release wakes it.
  @Test func subscribingNeverSleepsThroughACheckoutLoop() async {
    let finished = await runOnThread(stackSize: 1 << 20) {
      let box = ThreadSafeSingleWriter(value: 0)
      let stop = Counter()
      let subscribed = Counter()
      let churn = Thread {
        while stop.load() == 0 { _ = box.writer }
      }
      churn.start()
      let subscriber = Thread {
        for _ in 0..<20_000 {
          _ = box.changes()
          subscribed.add(1)
        }
      }
      subscriber.start()
      let deadline = Date().addingTimeInterval(60)  // a hang watchdog
      while subscribed.load() < 20_000, Date() < deadline { usleep(1_000) }
      stop.store(1)
      return subscribed.load()
    }
    #expect(finished == 20_000, "changes() slept with nobody to wake it")
  }

  /// Issue 13, minor point: `changes()` inside a `writeNext` body used to stop the program.
  @Test func changesInsideAWriteNextBodyWorks() async {
    await #expect(processExitsWith: .success) {
      let box = ThreadSafeSingleWriter(value: 1)
      let stream = Locked<ThreadSafeSingleWriter<Int>.Changes<Int>?>(nil)
      box.writeNext { proxy in
        proxy.write = 2
        stream.withLock { $0 = box.changes() }
      }
      var iterator = stream.withLock { $0 }!.makeAsyncIterator()
      if await iterator.next() != 2 { exit(1) }
      _ = box.tryWrite { $0 = 3 }
      if await iterator.next() != 3 { exit(1) }
    }
  }
}

/// Regressions from issue 22: when a stream ends, what it delivers last, and observers
/// of the plain container.
@Suite struct ObservationStreamEndTests {
  /// Item 1: the value written just before the container is freed is delivered, to a
  /// consumer asleep in the hub and to one that is not, then the stream ends.
  @MainActor @Test func theLastValueIsDeliveredBeforeTheStreamEnds() async {
    var box: ThreadSafeSingleWriter<Int>? = ThreadSafeSingleWriter(value: 1)
    let hub = box!.hub
    let stream = box!.changes()
    let consumer = Task { @MainActor in
      var values: [Int] = []
      for await value in stream { values.append(value) }
      return values
    }
    while hub.withLock({ hub.sleepers.isEmpty }) {  // until it has 1, and sleeps
      try? await Task.sleep(for: .milliseconds(1))
    }
    // On this actor, so the consumer cannot run before the container is gone.
    _ = box!.tryWrite { $0 = 8 }
    box = nil
    #expect(await consumer.value == [1, 8])

    var awake: ThreadSafeSingleWriter<Int>? = ThreadSafeSingleWriter(value: 1)
    var iterator = awake!.changes().makeAsyncIterator()
    #expect(await iterator.next() == 1)
    _ = awake!.tryWrite { $0 = 8 }
    awake = nil
    #expect(await iterator.next() == 8)
    #expect(await iterator.next() == nil)

    var unstarted: ThreadSafeSingleWriter<Int>? = ThreadSafeSingleWriter(value: 1)
    var fresh = unstarted!.changes().makeAsyncIterator()
    _ = unstarted!.tryWrite { $0 = 8 }
    unstarted = nil
    #expect(await fresh.next() == 8, "the newest value, not the one at subscription")
    #expect(await fresh.next() == nil)
  }

  /// Item 1, with the consumer on another thread: it may wake while the container is
  /// being freed, when its weak read fails and the hub is not closed yet.
  @Test func theLastValueReachesAConsumerOnAnotherThread() async {
    for _ in 0..<200 {
      var box: ThreadSafeSingleWriter<Int>? = ThreadSafeSingleWriter(value: 1)
      let hub = box!.hub
      let stream = box!.changes()
      let consumer = Task.detached {
        var values: [Int] = []
        for await value in stream { values.append(value) }
        return values
      }
      await waitUntil { hub.withLock { !hub.sleepers.isEmpty } }
      _ = box!.tryWrite { $0 = 8 }
      box = nil
      #expect(await consumer.value == [1, 8])
    }
  }

  /// Item 1, on the plain container, which shares the cursor.
  @Test func thePlainContainersLastValueIsDeliveredBeforeTheStreamEnds() async {
    var box: SingleWriter<Int>? = SingleWriter(value: 1)
    var iterator = box!.changes().makeAsyncIterator()
    #expect(await iterator.next() == 1)
    _ = box!.tryWrite { $0 = 8 }
    box = nil
    #expect(await iterator.next() == 8)
    #expect(await iterator.next() == nil)
  }

  /// Item 2: an iterator made after the container is gone ends at once, instead of
  /// yielding the value at subscription.
  @Test func anIteratorMadeAfterTheContainerIsGoneEndsAtOnce() async {
    var box: ThreadSafeSingleWriter<Int>? = ThreadSafeSingleWriter(value: 1)
    let stream = box!.changes()
    var first = stream.makeAsyncIterator()
    #expect(await first.next() == 1)
    box = nil
    #expect(await first.next() == nil)
    var late = stream.makeAsyncIterator()
    #expect(await late.next() == nil)

    var plain: SingleWriter<Int>? = SingleWriter(value: 1)
    let plainStream = plain!.changes()
    plain = nil
    var plainLate = plainStream.makeAsyncIterator()
    #expect(await plainLate.next() == nil)
  }

  /// Item 3: cancellation ends the stream at the next `next()`, even though a consumer
  /// that writes back always finds a newer value.
  @Test func cancellationEndsAStreamThatKeepsGettingValues() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let afterCancel = await Task {
      var afterCancel = 0
      for await value in box.changes() {
        if Task.isCancelled {
          afterCancel += 1
          if afterCancel == 100 { break }
        }
        if value == 5 { withUnsafeCurrentTask { $0?.cancel() } }
        _ = box.tryWrite { $0 += 1 }
      }
      return afterCancel
    }.value
    #expect(afterCancel == 0)
    #expect(box.read == 6)

    let plainAfterCancel = await Task {
      let plain = SingleWriter(value: 0)
      var afterCancel = 0
      for await value in plain.changes() {
        if Task.isCancelled {
          afterCancel += 1
          if afterCancel == 100 { break }
        }
        if value == 5 { withUnsafeCurrentTask { $0?.cancel() } }
        _ = plain.tryWrite { $0 += 1 }
      }
      return afterCancel
    }.value
    #expect(plainAfterCancel == 0)
  }

  /// Item 4: a task cancelled before its first `next()` gets `nil`, not the first value.
  @Test func anAlreadyCancelledTaskGetsNothing() async {
    let box = ThreadSafeSingleWriter(value: 7)
    let stream = box.changes()
    let first = await Task {
      withUnsafeCurrentTask { $0?.cancel() }
      var iterator = stream.makeAsyncIterator()
      return await iterator.next()
    }.value
    #expect(first == nil)
  }

  /// Item 5: an observer's `writeNext` on the plain container goes behind the writes
  /// already queued, as on the thread-safe one; its `tryWrite` finds the writer busy.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func anObserversWriteGoesBehindQueuedWrites() {
    let box = SingleWriter(value: [String]())
    nonisolated(unsafe) let unsafeBox = box  // the handler runs on this thread only
    let tried = Locked<[Bool]>([])
    withObservationTracking {
      _ = unsafeBox.trackedRead
    } onChange: {
      tried.withLock { $0.append(unsafeBox.tryWrite { $0.append("tryWrite") } != nil) }
      unsafeBox.writeNext { $0.write.append("observer") }
    }
    var held = box.writer
    box.writeNext { $0.write.append("A") }
    box.writeNext { $0.write.append("B") }
    held = nil
    #expect(box.read == ["A", "B", "observer"])
    #expect(tried.withLock { $0 } == [false])
    _ = held
  }

  /// Item 6: a stream or a tracked read that starts inside a write hears about the rest
  /// of that write.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func anObserverThatStartsInsideAWriteHearsTheRestOfIt() async {
    let box = SingleWriter(value: 0)
    var stream: SingleWriter<Int>.Changes<Int>?
    _ = box.tryWrite { value in
      value = 1
      stream = box.changes()
      value = 2
    }
    var iterator = stream!.makeAsyncIterator()
    #expect(await iterator.next() == 2)
    _ = box.tryWrite { $0 = 3 }
    #expect(await iterator.next() == 3)

    let tracked = SingleWriter(value: 0)
    nonisolated(unsafe) let unsafeTracked = tracked
    let fired = Counter()
    _ = tracked.tryWrite { value in
      value = 1
      withObservationTracking {
        _ = unsafeTracked.trackedRead
      } onChange: {
        fired.add(1)
      }
      value = 2
    }
    #expect(fired.load() == 1)
  }

  /// Seen by the issue-22 pass: a subscriber that leaves while a closure write ends must
  /// not leave the container marked observed. Runs `tryWrite`'s steps one by one, with
  /// the subscriber leaving where another thread's could: after the begin, so that the
  /// end's one-step guess (the word the begin set, observed) fails and the slow end runs.
  @Test func aSubscriberLeavingDuringAClosureWriteTurnsPublishingOff() {
    let box = ThreadSafeSingleWriter(value: 0)
    var stream = Optional(box.changes())
    #expect(box.lock.tryBeginClosureWrite())
    box.storage.pointee = 1
    stream = nil
    #expect(box.lock.tryEndClosureWrite() == .slow)
    box.finishClosureWrite()
    #expect(stream == nil && box.subscriberCount == 0)
    #expect(!box.isObserved, "nobody observes: checkouts must take the fast path again")
  }

  /// An observed closure write ends in one step, from the word its begin set, and says
  /// to publish; the next write, begun from the observed word it left, does the same.
  @Test func anObservedClosureWriteEndsInOneStepAndPublishes() {
    let box = ThreadSafeSingleWriter(value: 0)
    let stream = box.changes()
    for value in 1...2 {
      #expect(box.lock.tryBeginClosureWrite())
      box.storage.pointee = value
      #expect(box.lock.tryEndClosureWrite() == .endedDirty)
      box.hub.publish()
    }
    #expect(box.isObserved)
    #expect(box.lock.word == WriterWord(raw: WriterWord.observed))
    withExtendedLifetime(stream) {}
  }
}

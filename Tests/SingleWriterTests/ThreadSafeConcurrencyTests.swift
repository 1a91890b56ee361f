import Dispatch
import Foundation
import Testing

@testable import SingleWriter

/// The async entries: `await write`, `writeUnlessCancelled`, `checkout()` and `changes()`.
@Suite struct ThreadSafeSingleWriterConcurrencyTests {
  // MARK: An await never blocks, FIFO (Promises.md): await write and checkout()

  @Test func asyncWriteMutatesInPlaceAndReturns() async throws {
    let box = ThreadSafeSingleWriter(value: 41)
    let result = await box.write { value -> Int in
      value += 1
      return value
    }
    #expect(result == 42)
    #expect(box.writer != nil)
  }

  @Test func asyncWriteTakesItsFIFOPlaceAmongQueuedWrites() async throws {
    let box = ThreadSafeSingleWriter(value: [String]())
    let held = Locked(box.writer)
    box.writeNext { $0.write.append("first") }
    let task = Task { await box.write { $0.append("async") } }
    await waitUntil { box.pendingCount == 2 }
    box.writeNext { $0.write.append("last") }
    held.withLock { $0 = nil }
    await task.value
    await waitUntil { box.writer != nil }
    #expect(box.read == ["first", "async", "last"])
  }

  @Test func asyncCheckoutWaitsForTheWriter() async throws {
    let box = ThreadSafeSingleWriter(value: 0)
    let held = Locked(box.writer)
    let task = Task { () async throws -> Int in
      let proxy = try await box.checkout()
      proxy.write += 10
      #expect(box.writer == nil)
      return proxy.write
    }
    await waitUntil { box.pendingCount == 1 }
    held.withLock { $0?.write = 5 }
    held.withLock { $0 = nil }
    #expect(try await task.value == 15)
    await waitUntil { box.writer != nil }
  }
}

extension ThreadSafeSingleWriterTests {
  // MARK: An await never blocks, FIFO, A checkout is handed over (Promises.md)

  @Test func waitsOfEveryKindMixedOnTheCooperativePoolNeverDeadlock() async {
    // An `await write` queued behind a held writer, then `withWriter` from as many tasks
    // as the pool has threads, then the release: the queue must not hand the writer to
    // the suspended task, which would need a pool thread that every `withWriter` blocks.
    await #expect(processExitsWith: .success) {
      attackWatchdog(20, "waits of every kind on the pool")
      let box = ThreadSafeSingleWriter(value: 0)
      let threads = ProcessInfo.processInfo.activeProcessorCount
      for round in 0..<20 {
        let held = Locked(box.writer)
        let queued = Task { await box.write { $0 += 1 } }
        let checkout = Task { () -> Int in
          let proxy = try await box.checkout()
          proxy.write += 1
          return proxy.write
        }
        await waitUntil { box.pendingCount >= 2 || round % 2 == 1 }
        let blocked = (0..<threads).map { _ in Task { box.withWriter { $0 += 1 } } }
        usleep(10_000)  // let them block
        held.withLock { $0 = nil }
        for task in blocked { await task.value }
        await queued.value
        _ = try await checkout.value
      }
      precondition(box.read == 20 * (threads + 2))
    }
  }

  @Test func asyncWritesFromManyTasksAreExactAndInFIFOOrderPerTask() async throws {
    let box = ThreadSafeSingleWriter(value: [Int: [Int]]())
    try await withThrowingTaskGroup(of: Void.self) { group in
      for task in 0..<8 {
        group.addTask {
          for index in 0..<2_000 { await box.write { $0[task, default: []].append(index) } }
        }
      }
      try await group.waitForAll()
    }
    let result = box.read
    for task in 0..<8 { #expect(result[task] == Array(0..<2_000)) }
  }

  @Test func aCheckoutAtItsTurnIsHandedTheWriterAheadOfTheWritesQueuedAfterIt() async throws {
    let box = ThreadSafeSingleWriter(value: [String]())
    let held = Locked(box.writer)
    let checkout = Task { () -> Void in
      let proxy = try await box.checkout()
      proxy.write.append("checkout")
    }
    await waitUntil { box.pendingCount == 1 }
    box.writeNext { $0.write.append("after") }
    held.withLock { $0 = nil }
    try await checkout.value
    await waitUntil { box.writer != nil }
    #expect(box.read.count == 2)
    #expect(Set(box.read) == ["checkout", "after"])
  }

  /// The release that reaches a `checkout()` hands it the writer and returns at once,
  /// though the task cannot run: its executor runs nothing until the test says so. The
  /// write queued after the checkout waits for the task's release, then runs there.
  @Test func aReleaseHandsACheckoutOverWithoutWaitingForItsTaskToRun() async throws {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
    let box = ThreadSafeSingleWriter(value: [String]())
    let held = Locked(box.writer)
    let executor = ScheduleExecutor()
    let finished = Locked(false)
    let task = Task(executorPreference: executor) {
      let proxy = try await box.checkout()
      proxy.write.append("checkout")
      finished.withLock { $0 = true }
    }
    // Runs the task up to its suspension in the queue, then stops running it.
    await runOnThread(stackSize: 1 << 20) { executor.run { box.pendingCount == 1 } }
    box.writeNext { $0.write.append("after") }
    held.withLock { $0 = nil }  // returns: it never waits for the task
    #expect(box.read.isEmpty)
    #expect(box.queuedWrites == 1)
    #expect(box.writer == nil)  // the task holds it, asleep
    await runOnThread(stackSize: 1 << 20) { executor.run { finished.withLock { $0 } } }
    try await task.value
    await waitUntil { box.writer != nil }
    #expect(box.read == ["checkout", "after"])
  }
}

extension ThreadSafeSingleWriterHostileTests {
  // MARK: A checkout is handed over (Promises.md): queued async bodies, a stream of writeNext

  @Test func writeNextInsideAQueuedAsyncBodyRunsAfterIt() async throws {
    let box = ThreadSafeSingleWriter(value: [Int]())
    let held = Locked(box.writer)
    let task = Task {
      await box.write { v in
        box.writeNext { $0.write.append(2) }
        v.append(1)
      }
    }
    await waitUntil { box.pendingCount >= 1 }
    box.writeNext { $0.write.append(3) }  // queued before the nested one
    held.withLock { $0 = nil }
    await task.value
    #expect(box.read == [1, 3, 2])
    #expect(box.writer != nil)
  }

  @Test func throwingQueuedAsyncBodiesRethrowAndLeaveTheContainerUsable() async throws {
    struct Boom: Error {}
    let box = ThreadSafeSingleWriter(value: 0)
    for _ in 0..<200 {
      let held = Locked(box.writer)
      let tasks = (0..<6).map { i in
        Task { () -> Result<Int, any Error> in
          do {
            return .success(
              try await box.write { v -> Int in
                if i % 2 == 0 { throw Boom() }
                v += 1
                return v
              })
          } catch { return .failure(error) }
        }
      }
      await waitUntil { box.pendingCount >= 6 }
      held.withLock { $0 = nil }
      for (i, task) in tasks.enumerated() {
        switch await task.value {
        case .success: #expect(i % 2 == 1)
        case .failure(let error): #expect(i % 2 == 0 && error is Boom, "\(error)")
        }
      }
    }
    #expect(box.read == 600)
    #expect(box.writer != nil)
  }

  /// The producers go on until the checkout has the writer; a watchdog's 120 s stops them
  /// whatever happens, so that a starved checkout fails the test instead of hanging it.
  /// They keep the backlog a few hundred deep, enough that the serving thread never runs
  /// dry, without burning the cores that the checkout's task and other tests need: a
  /// stream at full speed kept the cooperative pool starved for a minute under
  /// ThreadSanitizer, which kept the checkout waiting, which kept the stream going.
  @Test(arguments: [2, 4])
  func aCheckoutIsNotStarvedByAStreamOfQueuedWrites(producers: Int) async throws {
    let box = ThreadSafeSingleWriter(value: 0)
    let queued = Counter()
    let stream = Repeating(threads: producers, seconds: 120) {
      if box.queuedWrites >= 256 {
        usleep(50)
        return
      }
      box.writeNext { proxy in
        attackSpin(2_000)
        proxy.write += 1
      }
      queued.add(1)
    }
    await waitUntil { queued.load() >= 100 }  // the stream is going
    let waited = Task { () -> Bool in
      let proxy = try await box.checkout()
      // Whether the stream was still going when this task got the writer.
      let stoppedFirst = stream.isStopped
      proxy.write += 1_000_000
      return stoppedFirst
    }
    let stoppedFirst = try await waited.value
    stream.stop()
    #expect(!stoppedFirst, "checkout only got the writer after the producers stopped")
  }
}

extension ThreadSafeSingleWriterConcurrencyTests {
  // MARK: Newest, not a backlog, Streams end (Promises.md): changes()

  @Test func aFastConsumerSeesEveryReleaseInOrder() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let seen = Locked([Int]())
    let consumer = Task {
      for await value in box.changes() {
        seen.withLock { $0.append(value) }
        if value == 4 { break }
      }
    }
    await waitUntil { seen.withLock { $0 } == [0] }
    _ = box.tryWrite { $0 = 1 }
    await waitUntil { seen.withLock { $0.count } == 2 }
    box.writer!.write = 2  // a checkout through a proxy, released at once
    await waitUntil { seen.withLock { $0.count } == 3 }
    box.writeNext { $0.write = 3 }
    await waitUntil { seen.withLock { $0.count } == 4 }
    await box.write { $0 = 4 }
    await consumer.value
    #expect(seen.withLock { $0 } == [0, 1, 2, 3, 4])
  }

  @Test func aSlowConsumerGetsTheNewestValue() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let stream = box.changes()
    for value in 1...100 { _ = box.tryWrite { $0 = value } }
    var iterator = stream.makeAsyncIterator()
    #expect(await iterator.next() == 100)
  }

  @Test func aConsumerCanWriteBack() async throws {
    let box = ThreadSafeSingleWriter(value: 0)
    let consumer = Task {
      for await value in box.changes() {
        if value >= 3 { break }
        await box.write { $0 += 1 }
      }
    }
    await consumer.value
    #expect(box.read == 3)
  }

  @Test func anAbandonedStreamUnsubscribes() async {
    let box = ThreadSafeSingleWriter(value: 0)
    do {
      let stream = box.changes()
      #expect(box.subscriberCount == 1)
      _ = stream
    }
    await waitUntil { box.subscriberCount == 0 }
    #expect(box.subscriberCount == 0)
  }

  @Test func theStreamEndsWhenTheContainerIsFreed() async {
    weak var weakBox: ThreadSafeSingleWriter<Int>?
    var stream: ThreadSafeSingleWriter<Int>.Changes<Int>?
    do {
      let box = ThreadSafeSingleWriter(value: 7)
      weakBox = box
      stream = box.changes()
    }
    #expect(weakBox == nil, "a stream does not keep its container alive")
    var values: [Int] = []
    for await value in stream! { values.append(value) }
    #expect(values.isEmpty, "an iterator made after the container is gone ends at once")
  }
}
